"""What keeps device memory alive in a reused worker after an op's reset (device check).

    python3 tests/device/held_memory.py OP ...     (FLAGGEMS_DIR set: FlagGems ops)

Runs each op as a batch worker would (harness.corpus.worker.run_job) and then reports: the
allocator's reserved and allocated bytes; the segments by memory pool (a CUDA graph's private
pool vs the ordinary one); the live device tensors largest first, each with a chain of what
refers to it (types, a dict's owner keys). Output also in $OUT/held_memory.txt.
"""
from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
import types
from pathlib import Path

from harness.corpus import worker
from harness.run.options import BenchOptions

FAST = dict(warmup_ms=10, min_samples=5, min_time_ms=5, max_time_ms=50, level="core",
            isolate_tuner_cache=True)
LINES: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def describe(obj) -> str:
    if isinstance(obj, types.FrameType):
        return f"frame {obj.f_code.co_name} ({obj.f_code.co_filename}:{obj.f_lineno})"
    if isinstance(obj, types.GeneratorType):
        frame = obj.gi_frame
        where = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame else "finished"
        return f"generator {obj.__qualname__} ({where})"
    if isinstance(obj, dict):
        owner = next((m for m in list(sys.modules.values())
                      if getattr(m, "__dict__", None) is obj), None)
        if owner is not None:
            return f"globals of module {owner.__name__}"
        return f"dict keys={list(obj)[:8]}"
    if isinstance(obj, (list, tuple)):
        return f"{type(obj).__name__} len={len(obj)} of {[type(x).__name__ for x in obj[:4]]}"
    if isinstance(obj, types.CellType):
        return "cell (a closure variable)"
    if isinstance(obj, types.FunctionType):
        return f"function {obj.__module__}.{obj.__qualname__}"
    return type(obj).__module__ + "." + type(obj).__qualname__


def chain(obj, exclude: tuple, depth: int = 8) -> list[str]:
    """Paths of referrers up from `obj` (breadth first, at most 4 referrers per object),
    printed as an indented tree; this script's own frames and containers are left out."""
    ours = {id(e) for e in exclude}
    out: list[str] = []
    seen = {id(obj)}
    frontier = [(obj, 0)]
    while frontier:
        current, level = frontier.pop()
        if level >= depth:
            continue
        found = gc.get_referrers(current)
        ours.add(id(found))
        refs = [r for r in found if id(r) not in ours and id(r) not in seen
                and not (isinstance(r, types.FrameType) and r.f_code.co_filename == __file__)]
        ours.add(id(refs))
        for r in refs[:4]:
            seen.add(id(r))
            out.append("   " * level + describe(r))
            if not isinstance(r, types.ModuleType) and not (
                    isinstance(r, dict) and describe(r).startswith("globals")):
                frontier.append((r, level + 1))
        if len(out) > 40:
            break
    ours.add(id(frontier))
    return out or ["(no referrer: kept by the runtime, not by Python)"]


def report(op: str) -> None:
    import torch
    gc.collect()
    torch.cuda.empty_cache()
    say(f"{op}: reserved {torch.cuda.memory_reserved() / 2**20:.0f} MiB, allocated "
        f"{torch.cuda.memory_allocated() / 2**20:.0f} MiB")
    pools: dict = {}
    for seg in torch.cuda.memory_snapshot():
        pool = tuple(seg.get("segment_pool_id", (0, 0)))
        n, size = pools.get(pool, (0, 0))
        pools[pool] = (n + 1, size + seg["total_size"])
    for pool, (n, size) in pools.items():
        kind = "ordinary" if pool == (0, 0) else "private (a CUDA graph's)"
        say(f"   pool {pool} {kind}: {n} segments, {size / 2**20:.0f} MiB")
    live = [o for o in gc.get_objects() if torch.is_tensor(o) and o.is_cuda]
    live.sort(key=lambda t: -t.untyped_storage().nbytes())
    say(f"   live device tensors: {len(live)}, "
        f"{sum(t.untyped_storage().nbytes() for t in live) / 2**20:.0f} MiB")
    for t in live[:3]:
        say(f"   tensor {tuple(t.shape)} {t.dtype} {t.untyped_storage().nbytes() / 2**20:.0f} MiB")
        for step in chain(t, (live, LINES)):
            say(f"      <- {step}")
    del live


def main(argv: list[str]) -> int:
    flaggems = os.environ.get("FLAGGEMS_DIR")
    out = Path(tempfile.mkdtemp(prefix="zlh-held-"))
    timer = os.environ.get("TIMER")
    for op in argv:
        options = dict(FAST, out=str(out), adapter="flaggems" if flaggems else "builtin",
                       dtypes=("bfloat16",))
        if flaggems:
            options["flaggems_dir"] = flaggems
        if timer:
            options["timer"] = timer
        job = {"op": op, "args": BenchOptions.from_flat(**options).to_argv(),
               "log": str(out / f"{op}.{time.time_ns()}.log")}
        reply = worker.run_job(job)
        say(f"== {op} rc {reply['rc']} held_bytes {reply.get('held_bytes')} timer {timer or 'auto'}")
        report(op)
    target = Path(os.environ.get("OUT", "device-out"))
    target.mkdir(parents=True, exist_ok=True)
    (target / "held_memory.txt").write_text("\n".join(LINES) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
