"""Device check: zlh's per-shape latency beside triton.testing.do_bench_cudagraph and the
profiler's kernel time of the same kernels.

Usage: python tests/device/compare_do_bench.py RUN_DIR [RUN_DIR ...]
For every SUCCESS row of each (record) run it rebuilds the same case through the same adapter
(same seed, same inputs), replays the run's autotune record so tuned kernels use the configs
zlh measured, and times the function under test — inside its own context (FlagGems'
use_gems), as zlh does — and the baseline with do_bench_cudagraph (median), and the function
under test with torch.profiler (kernel time per call, kernels per call). For ops that launch
several kernels per call, the graph timer includes the gaps between them: `gap` is zlh's
latency minus the profiler's kernel time, per call.
"""
from __future__ import annotations

import contextlib
import json
import statistics
import sys
from pathlib import Path

import torch
import triton.testing

import adapters
import backends
from harness.compile import autotune
from harness.run.case import seed_everything
from harness.store.reader import load_run
from harness.store.results import SUCCESS


def profiler_kernels(fn, calls: int = 50) -> tuple[float | None, float]:
    """(device-kernel ms per call, kernels per call) from torch.profiler."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
        kernel_us = sum(e.time_range.elapsed_us() for e in kernels)
        return (kernel_us / 1e3 / calls if kernel_us else None), len(kernels) / calls
    except Exception as exc:  # noqa: BLE001 - the comparison is optional
        print(f"profiler unavailable: {exc}")
        return None, 0.0


def cases_of(run, backend):
    info = run.info
    adapter = adapters.get_adapter(info["adapter"]["adapter"])
    op = adapter.resolve(info["op"])
    adapter.prepare([op], backend, info["caliber"]["bench_level"], None)
    return adapter, adapter.cases(op, info["dtypes"], None, info["caliber"]["bench_level"],
                                  backend, "cuda:0")


def compare_run(run_dir, backend, out: list[dict]) -> None:
    run = load_run(run_dir)
    rows = {(r.variant, r.dtype, r.shape_detail): r for r in run.rows if r.status == SUCCESS}
    adapter, cases = cases_of(run, backend)
    hook = autotune.AutotuneReplayer(run_dir, "cuda").install(adapter.tuner_support())
    try:
        for case in cases:
            row = rows.get((case.variant or "", case.dtype, case.shape_detail))
            if row is None or case.skip_reason:
                continue
            seed_everything(run.caliber.seed)
            inputs = case.build()
            scope = case.under_test_context or contextlib.nullcontext
            gems = lambda: case.under_test(*inputs.args, **inputs.kwargs)  # noqa: E731
            base = lambda: case.baseline(*inputs.args, **inputs.kwargs)    # noqa: E731
            with scope():
                gems()
                torch.cuda.synchronize()
                g = triton.testing.do_bench_cudagraph(gems, rep=200, return_mode="median")
                p, kernels = profiler_kernels(gems)
            base()
            b = triton.testing.do_bench_cudagraph(base, rep=200, return_mode="median")
            out.append({"op": run.op, "dtype": case.dtype, "shape": case.shape_detail,
                        "zlh_gems": row.gems_ms, "dbcg_gems": g, "zlh_torch": row.torch_ms,
                        "dbcg_torch": b, "prof_gems": p, "kernels": kernels,
                        "fallbacks": hook.fallback_counts.copy()})
            print(f"{run.op:14} {case.dtype:9} {case.shape_detail[:22]:22} {row.gems_ms:10.5f} "
                  f"{g:10.5f} {row.gems_ms / g:6.3f} {row.torch_ms:10.5f} {b:10.5f} "
                  f"{row.torch_ms / b:6.3f} {(p or float('nan')):10.5f} "
                  f"{(row.gems_ms / p if p else float('nan')):6.3f} {kernels:5.1f} "
                  f"{((row.gems_ms - p) * 1e3 if p else float('nan')):8.2f}", flush=True)
    finally:
        hook.uninstall()


def summary(results: list[dict]) -> None:
    def line(label, devs):
        devs = sorted(devs)
        if devs:
            print(f"{label}: n={len(devs)} median |dev| {statistics.median(devs):.2f}% "
                  f"max {devs[-1]:.2f}%")
    line("zlh gems / do_bench_cudagraph gems", [abs(r["zlh_gems"] / r["dbcg_gems"] - 1) * 100
                                                for r in results])
    line("zlh torch / do_bench_cudagraph torch", [abs(r["zlh_torch"] / r["dbcg_torch"] - 1) * 100
                                                  for r in results])
    big = [r for r in results if r["prof_gems"] and r["prof_gems"] >= 0.010]
    line("zlh gems / profiler kernel time, kernels >= 10 us",
         [abs(r["zlh_gems"] / r["prof_gems"] - 1) * 100 for r in big])
    single = [r for r in big if round(r["kernels"]) == 1]
    line("  of which one kernel per call", [abs(r["zlh_gems"] / r["prof_gems"] - 1) * 100
                                            for r in single])
    multi = [r for r in big if round(r["kernels"]) > 1]
    if multi:
        gaps = [(r["zlh_gems"] - r["prof_gems"]) * 1e3 / (r["kernels"] - 1) for r in multi]
        print(f"  multi-kernel calls: n={len(multi)}, gap per kernel boundary median "
              f"{statistics.median(gaps):.2f} us, max {max(gaps):.2f} us")


def main(run_dirs):
    backend = backends.get_backend("cuda")
    backend.activate(0)
    print(f"{'op':14} {'dtype':9} {'shape':22} {'zlh gems':>10} {'dbcg gems':>10} {'ratio':>6}"
          f" {'zlh torch':>10} {'dbcg torch':>10} {'ratio':>6} {'prof gems':>10} {'ratio':>6}"
          f" {'k/call':>5} {'gap us':>8}")
    results: list[dict] = []
    for run_dir in run_dirs:
        try:
            compare_run(run_dir, backend, results)
        except Exception as exc:  # noqa: BLE001 - one op's failure does not end the check
            print(f"{run_dir}: {type(exc).__name__}: {exc}")
    summary(results)
    return results


if __name__ == "__main__":
    data = main(sys.argv[1:])
    target = Path(__import__("os").environ.get("OUT", ".")) / "compare_do_bench.json"
    target.write_text(json.dumps(data, indent=1, default=str))
