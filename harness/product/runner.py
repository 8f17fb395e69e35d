"""`zlh product run FROZEN_DIR`: the contract, then every task serially on the one device,
then the campaign receipt.

    <run root>/contract-receipt.json      what the contract observed (one more per resume)
    <run root>/tasks/<task>/...           cells, correctness, task-receipt.json
    <run root>/status.csv                 task_id, op, family, class, reason (after each task)
    <run root>/campaign-receipt.json      counts per class, TERMINAL, the canary gate, the
                                          claim scope, sha256 of everything that produced it

The run root (default `<FROZEN_DIR>/run`) must not exist unless `--resume`; a resumed run
keeps every task with a terminal receipt and sets the others' partial directories aside
under `.abandoned/` (never deleted) before running them again.
"""
from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from ..common.errors import UsageError
from ..common.files import check_output_dir
from ..common.log import Echo
from ..common.lock import holding, in_use, root_in_use
from .cells import CampaignContext, base_options
from .classes import Rules, evaluate_gate
from .contract import check_contract
from .freeze import BUDGET, MANIFEST, MATRIX, load_frozen
from .manifest import CLASSES
from .reaccount import rederive, task_fields
from .receipts import (CAMPAIGN_RECEIPT, STATUS_CSV, TERMINAL, read_json, sha256_file,
                       write_receipt, write_status_csv, zlh_files)
from .tasks import TASK_RECEIPT, run_task

CONTRACT_RECEIPT = "contract-receipt.json"


def run_campaign(frozen_dir: str | Path, root: str | Path | None = None, resume: bool = False,
                 echo: Echo = print, python: str = sys.executable,
                 progress: Echo | None = None) -> dict:
    """Run a frozen plan; the campaign receipt (its canary gate says the exit status). The
    run root is held for the whole run (common/lock.py): a second run or a resume of it
    meanwhile is one line naming this one."""
    frozen = load_frozen(frozen_dir)
    flag = "--out" if root else "FROZEN_DIR/run"
    root = Path(root).resolve() if root else frozen.path / "run"
    then = (f"then run zlh product run {frozen.path} --resume"
            + (f" --out {root}" if flag == "--out" else ""))
    check_output_dir(root, flag)
    _refuse_held(root, then)
    empty = root.is_dir() and not any(root.iterdir())     # a folder made for it: used as is
    if root.exists() and not resume and not empty:
        raise UsageError(f"{root} exists: continue it with --resume, or give another --out")
    if resume and not (root / CONTRACT_RECEIPT).is_file():
        raise UsageError(f"--resume: {root} holds no campaign run to continue")
    if resume and (root / CAMPAIGN_RECEIPT).is_file():
        raise UsageError(f"--resume: {root} is a sealed run (its {CAMPAIGN_RECEIPT} is "
                         f"written): it is re-read (zlh product reaccount, zlh report), never "
                         f"run again; give another --out for a new run")
    contract = check_contract(frozen, python)
    if not resume:
        try:                     # made here: a run begun meanwhile into the same root loses
            root.mkdir(parents=True, exist_ok=empty)
        except FileExistsError:
            _refuse_held(root, then)
            raise UsageError(f"{root} exists: continue it with --resume, or give another "
                             f"--out") from None
    with holding(root, "product run", then, made=not resume and not empty):
        name = CONTRACT_RECEIPT if not resume else \
            f"contract-receipt.resume-{time.strftime('%Y%m%d-%H%M%S')}.json"
        write_receipt(root / name, contract)
        ctx = CampaignContext(frozen, root, base_options(frozen), python, progress)
        receipts: dict[str, dict] = {}
        for task in frozen.matrix["tasks"]:
            done = terminal_receipt(ctx, task["task_id"], echo) if resume else None
            receipt = done or _fresh_task(ctx, task)
            receipts[task["task_id"]] = receipt
            write_status_csv(root / STATUS_CSV, [status_row(r) for r in receipts.values()])
            echo(task_line(receipt) + (" (kept from before the resume)" if done else ""))
        receipt = campaign_receipt(ctx, receipts)
        write_receipt(root / CAMPAIGN_RECEIPT, receipt)
        return receipt


def _refuse_held(root: Path, then: str) -> None:
    """One line naming the command that holds `root` now, if one does."""
    holder = root_in_use(root) if root.is_dir() else None
    if holder:
        raise UsageError(in_use(root, holder, then))


def _fresh_task(ctx: CampaignContext, task: dict) -> dict:
    task_dir = ctx.root / "tasks" / task["task_id"]
    if task_dir.exists():
        aside = ctx.root / ".abandoned" / f"{task['task_id']}-{time.strftime('%Y%m%d-%H%M%S')}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(task_dir), str(aside))
    return run_task(ctx, task)


def terminal_receipt(ctx: CampaignContext, task_id: str, echo: Echo) -> dict | None:
    """A finished task's receipt, kept by a resume only when it is one zlh wrote for this
    task and its class is what its sealed cell receipts and run directories still give
    (re-derived as `reaccount` does); otherwise None, said on one line: the task runs again."""
    path = ctx.root / "tasks" / task_id / TASK_RECEIPT
    if not path.is_file():
        return None
    try:
        receipt = task_fields(read_json(path), str(path))
        if receipt.get("class") not in CLASSES:
            return None                        # written before the task's end
        if receipt["task_id"] != task_id:
            raise UsageError(f"{path}: the receipt of task {receipt['task_id']}")
        p = ctx.manifest.protocol
        again = rederive(ctx.root, receipt, p.measured_launch_floor, p.scrub,
                         ctx.options.ir_stage)
    except UsageError as exc:
        echo(f"zlh product: {task_id} runs again: {exc}")
        return None
    if again["changed"]:
        echo(f"zlh product: {task_id} runs again: {path} says {receipt['class']}, its evidence "
             f"gives {again['new_class']}")
        return None
    return receipt


def status_row(receipt: dict) -> dict:
    return {"task_id": receipt["task_id"], "op": receipt["op_name"],
            "family": receipt["family"], "class": receipt["class"],
            "reason": receipt["reason"]}


def task_line(receipt: dict) -> str:
    return (f"CAMPAIGN_TASK task={receipt['task_id']} class={receipt['class']} "
            f"reason={receipt['reason']}")


def campaign_receipt(ctx: CampaignContext, receipts: dict[str, dict]) -> dict:
    frozen, manifest = ctx.frozen, ctx.manifest
    classes = {tid: r["class"] for tid, r in receipts.items()}
    selection = frozen.matrix["selection"]
    gate = evaluate_gate(manifest.protocol.gate, manifest.protocol.canary_order, classes) \
        if selection == "canary" else None
    contracts = sorted(p.name for p in ctx.root.glob("contract-receipt*.json"))
    return {
        "kind": "campaign", "campaign_id": manifest.campaign_id, "selection": selection,
        "status": TERMINAL, "manifest_sha256": manifest.sha256, "task_count": len(receipts),
        "counts": {c: sum(1 for v in classes.values() if v == c) for c in CLASSES},
        "classes": classes, "canary_gate": gate,
        "rules": Rules.from_protocol(manifest.protocol).to_dict(),
        "measured_launch_floor": manifest.protocol.measured_launch_floor,
        "ir": {"stage": ctx.options.ir_stage, "scrub": list(manifest.protocol.scrub)},
        "claim_scope": {
            "claim": manifest.claim, "tasks": list(receipts),
            "device": vars(manifest.device),
            "sources": {n: s.commit for n, s in manifest.sources.items() if s},
            "limits": "these workloads, this device and these commits under this protocol; "
                      "nothing about other devices, shapes or builds"},
        "frozen_dir": str(frozen.path), "run_root": str(ctx.root),
        "produced_by": {
            "frozen": {n: sha256_file(frozen.path / n) for n in (MANIFEST, MATRIX, BUDGET)},
            "contract": {n: sha256_file(ctx.root / n) for n in contracts},
            "tasks": {tid: sha256_file(ctx.root / "tasks" / tid / TASK_RECEIPT)
                      for tid in receipts},
            "zlh": zlh_files()},
    }
