"""What makes a timed section read differently while other processes share the host and the
device (one GPU, real FlagGems; source .fg/env.sh first):

    python3 tests/device/overlap_cause.py [ROUNDS] [CONDITION,...]

One process times a few small FlagGems kernels with zlh's graph timer (the batch's budget:
warmup 10 ms, 5..50 ms of samples) under each condition, in turn, ROUNDS times (default 3):
  idle    nothing else runs
  cpu     12 processes spin on the host (what compiles do to the CPUs)
  ctx     3 processes hold a CUDA context and 4 GiB each, idle (standby workers)
  gpu     3 processes launch a small kernel every millisecond (another op's untimed runs)
  alloc   3 processes allocate 256 MiB, free it and empty the allocator's cache, in a loop
          (a worker's reset between ops)
  unload  3 processes load and drop a compiled Triton kernel (a fresh copy each time: cache
          dropped, module unloaded), in a loop (a worker's reset of its kernel caches)
  spawn   2 processes at a time start, create a CUDA context and exit, in a loop (worker
          starts and replacements)
  nvml    3 processes read clocks, power and throttle reasons through NVML every 10 ms
          (the telemetry of other runs)
  between 3 processes launch small kernels for 20 ms at a time holding zlh's device lock,
          and the timer holds it around each kernel's measurement: a neighbour's device work
          only between timed sections, as overlap with the lock allows
  prewarm nothing else runs, but the timing process launches small kernels for 20 ms right
          before each kernel's measurement (the device busy just before, by the same process)
  quiet   as `between`, but the timer, once it holds the lock, waits QUIET_S seconds (default
          1) before it measures: how long a neighbour's past work keeps moving the numbers
          (what a run that holds the device for its whole length still meets as it begins)
Default conditions: idle,cpu,ctx,gpu,alloc,unload,spawn,nvml. It prints each kernel's median
per condition (µs, the median over rounds) and its change from idle. A condition that moves
the small kernels by what check_overlap.sh showed names work the device lock must hold off.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import sys
import time

HELPERS = {"cpu": 12, "ctx": 3, "gpu": 3, "alloc": 3, "unload": 3, "spawn": 2, "nvml": 3,
           "between": 3, "prewarm": 0, "quiet": 3}
DEFAULT = ("idle", "cpu", "ctx", "gpu", "alloc", "unload", "spawn", "nvml")
LOCK_PATH = "/tmp/zlh-overlap-cause/device-cause.lock"


def _lock():
    from pathlib import Path
    from harness.measure.device_lock import DeviceLock
    return DeviceLock(Path(LOCK_PATH), "cause")


def _burst(x, seconds: float = 0.02) -> None:
    import torch
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        x.mul_(1.0)
    torch.cuda.synchronize()


TOUCH = "import torch; torch.ones(1, device='cuda').add_(1); torch.cuda.synchronize()"


def _unload_loop(stop) -> None:
    import torch
    import triton
    import triton.language as tl

    x = torch.ones(4096, device="cuda")
    while not stop.is_set():
        @triton.jit
        def bump(p, n, BLOCK: tl.constexpr):     # a new function object: compiled afresh
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(p + offs, tl.load(p + offs, mask=offs < n) + 1, mask=offs < n)
        bump[(4,)](x, 4096, BLOCK=1024)
        torch.cuda.synchronize()
        del bump                                  # its module goes with it
        torch.cuda.empty_cache()


def _nvml_loop(stop) -> None:
    import pynvml
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    while not stop.is_set():
        pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        pynvml.nvmlDeviceGetPowerUsage(handle)
        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
        time.sleep(0.01)


def _spin(kind: str, ready, stop) -> None:
    if kind == "cpu":
        ready.set()
        while not stop.is_set():
            sum(i * i for i in range(10_000))
        return
    if kind == "spawn":
        import subprocess
        ready.set()
        while not stop.is_set():
            subprocess.run([sys.executable, "-c", TOUCH], timeout=120, check=False)
        return
    if kind == "nvml":
        ready.set()
        _nvml_loop(stop)
        return
    import torch
    held = torch.empty(4 << 30, dtype=torch.uint8, device="cuda") if kind == "ctx" else None
    x = torch.ones(4096, device="cuda")
    torch.cuda.synchronize()
    ready.set()
    if kind == "unload":
        _unload_loop(stop)
        return
    if kind in ("between", "quiet"):
        lock = _lock()
        while not stop.is_set():
            with lock.section():
                _burst(x)
            time.sleep(0.005)
        return
    while not stop.is_set():
        if kind == "gpu":
            x.mul_(1.0)
        elif kind == "alloc":
            torch.empty(256 << 20, dtype=torch.uint8, device="cuda")   # freed at once
            torch.cuda.empty_cache()
        time.sleep(0.001)
    del held


def _cases():
    import torch
    import flag_gems.ops as ops
    bf16 = dict(dtype=torch.bfloat16, device="cuda")
    a64, a256 = torch.randn(64, 64, **bf16), torch.randn(256, 256, **bf16)
    v1m, a1k = torch.randn(1 << 20, **bf16), torch.randn(1024, 1024, **bf16)
    w1k = torch.randn(1024, **bf16)
    return {
        "sum 64x64 dim1": lambda: ops.sum_dim(a64, [1]),
        "sum 1048576": lambda: ops.sum(v1m),
        "cumsum 256x256": lambda: ops.cumsum(a256, 1),
        "rms_norm 1024x1024": lambda: ops.rms_norm(a1k, [1024], w1k, 1e-5),
        "gelu 64x64": lambda: ops.gelu(a64),
        "gelu 1048576": lambda: ops.gelu(v1m),
        "torch sum 64x64": lambda: a64.sum(1),
    }


def _measure(timer, cases, cond: str = "idle") -> dict:
    import contextlib
    import torch
    lock = _lock() if cond in ("between", "quiet") else None
    quiet_s = float(os.environ.get("QUIET_S", "1")) if cond == "quiet" else 0.0
    x = torch.ones(4096, device="cuda")
    out = {}
    for name, fn in cases.items():
        if cond == "prewarm":
            _burst(x)
        with lock.section() if lock is not None else contextlib.nullcontext():
            time.sleep(quiet_s)
            out[name] = timer.measure(fn).median * 1e3
    return out


def main(rounds: int, conds: tuple) -> None:
    from backends import get_backend
    from harness.measure.stopping import Budget, StoppingRule
    from harness.measure.timers import make_timer

    backend = get_backend("cuda")
    rule = StoppingRule(min_samples=5, min_time_ms=5, max_time_ms=50)
    timer = make_timer("graph", backend, 0, rule, Budget(warmup_ms=10))
    cases = _cases()
    _measure(timer, cases)                        # compile and warm everything once
    ctx = mp.get_context("spawn")
    seen: dict = {}
    for r in range(rounds):
        for cond in conds:
            stop, procs = ctx.Event(), []
            for _ in range(HELPERS.get(cond, 0)):
                ready = ctx.Event()
                p = ctx.Process(target=_spin, args=(cond, ready, stop), daemon=True)
                p.start()
                procs.append((p, ready))
            for _, ready in procs:
                ready.wait(120)
            time.sleep(1.0)
            for name, us in _measure(timer, cases, cond).items():
                seen.setdefault(name, {}).setdefault(cond, []).append(us)
            stop.set()
            for p, _ in procs:
                p.join(30)
        print(f"round {r + 1}/{rounds} done", flush=True)
    print(f"{'kernel (median over rounds, µs)':<24}" + "".join(f"{c:>16}" for c in conds))
    for name, by in seen.items():
        base = statistics.median(by["idle"])
        cells = []
        for c in conds:
            m = statistics.median(by[c])
            cells.append(f"{m:8.3f}" + ("" if c == "idle" else f" {100 * (m / base - 1):+6.1f}%"))
        print(f"{name:<24}" + "".join(f"{c:>16}" for c in cells))
    print("per-round values:")
    for name, by in seen.items():
        print(f"  {name}: " + "; ".join(f"{c} " + ",".join(f"{v:.3f}" for v in by[c]) for c in conds))


if __name__ == "__main__":
    chosen = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else DEFAULT
    unknown = [c for c in chosen if c != "idle" and c not in HELPERS]
    if unknown or "idle" not in chosen:
        sys.exit(f"overlap_cause: conditions are idle (needed) and {', '.join(HELPERS)}; "
                 f"got {','.join(chosen)}")
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, chosen)
