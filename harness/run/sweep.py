"""A parallel autotune sweep: one op's cases dealt round-robin to N record runs, each pinned
to its own device, their records merged, then the measurement replays the merged record on
one device (measurement stays serial).

Refused, with a one-line reason, in favour of the ordinary serial sweep when: a replay was
asked for (nothing to sweep); fewer than 2 devices or shards; fewer than 2 cases; the level
is not `core` without a shape file (`comprehensive` lets benchmark classes add shapes of
their own, and a merge missing their keys would replay with holes); any shard fails (a merge
with holes is never published).
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..common.files import read_text
from ..common.log import Echo
from ..compile.autotune.merge import merge_records, write_merged
from ..compile.autotune.records import META_FILE
from ..launch import launcher
from ..store.reader import load_run
from ..store.rundir import safe_name
from .child_env import child_environment
from .options import BenchOptions
from .runner import run_bench


class SweepRefused(Exception):
    """Why a parallel sweep cannot be done; the caller sweeps serially."""


def check_sweep(options: BenchOptions, shards: int, devices: list[int],
                cases: int | None) -> None:
    """SweepRefused with the reason when a parallel sweep cannot be trusted."""
    if options.replay:
        raise SweepRefused("a replay was asked for: nothing to sweep")
    if shards < 2 or len(devices) < 2:
        raise SweepRefused(f"needs at least 2 devices and 2 shards (devices {devices}, "
                           f"shards {shards})")
    if options.level != "core" and not options.shapes:
        raise SweepRefused(f"level {options.level}: benchmark classes may add shapes of their "
                           f"own, and a merged record would miss their keys; use --level core "
                           f"or a shape file")
    if cases is not None and cases < 2:
        raise SweepRefused(f"{cases} case(s): nothing to share out")


def parallel_sweep(op: str, options: BenchOptions, shards: int, devices: list[int],
                   root: Path, echo: Echo, timeout_s: float = 3600.0) -> Path:
    """Run the shards, merge their records; the merged record directory, or SweepRefused."""
    shards = min(shards, len(devices))
    # one folder per sweep: two sweeps of one op into one --out in the same second never
    # share their shards (bench --out is no locked root: many runs share it)
    sweep_root = Path(root) / (f".sweep-{safe_name(op)}-{time.strftime('%Y%m%d-%H%M%S')}-"
                               f"{os.getpid()}")
    started = time.time()
    children: list[launcher.Child] = []
    runs = []
    with contextlib.ExitStack() as logs:
        try:
            shard_runs = []
            for k in range(shards):
                out = sweep_root / f"shard{k}"
                out.mkdir(parents=True, exist_ok=True)
                argv = options.replace(case_shard=f"{k}/{shards}", out=str(out), device=None,
                                       replay=None).to_argv()
                log = logs.enter_context(open(out / "sweep.log", "w", encoding="utf-8"))
                children.append(launcher.start(
                    [sys.executable, "-m", "harness", "bench", op, *argv, "--quiet"],
                    child_environment(options.backend, devices[k], detect=True), stdout=log,
                    stderr=subprocess.STDOUT))
                shard_runs.append((k, out, children[-1]))
            for k, out, child in shard_runs:
                rc = child.finish(max(1.0, timeout_s - (time.time() - started)))
                run = next((p for p in sorted(out.iterdir()) if (p / META_FILE).exists()),
                           None)
                if rc != 0 or run is None:
                    raise SweepRefused(f"shard {k} on device {devices[k]} failed (rc={rc}, "
                                       f"see {out / 'sweep.log'}); a merge with holes is "
                                       f"never published")
                runs.append(run)
        finally:          # a shard failed, or an interrupt: the others must not run on
            for child in children:
                if child.poll() is None:
                    child.stop(launcher.INTERRUPT_GRACE_S)
    records, conflicts, meta = merge_records(runs, options.backend or meta_backend(runs[0]))
    merged = write_merged(sweep_root / "merged", records, meta, runs, conflicts)
    echo(f"parallel sweep of {op}: {shards} shards on devices "
         f"{','.join(map(str, devices[:shards]))} in {time.time() - started:.1f} s, "
         f"{sum(len(k) for k in records.values())} keys -> {merged}")
    if conflicts:
        echo(f"WARNING [sweep] {op}: {len(conflicts)} key(s) with different winners across "
             f"shards (interference reached the sweep); the first shard's winner is taken: "
             f"{'; '.join(conflicts[:5])}")
    return merged


def meta_backend(run: Path) -> str:
    return json.loads(read_text(run / META_FILE)).get("backend", "cpu")


def bench_with_sweep(ops, options: BenchOptions, shards: int, devices: list[int], echo: Echo,
                     progress: Echo | None):
    """Per op: a parallel sweep, then the measurement replaying its merged record; where
    the sweep is refused or fails, the ordinary run (a serial sweep) with the reason said."""
    results = []
    for op in ops:
        try:
            check_sweep(options, shards, devices, None)
            merged = parallel_sweep(op, options, shards, devices, Path(options.out), echo)
            options_op = options.replace(replay=str(merged))
        except SweepRefused as why:
            echo(f"parallel sweep of {op} refused: {why}; sweeping serially")
            options_op = options
        result = run_bench([op], options_op, echo=echo, progress=progress)[0]
        missing = (load_run(result.run_dir).info.get("autotune_fallbacks") or {}).get(
            "key_missing", 0)
        if options_op is not options and missing:
            echo(f"WARNING [sweep] {op}: {missing} key(s) the merged record lacked were tuned "
                 f"live in the measurement")
        results.append(result)
    return results
