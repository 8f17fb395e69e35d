"""Where a reused worker's time per op goes beyond the op's own run (device check).

    python3 tests/device/profile_worker.py [OP ...]     (FLAGGEMS_DIR set: FlagGems ops)

Runs each op twice through `harness.corpus.worker.run_job` in this process, as a batch
worker would (the first call pays imports and is not counted), and prints per op: the
job's time, the run's own wall_s (run.json), the difference, and the part of it spent in
the reset between ops. Then a cProfile of one more job of the last op, sorted by cumulative
time, so that whatever costs seconds outside the run shows by name. Output under $OUT.
"""
from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from harness.corpus import worker
from harness.run.options import BenchOptions

FAST = dict(warmup_ms=10, min_samples=5, min_time_ms=5, max_time_ms=50, level="core",
            isolate_tuner_cache=True)


def job(op: str, out: Path, flaggems: str | None) -> dict:
    options = dict(FAST, out=str(out), adapter="flaggems" if flaggems else "builtin",
                   dtypes=("bfloat16",) if flaggems else ("float16",))
    if flaggems:
        options["flaggems_dir"] = flaggems
    return {"op": op, "args": BenchOptions.from_flat(**options).to_argv(),
            "log": str(out / f"{op}.{time.time_ns()}.log")}


def wall_of(out: Path, op: str) -> float | None:
    runs = sorted(out.glob(f"**/{op}_*/run.json"), key=lambda p: p.stat().st_mtime)
    try:
        return float(json.loads(runs[-1].read_text())["wall_s"])
    except (IndexError, KeyError, ValueError, OSError):
        return None


def main(argv: list[str]) -> int:
    flaggems = os.environ.get("FLAGGEMS_DIR")
    ops = argv or (["abs", "add", "softmax"] if flaggems else ["add", "softmax", "mm"])
    out = Path(tempfile.mkdtemp(prefix="zlh-profile-"))
    report = io.StringIO()
    reset_times: list[float] = []
    original_reset = worker._reset

    def timed_reset(j):
        started = time.perf_counter()
        try:
            return original_reset(j)
        finally:
            reset_times.append(time.perf_counter() - started)

    worker._reset = timed_reset
    for op in ops:
        for attempt in (1, 2):
            started = time.perf_counter()
            reply = worker.run_job(job(op, out, flaggems))
            total = time.perf_counter() - started
            wall = wall_of(out, op)
            line = (f"{op} #{attempt}: rc {reply['rc']} job {total:.2f} s, run wall "
                    f"{wall if wall is not None else float('nan'):.2f} s, outside the run "
                    f"{total - (wall or 0):.2f} s, of which reset {reset_times[-1]:.2f} s, "
                    f"held after reset {reply.get('held_bytes')}")
            print(line)
            report.write(line + "\n")
    profiler = cProfile.Profile()
    profiler.enable()
    worker.run_job(job(ops[-1], out, flaggems))
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(45)
    print(text.getvalue())
    target = Path(os.environ.get("OUT", "device-out"))
    target.mkdir(parents=True, exist_ok=True)
    (target / "profile_worker.txt").write_text(report.getvalue() + text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
