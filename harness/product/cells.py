"""One cell of a task: the op under one cell's environment, in a fresh `zlh bench` process
(the batch engine's `run_fresh`: own process group, killed at the cost class's timeout), what
its run directory shows, and its cell receipt.

A cell's environment: the manifest's one physical device alone visible (every other vendor's
visibility variables cleared), every variable some cell names unset first and then this cell's
values applied, zlh importable.

Its IR scope: what the function under test launched, and what it amounts to. zlh already tells
measured kernels (launched by calls of the function under test) from set-up kernels (input
building, capture set-up), so the convert count and the fingerprint cover the measured ones.
The measured launch floor narrows further: a variant counts only when `ttgir/index.tsv` records
more than `floor` launches of it by the function under test (floor 0: every measured variant).
Nothing is trusted that cannot be scoped: a dumped file missing from the index, a measured
variant whose IR is missing, no index, IR capture off or hooks absent, or no IR at all because
Triton's interpreter ran (cpu) make the scope incomplete.

    tasks/<task>/<round>/<cell>/cell.log            the command line and its output
    tasks/<task>/<round>/<cell>/<op>_<ts>/          the run directory
    tasks/<task>/<round>/<cell>/cell-receipt.json   status, rc, rows, median latency,
        IR scope (convert counts of measured launches, fingerprint), replay fallbacks,
        the effective env, and the sha256 of the files it was read from
"""
from __future__ import annotations

import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import backends

from ..common import markers
from ..common.errors import RunFailedError, UsageError
from ..common.files import read_text
from ..compile.ir.dump import DUMPED, MEASURED, MISSING, SETUP
from ..compile.ir.fingerprint import (convert_layout_count, fingerprint, ir_files, ir_root,
                                       read_index)
from ..ab.rounds import round_seed
from ..corpus.outcome import judge
from ..corpus.supervisor import Lane, run_fresh
from ..run.options import BenchOptions
from ..store.reader import load_run, load_run_or_none
from ..store.results import SUCCESS
from .freeze import SHAPES, Frozen
from .manifest import Cell, Manifest
from .receipts import ZLH_ROOT, relative, sha256_or_none, write_receipt

CELL_RECEIPT = "cell-receipt.json"
ROUNDS = ("a", "b")          # a task's rounds: every cell, then the timed cells again
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


def cell_lane(manifest: Manifest, cell: Cell, python: str = sys.executable,
              base: dict | None = None) -> Lane:
    """How a cell's processes are started: its interpreter and environment (module docstring)."""
    backend = backends.get_backend(manifest.device.backend)
    devices = [manifest.device.physical_device] if backend.visibility_keys else None
    env = backends.child_env(backend, dict(os.environ if base is None else base),
                             devices=devices)
    for key in manifest.protocol.env_keys():
        env.pop(key, None)
    for key, value in cell.env.items():
        if value is not None:
            env[key] = value
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ZLH_ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return Lane(python=python, env=env,
                label=f"{backend.name}:{manifest.device.physical_device}:{cell.name}")


def effective_env(manifest: Manifest, lane: Lane) -> dict:
    """What the cell's processes saw of every variable the manifest's cells name (None:
    unset), plus the device visibility."""
    backend = backends.get_backend(manifest.device.backend)
    keys = [*manifest.protocol.env_keys(), *backend.visibility_keys]
    return {k: lane.env.get(k) for k in keys}


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
    # every cell of a round behind the same later-placement spacers, round b behind others
    options = ctx.options.replace(dtypes=tuple(task["dtypes"]), out=str(out),
                                  replay=str(replay) if replay else None,
                                  placement_seed=round_seed(task["task_id"], ROUNDS.index(rnd)))
    log = out / "cell.log"
    timeout = float(task["timeout_s"])
    attempt = run_fresh(lane, task["op_name"], options.to_argv(), timeout, log, out)
    if attempt.write_failure:     # disk full, read-only: no receipt over a cut-short run
        raise RunFailedError(f"{task['task_id']} {rnd}/{cell.name}: {attempt.write_failure} "
                             f"writing its run under {out}; no receipt was written for it, "
                             f"so a resume (zlh product run FROZEN_DIR --resume) runs the task "
                             f"again once there is room", attempt.write_failure)
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


def ir_scope(run_dir: Path | None, floor: int = 0, scrub=(), stage: str = "ttgir") -> dict:
    """convert_count (measured variants above the floor), convert_count_all (every dumped
    variant, set-up ones included), fingerprint (of the files above the floor), the files
    left out, and whether the scope is complete (with the problems when not)."""
    out = {"measured_launch_floor": floor, "convert_count": None, "convert_count_all": None,
           "fingerprint": None, "measured_files": 0, "excluded": [], "unindexed": [],
           "complete": False, "problems": []}
    problems = _run_problems(run_dir)
    if run_dir is None or problems[:1] == ["no run directory"]:
        out["problems"] = problems
        return out
    files = {rel: path for rel, path in ir_files(run_dir, "ttgir", MEASURED)}
    rows = read_index(run_dir)
    if not (ir_root(run_dir) / "index.tsv").is_file():
        problems.append("no ttgir/index.tsv: launches cannot be attributed")
    measured = [r for r in rows if r.get("role") == MEASURED]
    problems += [f"IR missing for measured variant {r.get('kernel')} ({r.get('shape')})"
                 for r in measured if r.get("status") == MISSING]
    launches = {r["file"]: _int(r.get("launches")) for r in measured if r.get("status") == DUMPED}
    unindexed = sorted(rel for rel in files if rel not in launches)
    if unindexed:
        problems.append(f"{len(unindexed)} dumped file(s) not in index.tsv")
    kept = {rel for rel in files if rel in unindexed or launches[rel] > floor}
    out["excluded"] = [{"file": rel, "launches": launches[rel],
                        "convert_layout": _count(files[rel])}
                       for rel in sorted(files) if rel not in kept]
    out["unindexed"] = unindexed
    out["measured_files"] = len(kept)
    out["convert_count"] = _hash_total(measured, floor) + sum(_count(files[r]) for r in unindexed)
    out["convert_count_all"] = _hash_total(measured + [r for r in rows if r.get("role") == SETUP],
                                           None) + sum(_count(files[r]) for r in unindexed)
    stems = {rel.rsplit(".", 1)[0] for rel in kept}
    out["fingerprint"] = fingerprint(run_dir, scrub, stage=stage,
                                     keep=lambda rel: rel.rsplit(".", 1)[0] in stems)
    out["problems"] = problems
    out["complete"] = not problems
    return out


def _run_problems(run_dir: Path | None) -> list[str]:
    if run_dir is None or not Path(run_dir).is_dir():
        return ["no run directory"]
    try:
        info = load_run(run_dir).info
    except UsageError as exc:
        return [f"run directory unreadable: {exc.message}"]
    caliber, ir = info.get("caliber") or {}, info.get("ir") or {}
    problems = []
    if caliber.get("ir_capture") is False:
        problems.append("IR capture was off")
    if caliber.get("backend") == "cpu":
        problems.append("no IR: Triton's interpreter compiles nothing (cpu backend)")
    if ir.get("hooks_ok") is not True:
        problems.append("the compiler's IR hooks were not available in this run")
    return problems


def _hash_total(rows: list[dict], floor: int | None) -> int:
    """convert_layout per variant (each hash once, however many shapes it ran in) over the
    variants the function under test launched more than `floor` times (None: every row)."""
    counts: dict[str, int] = {}
    peak: dict[str, int] = {}
    for r in rows:
        h = r.get("hash", "")
        peak[h] = max(peak.get(h, 0), _int(r.get("launches")))
        if str(r.get("convert_layout", "")).isdigit():
            counts[h] = int(r["convert_layout"])
    return sum(n for h, n in counts.items() if floor is None or peak.get(h, 0) > floor)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _count(path: Path) -> int:
    return convert_layout_count(read_text(path, errors="replace"))
