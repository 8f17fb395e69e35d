"""Pre-registered product campaigns (`zlh product prepare | run | reaccount`): a fixed list of
workloads run under a protocol frozen in advance, on one device, every claim backed by a
receipt that hashes what produced it. Not the rounds over GPUs of `zlh campaign`
(harness/corpus/campaign.py): those follow a screen; this follows a manifest written first.

    receipts.py    canonical JSON, sha256, zlh's own files, status.csv, a run root's file names
    manifest.py    the manifest's vocabulary and typed records; the Checker collecting violations
    validate_protocol.py  the protocol section (cells, timed cells, canaries, gate, ...)
    validate.py    a manifest read: strict JSON, every field checked, then typed
    inventory.py   every workload against the corpus (present, not skip-marked, dtypes, tests)
    freeze.py      the frozen plan (task matrix, budget; renamed into place whole) and the
                   canary receipt that authorises the full selection
    cells.py       one cell: its environment, a fresh `zlh bench` process, its IR scope, its
                   receipt
    correctness.py the output gate against the first cell, the library's own accuracy tests
    classes.py     G / C / B / R / K / X, decided in a fixed order from a task's evidence; the
                   canary gate
    tasks.py       one task: round a, correctness, round b, its class and task receipt
    contract.py    what must hold before anything runs (hashes, commits, imports, device)
    probe.py       the child process the contract starts: what an interpreter imports and which
                   devices it sees (`python -m harness.product.probe`; imported by no module)
    reaccount.py   a sealed run classified again from its verified receipts (another floor)
    runner.py      the campaign: contract, tasks (resumable), status.csv, campaign receipt

Each module imports only modules listed above it.
"""
from __future__ import annotations

from .classes import CellFacts, Decision, Evidence, Rules, classify, evaluate_gate
from .contract import check_contract
from .freeze import (Frozen, build_plan, check_canary_receipt, freeze_plan, frozen_name,
                     load_frozen, plan_text)
from .inventory import corpus_adapter, cross_check
from .manifest import CLASSES, SELECTIONS, Manifest, ManifestError
from .reaccount import reaccount_run
from .receipts import CAMPAIGN_RECEIPT, STATUS_CSV
from .runner import run_campaign
from .validate import load_manifest

__all__ = [
    "CAMPAIGN_RECEIPT", "CLASSES", "SELECTIONS", "STATUS_CSV",
    "CellFacts", "Decision", "Evidence", "Frozen", "Manifest", "ManifestError", "Rules",
    "build_plan", "check_canary_receipt", "check_contract", "classify", "corpus_adapter",
    "cross_check", "evaluate_gate", "freeze_plan", "frozen_name", "load_frozen",
    "load_manifest",
    "plan_text", "reaccount_run", "run_campaign",
]
