"""Correctness of a task under one cell: zlh's output gate against the first cell (same seed,
same inputs: the function under test's outputs must agree within the per-dtype tolerance), plus
the library's own accuracy tests for the workload's selection, run with pytest in a subprocess
under the cell's environment (measurement never uses pytest; a correctness check may).

Statuses: PASS, FAIL, SKIP (nothing was checked), TIMEOUT, ERROR (the check could not run).
Combined: FAIL when either part fails; else the first non-PASS part; else PASS.

    tasks/<task>/correctness/<cell>/pytest.log, correctness-receipt.json
"""
from __future__ import annotations

import re
from pathlib import Path

from ..ab.pairing import output_mismatches, row_key
from ..common.errors import UsageError
from ..launch import launcher
from ..store.reader import load_run
from .cells import CampaignContext, cell_lane
from .inventory import corpus_adapter
from .manifest import Cell
from .receipts import relative, sha256_or_none, write_receipt

PASS, FAIL, SKIP, TIMEOUT, ERROR = "PASS", "FAIL", "SKIP", "TIMEOUT", "ERROR"
ORDER = (FAIL, TIMEOUT, ERROR, SKIP)
_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def check_cell(ctx: CampaignContext, task: dict, cell: Cell, cells_a: dict) -> dict:
    out = ctx.root / "tasks" / task["task_id"] / "correctness" / cell.name
    out.mkdir(parents=True, exist_ok=True)
    baseline = ctx.manifest.protocol.baseline
    gate = None if cell.name == baseline.name else output_gate(
        ctx.root, cells_a[baseline.name], cells_a[cell.name])
    tests = accuracy_tests(ctx, task, cell, out) if task.get("correctness") else None
    parts = [p for p in (gate, tests) if p is not None]
    status = next((s for s in ORDER if any(p["status"] == s for p in parts)), PASS)
    receipt = {"kind": "correctness", "campaign_id": ctx.manifest.campaign_id,
               "task_id": task["task_id"], "cell": cell.name, "role": cell.role,
               "status": status, "reason": _reason(gate, tests, status),
               "output_gate": gate, "accuracy_tests": tests,
               "note": "" if parts else "nothing to check: the first cell is the output "
                                        "gate's reference and the workload names no tests"}
    write_receipt(out / "correctness-receipt.json", receipt)
    return receipt


def _reason(gate: dict | None, tests: dict | None, status: str) -> str:
    """Why a cell's correctness is not PASS, in a few words."""
    why = []
    if gate is not None and gate["status"] != PASS:
        shown = f"{len(gate['mismatches'])} output mismatch(es)" if gate["mismatches"] else \
            gate["reason"]
        why.append(f"output gate {gate['status']} ({shown})")
    if tests is not None and tests["status"] != PASS:
        counts = ", ".join(f"{n} {w}" for w, n in tests["counts"].items()) or "no summary"
        why.append(f"accuracy tests {tests['status']} (rc={tests['rc']}, {counts})")
    return "; ".join(why) if status != PASS else ""


def output_gate(root: Path, reference: dict, cell: dict) -> dict:
    """The cell's outputs against the first cell's, case by case."""
    runs = []
    for receipt in (reference, cell):
        if not receipt.get("run_dir"):
            return {"status": ERROR, "compared": 0, "mismatches": [],
                    "reason": f"cell {receipt.get('cell')} has no run directory "
                              f"({receipt.get('status')})"}
        try:
            runs.append(load_run(root / receipt["run_dir"]))
        except UsageError as exc:
            return {"status": ERROR, "compared": 0, "mismatches": [], "reason": exc.message}
    ref, run = runs
    outputs = {row_key(r) for r in ref.rows if "output" in r.extra}
    compared = sum(1 for r in run.rows if "output" in r.extra and row_key(r) in outputs)
    mismatches = output_mismatches([(ref, run)])
    status = FAIL if mismatches else PASS if compared else SKIP
    return {"status": status, "compared": compared, "mismatches": mismatches,
            "reason": "" if compared else "no case with an output digest on both cells"}


def pytest_command(ctx: CampaignContext, task: dict) -> list[str]:
    spec, library = task["correctness"], ctx.manifest.sources["library"]
    targets = list(spec.get("node_ids") or [spec["file"]])
    command = [ctx.python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               f"--rootdir={library.path}", f"--confcutdir={library.path}", *targets]
    if spec.get("k"):
        command += ["-k", spec["k"]]
    return command + list(spec.get("pytest_args") or ())


def accuracy_tests(ctx: CampaignContext, task: dict, cell: Cell, out: Path) -> dict:
    library = ctx.manifest.sources["library"]
    lane = cell_lane(ctx.manifest, cell, ctx.python)
    env = dict(lane.env)
    env["PYTHONPATH"] = f"{library.import_from}:{env.get('PYTHONPATH', '')}".rstrip(":")
    env["TRITON_CACHE_DIR"] = str(out / "triton-cache")
    for key, value in corpus_adapter(ctx.manifest).tuner_cache(out, True, env).env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    command = pytest_command(ctx, task)
    log = out / "pytest.log"
    rc, elapsed = _run(command, env, library.path, log, float(task["timeout_s"]))
    text = log.read_text(encoding="utf-8", errors="replace")
    counts = {}
    last = text.strip().splitlines()[-1] if text.strip() else ""
    for number, word in _COUNTS.findall(last):
        counts[word.rstrip("s") if word.startswith("error") else word] = int(number)
    return {"status": _status(rc, counts), "rc": rc, "counts": counts,
            "elapsed_s": round(elapsed, 3), "command": command,
            "pytest_args": list(task["correctness"].get("pytest_args") or ()),
            "log": relative(log, ctx.root), "log_sha256": sha256_or_none(log)}


def _status(rc: int, counts: dict) -> str:
    if rc == launcher.TIMEOUT_RC:
        return TIMEOUT
    if rc == 1 and (counts.get("failed") or counts.get("error")):
        return FAIL
    if rc == 0:
        return PASS if counts.get("passed") or counts.get("xfailed") else SKIP
    return ERROR          # 1 without failures, 2 interrupted, 3 internal, 4 usage, 5 no tests


def _run(command: list[str], env: dict, cwd: str, log: Path, timeout_s: float
         ) -> tuple[int, float]:
    # pytest is no zlh command: a `zlh` that a library test starts must not take
    # ZLH_PARENT_PID for its own, so the environment stays as it is.
    ended = launcher.run(command, env, log, timeout_s, cwd=cwd, end_with_parent=False)
    return ended.rc, ended.elapsed_s
