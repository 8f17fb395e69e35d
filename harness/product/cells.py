"""One cell of a task: the op under one cell's environment, in a fresh `zlh bench` process
(the batch engine's `run_fresh`: own process group, killed at the cost class's timeout), and
its cell receipt.

    tasks/<task>/<round>/<cell>/cell.log            the command line and its output
    tasks/<task>/<round>/<cell>/<op>_<ts>/          the run directory
    tasks/<task>/<round>/<cell>/cell-receipt.json   status, rc, rows, median latency,
        IR scope (convert counts of measured launches, fingerprint), replay fallbacks,
        the effective env, and the sha256 of the files it was read from
"""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..common import markers
from ..run.options import BenchOptions
from ..store.reader import load_run_or_none
from ..store.results import SUCCESS
from ..corpus.outcome import judge
from ..corpus.supervisor import run_fresh
from .environment import cell_lane, effective_env
from .freeze import SHAPES, Frozen
from .manifest import Cell
from .receipts import relative, sha256_or_none, write_receipt
from .scope import ir_scope

CELL_RECEIPT = "cell-receipt.json"
NOT_RUN = "NOT_RUN"


@dataclass
class CampaignContext:
    """What every cell and correctness run of one campaign run shares."""
    frozen: Frozen
    root: Path
    options: BenchOptions
    python: str = sys.executable
    progress: Callable[[str], None] | None = None      # a line per finished cell

    @property
    def manifest(self):
        return self.frozen.manifest

    def cell_dir(self, task_id: str, rnd: str, cell: str) -> Path:
        return self.root / "tasks" / task_id / rnd / cell


def base_options(frozen: Frozen) -> BenchOptions:
    """Every cell's bench options: the protocol's, with a private tuner cache, IR capture and
    the output check forced; out, replay and dtypes are set per cell."""
    manifest = frozen.manifest
    p, library = manifest.protocol, manifest.sources.get("library")
    return BenchOptions.from_flat(
        adapter=p.adapter, backend=manifest.device.backend, timer=p.timer,
        shapes=str(frozen.path / SHAPES) if p.shapes else None,
        flaggems_dir=library.path if library else None, isolate_tuner_cache=True, ir=True,
        check=True, **p.bench)


def run_cell(ctx: CampaignContext, task: dict, cell: Cell, rnd: str,
             replay: Path | None) -> dict:
    out = ctx.cell_dir(task["task_id"], rnd, cell.name)
    out.mkdir(parents=True, exist_ok=True)
    lane = cell_lane(ctx.manifest, cell, ctx.python)
    options = ctx.options.replace(dtypes=tuple(task["dtypes"]), out=str(out),
                                  replay=str(replay) if replay else None)
    log = out / "cell.log"
    timeout = float(task["timeout_s"])
    attempt = run_fresh(lane, task["op_name"], options.to_argv(), timeout, log, out)
    outcome = judge(attempt, timeout)
    receipt = {"kind": "cell", **_head(ctx, task, cell, rnd),
               "status": outcome.status, "rc": outcome.rc, "reason": outcome.reason,
               "elapsed_s": round(outcome.elapsed_s, 3), "timeout_s": timeout,
               "command": [lane.python, "-m", "harness", "bench", task["op_name"],
                           *options.to_argv()],
               "replay_from": relative(replay, ctx.root),
               "effective_env": effective_env(ctx.manifest, lane),
               **read_cell(ctx, outcome.run_dir, log)}
    write_receipt(out / CELL_RECEIPT, receipt)
    if ctx.progress is not None:
        ctx.progress(f"  {task['task_id']} {rnd}/{cell.name}: {outcome.status} "
                     f"{outcome.elapsed_s:.1f}s rows={receipt['rows_success']}/"
                     f"{receipt['rows_total']}" + (f" ({outcome.reason})" if outcome.reason
                                                   else ""))
    return receipt


def not_run(ctx: CampaignContext, task: dict, cell: Cell, rnd: str, why: str) -> dict:
    """The receipt of a cell that was not started (nothing to replay)."""
    receipt = {"kind": "cell", **_head(ctx, task, cell, rnd), "status": NOT_RUN, "rc": None,
               "reason": why, "run_dir": None, "rows_total": 0, "rows_success": 0,
               "replay_fallbacks": 0, "ir_scope": ir_scope(None)}
    write_receipt(ctx.cell_dir(task["task_id"], rnd, cell.name) / CELL_RECEIPT, receipt)
    return receipt


def _head(ctx: CampaignContext, task: dict, cell: Cell, rnd: str) -> dict:
    return {"campaign_id": ctx.manifest.campaign_id, "task_id": task["task_id"], "round": rnd,
            "cell": cell.name, "role": cell.role, "op_name": task["op_name"]}


def read_cell(ctx: CampaignContext, run_dir: Path | None, log: Path | None) -> dict:
    """What a cell receipt reads from its run directory (also used by reaccount)."""
    p = ctx.manifest.protocol
    stage = ctx.options.ir_stage
    rows = _rows(run_dir)
    names = [markers.marker_name(m) for r in rows for m in r.markers]
    latencies = [r.gems_ms for r in rows if r.status == SUCCESS and r.gems_ms and r.gems_ms > 0]
    info = _info(run_dir)
    return {
        "run_dir": relative(run_dir, ctx.root),
        "rows_total": len(rows),
        "rows_success": sum(1 for r in rows if r.status == SUCCESS),
        "rows": [{"variant": r.variant, "dtype": r.dtype, "shape": r.shape_detail,
                  "status": r.status, "gems_ms": r.gems_ms, "torch_ms": r.torch_ms,
                  "reason": r.reason} for r in rows],
        "median_gems_ms": statistics.median(latencies) if latencies else None,
        "replay_fallbacks": names.count(markers.REPLAY_FALLBACK),
        "graph_fallbacks": names.count(markers.NO_GRAPH),
        "timer": (info.get("caliber") or {}).get("timer"),
        "autotune_mode": info.get("autotune_mode"),
        "ir_scope": ir_scope(run_dir, p.measured_launch_floor, p.scrub, stage),
        "produced_by": _hashes(run_dir, log, ctx.root),
    }


def _rows(run_dir: Path | None):
    run = load_run_or_none(run_dir)
    return run.rows if run is not None else []


def _info(run_dir: Path | None) -> dict:
    run = load_run_or_none(run_dir)
    return run.info if run is not None else {}


def _hashes(run_dir: Path | None, log: Path | None, root: Path) -> dict:
    files = [log] if log else []
    if run_dir is not None:
        files += [run_dir / "run.json", run_dir / "results.jsonl", run_dir / "ttgir" /
                  "index.tsv"]
    return {relative(f, root): sha256_or_none(f) for f in files if Path(f).is_file()}
