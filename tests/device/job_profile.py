"""Where a round's job spends its time besides its samples (device check; real FlagGems,
`source .fg/env.sh` first).

    python3 tests/device/job_profile.py [OP ...]        # default: softmax

Per op: a record run (`zlh bench`, its compile cache kept), then in one process warmed as a
turns-fresh spare is (harness.corpus.worker's warm start) one replayed job of a round —
`worker.run_job`, loading the record's kept compile cache, a round's re-randomisation —
under cProfile. Prints the job's stretches, run.json's phases and the functions of zlh,
its adapters and backends with the most cumulative time, and writes the profile to
$OUT/job_profile_<op>.prof.
"""
from __future__ import annotations

import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BUDGET = ["--dtypes", os.environ.get("DTYPES", "bfloat16"), "--level", "core", "--isolate-tuner-cache",
          "--warmup-ms", "30", "--min-time-ms", "100", "--max-time-ms", "200",
          "--no-baseline-timing"]
OURS = (str(ROOT / "harness"), str(ROOT / "adapters"), str(ROOT / "backends"))


def record(op: str, work: Path) -> tuple[Path, Path]:
    """A record run of `op` with its compile cache kept: (run directory, kept cache)."""
    out = work / "record"
    subprocess.run([sys.executable, "-m", "harness", "bench", op, *BUDGET, "--out", str(out),
                    "--keep-compile-cache", "-q"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    run = next(p for p in out.iterdir() if p.is_dir() and (p / "run.json").is_file())
    kept = next(out.glob(".compile-cache-*"))
    return run, kept


def profile_job(op: str, work: Path, run: Path, kept: Path, out: Path) -> list[str]:
    from harness.corpus import worker
    args = [*BUDGET, "--out", str(work / "round"), "--replay", str(run),
            "--compile-cache", str(kept)]
    started = time.perf_counter()
    warm_s = worker._warm({"op": op, "args": args})
    job = {"op": op, "args": args, "log": str(work / "round.log"),
           "argv": ["zlh", "bench", op, *args], "round": {"seed": 1}}
    profiler = cProfile.Profile()
    began = time.perf_counter()
    reply = profiler.runcall(worker.run_job, job)
    job_s = time.perf_counter() - began
    profiler.dump_stats(out / f"job_profile_{op}.prof")
    info = json.loads(next((work / "round").glob("*/run.json")).read_text())
    lines = [f"{op}: warm start {warm_s:.2f} s (process {began - started:.2f} s), job "
             f"{job_s:.2f} s, rc {reply['rc']}; run.json " + ", ".join(
                 f"{k} {info.get(k)}" for k in ("wall_s", "inputs_s", "compile_s",
                                                "measure_s"))]
    lines += [line for line in Path(job["log"]).read_text().splitlines()
              if line.startswith("zlh job ")]
    stats = pstats.Stats(profiler)
    rows = [(cum, calls, f"{Path(file).relative_to(ROOT)}:{line}({name})")
            for (file, line, name), (_, calls, _, cum, _) in stats.stats.items()
            if file.startswith(OURS)]
    lines += [f"  {cum:7.3f} s {calls:6d}x {where}" for cum, calls, where in
              sorted(rows, reverse=True)[:45]]
    return lines


def main(argv: list[str]) -> int:
    out = Path(os.environ.get("OUT", "device-out"))
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for op in argv or ["softmax"]:
        with tempfile.TemporaryDirectory(prefix="zlh-job-") as scratch:
            work = Path(scratch)
            run, kept = record(op, work)
            lines += profile_job(op, work, run, kept, out)
    text = "\n".join(lines) + "\n"
    (out / "job_profile.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
