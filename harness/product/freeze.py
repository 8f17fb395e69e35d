"""The frozen plan: `<out>/<campaign_id>--<selection>/`, built in a staging directory beside
it and renamed into place, so it either exists whole or not at all, and never twice.

    manifest.json     the manifest, byte for byte
    manifest.sha256   its sha256 (`<hex>  manifest.json`)
    task-matrix.json  the tasks in run order, resolved op names, timeouts (canonical JSON)
    budget.json       processes and the time bound (canonical JSON)
    ops.txt           one `op:op_file:dtypes` per task (the ops-file of batch and screen;
                      `op_file[call]` for a workload that measures one parametrized call)
    shapes.yaml       the protocol's shape file, when it names one

`--selection all` is frozen only on the authority of a canary receipt: the campaign receipt of
a terminal canary run of this very manifest (same campaign_id, same manifest sha256) whose
gate passed; its sha256 goes into the task matrix.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from ..common.documents import loads_json
from ..common.errors import PreflightError, UsageError
from ..common.files import read_text
from ..common.schema import check_readable, stamp
from .manifest import SELECTIONS, Manifest, ManifestError
from .receipts import SCHEMA_VERSION, TERMINAL, canonical, read_json, sha256_file
from .validate import load_manifest

MANIFEST, MANIFEST_SHA, MATRIX, BUDGET, OPS, SHAPES = (
    "manifest.json", "manifest.sha256", "task-matrix.json", "budget.json", "ops.txt",
    "shapes.yaml")


def frozen_name(manifest: Manifest, selection: str) -> str:
    return f"{manifest.campaign_id}--{selection}"


def canary_problems(manifest: Manifest, receipt: dict) -> list[str]:
    """Why this receipt does not authorise the full campaign ([] when it does)."""
    problems = []
    expect = (("schema_version", SCHEMA_VERSION), ("kind", "campaign"),
              ("campaign_id", manifest.campaign_id), ("selection", "canary"),
              ("status", TERMINAL), ("manifest_sha256", manifest.sha256))
    for key, wanted in expect:
        if receipt.get(key) != wanted:
            problems.append(f"{key} is {receipt.get(key)!r}, must be {wanted!r}")
    gate = receipt.get("canary_gate")
    if not isinstance(gate, dict) or gate.get("pass") is not True:
        why = "; ".join(gate.get("failures") or ()) if isinstance(gate, dict) else "no gate"
        problems.append(f"the canary gate did not pass ({why or 'no reason recorded'})")
    return problems


def check_canary_receipt(manifest: Manifest, selection: str, path: str | None) -> str | None:
    """The sha256 of the authorising receipt (None for the canary selection); each rule the
    receipt breaks is a line of the ManifestError (exit 2)."""
    if selection == "canary":
        if path:
            raise UsageError("--canary-receipt is for --selection all only")
        return None
    if not path:
        raise UsageError("--selection all needs --canary-receipt R: the campaign receipt of "
                         "a terminal canary run of this manifest whose gate passed")
    try:
        receipt = loads_json(read_text(path))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--canary-receipt {path}: cannot be read ({exc})") from None
    if not isinstance(receipt, dict):
        raise UsageError(f"--canary-receipt {path}: not a JSON object")
    check_readable(receipt, f"--canary-receipt {path}")
    problems = canary_problems(manifest, receipt)
    if problems:
        raise ManifestError(f"--canary-receipt {path}", problems)
    return sha256_file(path)


def build_plan(manifest: Manifest, selection: str, resolved: dict[str, str],
               canary_sha: str | None = None, shapes: Path | None = None
               ) -> tuple[dict, dict]:
    """(task matrix, budget) for one selection; `shapes`: the copy of the protocol's shape
    file to hash (default: the file the manifest names)."""
    p = manifest.protocol
    tasks = []
    for ordinal, w in enumerate(manifest.selected(selection), 1):
        spec = w.correctness
        tasks.append({
            "ordinal": ordinal, "task_id": w.id, "op": w.op, "op_file": w.op_file,
            "op_name": resolved.get(w.id, w.op_name), "family": w.family, "cost": w.cost,
            "canary": w.canary, "dtypes": list(w.dtypes or p.dtypes),
            "timeout_s": p.timeouts_s[w.cost],
            "correctness": None if spec is None else {
                "file": spec.file, "k": spec.k,
                "node_ids": list(spec.node_ids) if spec.node_ids else None,
                "reason": spec.reason,
                # only when given: a plan frozen before these fields existed still matches
                **({"pytest_args": list(spec.pytest_args)} if spec.pytest_args else {})},
            "inventory_override_reason": w.inventory_override_reason,
            **({"benchmark": w.benchmark, "benchmark_scope_reason": w.benchmark_scope_reason}
               if w.benchmark else {})})
    head = stamp({"schema_version": SCHEMA_VERSION, "campaign_id": manifest.campaign_id,
                  "selection": selection, "manifest_sha256": manifest.sha256})
    matrix = {**head, "kind": "task-matrix", "canary_receipt_sha256": canary_sha,
              "adapter": p.adapter, "device": vars(manifest.device),
              "cells": [{"name": c.name, "role": c.role, "env": c.env} for c in p.cells],
              "timed_cells": list(p.timed_cells), "code_change": p.code_change,
              "measured_launch_floor": p.measured_launch_floor,
              "shapes_sha256": sha256_file(shapes or p.shapes) if p.shapes else None,
              "tasks": tasks}
    return matrix, _budget(manifest, head, tasks)


def _budget(manifest: Manifest, head: dict, tasks: list[dict]) -> dict:
    """Processes each task may start and the time bound they imply (timeouts, not guesses)."""
    cells, timed = len(manifest.protocol.cells), len(manifest.protocol.timed_cells)
    processes = bound = 0
    for task in tasks:
        tests = cells if task["correctness"] else 0
        n = cells + timed + tests
        processes += n
        bound += n * task["timeout_s"]
    return {**head, "kind": "budget", "task_count": len(tasks), "devices": 1,
            "serial_measurement": True, "processes_max": processes, "bound_s": bound,
            "bound_h": round(bound / 3600.0, 3),
            "per_cost": {c: sum(1 for t in tasks if t["cost"] == c)
                         for c in manifest.protocol.timeouts_s},
            "note": "an upper bound from the timeouts: a schedule, not a measurement"}


def freeze_plan(manifest: Manifest, selection: str, out: Path, matrix: dict, budget: dict
                ) -> Path:
    """Write the frozen plan into a staging directory and rename it into place; an existing
    target is refused (a frozen plan is never rewritten)."""
    out = Path(out).resolve()
    target = out / frozen_name(manifest, selection)
    if target.exists():
        raise UsageError(f"{target} exists: a frozen plan is never rewritten (use another "
                         f"--out or campaign_id)")
    out.mkdir(parents=True, exist_ok=True)
    stage = out / f".{target.name}.staging-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    try:
        stage.mkdir()
        shutil.copyfile(manifest.path, stage / MANIFEST)
        if sha256_file(stage / MANIFEST) != manifest.sha256:
            raise UsageError(f"{manifest.path} changed while it was being frozen")
        (stage / MANIFEST_SHA).write_text(f"{manifest.sha256}  {MANIFEST}\n", encoding="utf-8")
        (stage / MATRIX).write_text(canonical(matrix), encoding="utf-8")
        (stage / BUDGET).write_text(canonical(budget), encoding="utf-8")
        (stage / OPS).write_text(ops_text(matrix), encoding="utf-8")
        if manifest.protocol.shapes:
            shutil.copyfile(manifest.protocol.shapes, stage / SHAPES)
        os.rename(stage, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return target


def ops_text(matrix: dict) -> str:
    """One `op:op_file:dtypes` line per task; a workload measuring one parametrized call
    names it after the op's name (`op:op_file[call]:dtypes`, `op[call]::dtypes`)."""
    lines = []
    for t in matrix["tasks"]:
        call = f"[{t['benchmark']}]" if t.get("benchmark") else ""
        name = f"{t['op']}:{t['op_file']}{call}" if t["op_file"] else f"{t['op']}{call}:"
        lines.append(f"{name}:{','.join(t['dtypes'])}\n")
    return "".join(lines)


def plan_text(matrix: dict, budget: dict) -> str:
    rows = [(t["ordinal"], t["task_id"], t["op_name"], t["family"], t["cost"],
             f"{t['timeout_s']:g}", ",".join(t["dtypes"]), "yes" if t["canary"] else "",
             "tests" if t["correctness"] else "output gate")
            for t in matrix["tasks"]]
    table = tabulate(rows, headers=("#", "task", "op", "family", "cost", "timeout s", "dtypes",
                                    "canary", "correctness"))
    cells = ", ".join(f"{c['name']} ({c['role']})" for c in matrix["cells"])
    return (f"campaign {matrix['campaign_id']} --{matrix['selection']}: {budget['task_count']} "
            f"task(s); cells {cells}; timed {', '.join(matrix['timed_cells'])}; code change by "
            f"{matrix['code_change']}\n{table}\nbudget: at most {budget['processes_max']} "
            f"processes, bound {budget['bound_s']:g} s ({budget['bound_h']:g} h) on one "
            f"device, serial")


@dataclass
class Frozen:
    path: Path
    manifest: Manifest
    matrix: dict
    budget: dict


def load_frozen(path: str | Path) -> Frozen:
    """A frozen plan as written by `zlh product prepare` (its hashes are the contract's)."""
    path = Path(path).resolve()
    missing = [n for n in (MANIFEST, MANIFEST_SHA, MATRIX, BUDGET) if not (path / n).is_file()]
    if missing:
        raise UsageError(f"{path} is not a frozen campaign plan (missing {', '.join(missing)}; "
                         f"make one with zlh product prepare)")
    # the manifest's bytes against its recorded hash first: an edited manifest is the same
    # contract failure whether or not the edit left it readable
    recorded = read_text(path / MANIFEST_SHA, errors="replace").split()
    sha = sha256_file(path / MANIFEST)
    if not recorded or recorded[0] != sha:
        raise PreflightError("frozen_hash", f"{path / MANIFEST_SHA} names manifest sha256 "
                             f"{recorded[0] if recorded else None}, {MANIFEST} hashes to {sha}")
    manifest = load_manifest(path / MANIFEST)
    matrix, budget = read_json(path / MATRIX, "task matrix"), read_json(path / BUDGET, "budget")
    if not isinstance(matrix.get("tasks"), list):
        raise UsageError(f"{path / MATRIX}: no task list")
    return Frozen(path, manifest, matrix, budget)


def plan_difference(frozen: Frozen) -> str | None:
    """Where the frozen task matrix or budget differs from the plan its manifest gives (an
    edited task, timeout, cell or count), or None when both are what prepare wrote."""
    m = frozen.matrix
    if m.get("selection") not in SELECTIONS:
        return f"{MATRIX}: selection {m.get('selection')!r} is not one of {', '.join(SELECTIONS)}"
    resolved = {t.get("task_id"): t.get("op_name") for t in m["tasks"] if isinstance(t, dict)}
    shapes = frozen.path / SHAPES if frozen.manifest.protocol.shapes else None
    matrix, budget = build_plan(frozen.manifest, m["selection"], resolved,
                                m.get("canary_receipt_sha256"), shapes)
    for name, have, want in ((MATRIX, m, matrix), (BUDGET, frozen.budget, budget)):
        where = first_difference({k: v for k, v in have.items() if k != "zlh_version"},
                                 {k: v for k, v in want.items() if k != "zlh_version"})
        if where is not None:
            return f"{name}: {where}"
    return None


def first_difference(have, want, where: str = "") -> str | None:
    """The first path at which two JSON values differ, with both values."""
    if isinstance(have, dict) and isinstance(want, dict):
        for key in sorted(set(have) | set(want), key=str):
            found = first_difference(have.get(key, "<missing>"), want.get(key, "<missing>"),
                                     f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(have, list) and isinstance(want, list):
        if len(have) != len(want):
            return f"{where} has {len(have)} entries, the manifest gives {len(want)}"
        for i, (a, b) in enumerate(zip(have, want)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    if have != want or type(have) is not type(want):
        return f"{where or 'the document'} is {_short(have)}, the manifest gives {_short(want)}"
    return None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
