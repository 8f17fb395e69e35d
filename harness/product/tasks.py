"""One task, top to bottom:

1. round a: the cells in manifest order; the first (baseline) records autotune configs, every
   other cell replays that record (a cell is not started when the baseline left nothing to
   replay);
2. correctness under the candidate; when it is not PASS, under every other cell too;
3. round a's delta, baseline vs candidate (the A/B report: median over shapes);
4. round b, only when round a is clean and the candidate changed code: the timed cells in the
   reverse of their round-a order, each replaying round a's record;
5. the class (classes.py) and the task receipt, which hashes every receipt it read.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..ab.compare import compare_runs
from ..common.errors import UsageError
from ..store.reader import load_run
from .cells import CELL_RECEIPT, CampaignContext, not_run, run_cell
from .classes import PASS, CellFacts, Evidence, Rules, classify
from .correctness import check_cell
from .receipts import relative, sha256_file, write_receipt

TASK_RECEIPT = "task-receipt.json"
ROUND_B_NEEDED = "round_b_missing"


def run_task(ctx: CampaignContext, task: dict) -> dict:
    p = ctx.manifest.protocol
    rules = Rules.from_protocol(p)
    cells_a = _round_a(ctx, task)
    record = _record(ctx, cells_a[p.baseline.name])
    checks = {p.candidate.name: check_cell(ctx, task, p.candidate, cells_a)}
    if checks[p.candidate.name]["status"] != PASS:
        for cell in p.cells:
            if cell.name not in checks:
                checks[cell.name] = check_cell(ctx, task, cell, cells_a)
    rounds = {"a": round_delta(ctx.root, cells_a[p.baseline.name], cells_a[p.candidate.name])}
    evidence = Evidence({c: r["status"] for c, r in checks.items()},
                        {c: CellFacts.from_receipt(r) for c, r in cells_a.items()},
                        delta_a=rounds["a"]["delta_median_pct"],
                        correctness_reasons={c: r["reason"] for c, r in checks.items()})
    decision = classify(evidence, rules)
    cells_b: dict = {}
    if decision.code == ROUND_B_NEEDED:
        order = [c for c in p.cells if c.name in p.timed_cells]
        for cell in reversed(order):
            cells_b[cell.name] = run_cell(ctx, task, cell, "b", record)
        rounds["b"] = round_delta(ctx.root, cells_b[p.baseline.name], cells_b[p.candidate.name])
        evidence.round_b = {c: CellFacts.from_receipt(r) for c, r in cells_b.items()}
        evidence.delta_b = rounds["b"]["delta_median_pct"]
        decision = classify(evidence, rules)
    receipt = task_receipt(ctx, task, rules, decision, checks, cells_a, cells_b, rounds)
    write_receipt(ctx.root / "tasks" / task["task_id"] / TASK_RECEIPT, receipt)
    return receipt


def _round_a(ctx: CampaignContext, task: dict) -> dict:
    cells = ctx.manifest.protocol.cells
    out = {cells[0].name: run_cell(ctx, task, cells[0], "a", None)}
    record = _record(ctx, out[cells[0].name])
    for cell in cells[1:]:
        out[cell.name] = run_cell(ctx, task, cell, "a", record) if record else not_run(
            ctx, task, cell, "a", f"the baseline cell {cells[0].name} left nothing to replay "
                                  f"({out[cells[0].name]['status']})")
    return out


def _record(ctx: CampaignContext, baseline: dict) -> Path | None:
    """The baseline's run directory when it measured something to replay."""
    if baseline.get("run_dir") and baseline.get("rows_success"):
        return ctx.root / baseline["run_dir"]
    return None


def round_delta(root: Path, baseline: dict, candidate: dict) -> dict:
    """Baseline vs candidate through the A/B report: median delta over the paired shapes
    (positive = the candidate is faster), its range, geometric-mean speedup, counts."""
    empty = {"delta_median_pct": None, "delta_min_pct": None, "delta_max_pct": None,
             "geomean_speedup": None, "paired": 0, "faster": 0, "slower": 0, "unchanged": 0}
    if not baseline.get("run_dir") or not candidate.get("run_dir"):
        return empty
    try:
        report = compare_runs([(load_run(root / baseline["run_dir"]),
                                load_run(root / candidate["run_dir"]))])
    except UsageError:
        return empty
    s = report.summary
    out = {k: _finite(s.get(k)) for k in ("delta_median_pct", "delta_min_pct", "delta_max_pct",
                                          "geomean_speedup")}
    out.update(paired=len(report.rows), faster=s.get("faster", 0), slower=s.get("slower", 0),
               unchanged=s.get("unchanged", 0))
    if not report.rows:
        out["delta_median_pct"] = None
    return out


def _finite(value):
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def task_receipt(ctx: CampaignContext, task: dict, rules: Rules, decision, checks: dict,
                 cells_a: dict, cells_b: dict, rounds: dict) -> dict:
    root, tid = ctx.root, task["task_id"]
    paths = {f"{rnd}/{c}": ctx.cell_dir(tid, rnd, c) / CELL_RECEIPT
             for rnd, cells in (("a", cells_a), ("b", cells_b)) for c in cells}
    paths.update({f"correctness/{c}": root / "tasks" / tid / "correctness" / c /
                  "correctness-receipt.json" for c in checks})
    return {
        "kind": "task", "campaign_id": ctx.manifest.campaign_id, "task_id": tid,
        "op": task["op"], "op_file": task["op_file"], "op_name": task["op_name"],
        "family": task["family"], "cost": task["cost"], "canary": task["canary"],
        "class": decision.cls, "rule": decision.code, "reason": decision.reason,
        "rules": rules.to_dict(),
        "correctness": {c: r["status"] for c, r in checks.items()},
        "correctness_reasons": {c: r["reason"] for c, r in checks.items()},
        "cells": {rnd: {c: _cell_summary(r) for c, r in cells.items()}
                  for rnd, cells in (("a", cells_a), ("b", cells_b)) if cells},
        "rounds": rounds,
        "receipts": {key: relative(path, root) for key, path in paths.items()},
        "produced_by": {relative(path, root): sha256_file(path) for path in paths.values()},
    }


def _cell_summary(receipt: dict) -> dict:
    scope = receipt.get("ir_scope") or {}
    return {"status": receipt["status"], "median_gems_ms": receipt.get("median_gems_ms"),
            "replay_fallbacks": receipt.get("replay_fallbacks", 0),
            "convert_count": scope.get("convert_count"),
            "convert_count_all": scope.get("convert_count_all"),
            "fingerprint": scope.get("fingerprint"), "scope_complete": scope.get("complete")}
