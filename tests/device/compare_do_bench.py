"""Device check: zlh's per-shape latency beside triton.testing.do_bench_cudagraph.

Usage: python tests/device/compare_do_bench.py RUN_DIR [RUN_DIR ...]
For every SUCCESS row of each run it rebuilds the same case through the same adapter (same
seed, same inputs) and times the function under test and the baseline with
do_bench_cudagraph (median), then prints both and their ratio.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton.testing

import adapters
import backends
from harness.store.reader import read_rows
from harness.store.results import SUCCESS
from harness.run.case import seed_everything


def profiler_kernel_ms(fn, calls: int = 50) -> float | None:
    """Device-kernel time per call from torch.profiler (sum of kernel durations / calls)."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        kernel_us = sum(e.time_range.elapsed_us() for e in prof.events()
                        if e.device_type == DeviceType.CUDA)
        return kernel_us / 1e3 / calls if kernel_us else None
    except Exception as exc:  # noqa: BLE001 - the comparison is optional
        print(f"profiler unavailable: {exc}")
        return None


def main(run_dirs):
    backend = backends.get_backend("cuda")
    backend.activate(0)
    print(f"{'op':8} {'dtype':9} {'shape':16} {'zlh gems':>10} {'dbcg gems':>10} {'ratio':>7}"
          f" {'zlh torch':>10} {'dbcg torch':>10} {'ratio':>7} {'prof gems':>10} {'ratio':>7}")
    ratios, prof_ratios = [], []
    for run_dir in run_dirs:
        info = json.loads((Path(run_dir) / "run.json").read_text())
        rows = {(r.dtype, r.shape_detail): r for r in read_rows(Path(run_dir) / "results.jsonl")
                if r.status == SUCCESS}
        adapter = adapters.get_adapter(info["adapter"]["adapter"])
        for case in adapter.cases(info["op"], info["dtypes"], None, info["caliber"]["bench_level"],
                                  backend, "cuda:0"):
            row = rows.get((case.dtype, case.shape_detail))
            if row is None:
                continue
            seed_everything(info["seed"])
            inputs = case.build()
            gems = lambda: case.under_test(*inputs.args, **inputs.kwargs)  # noqa: E731
            base = lambda: case.baseline(*inputs.args, **inputs.kwargs)    # noqa: E731
            gems()
            base()
            torch.cuda.synchronize()
            g = triton.testing.do_bench_cudagraph(gems, rep=200, return_mode="median")
            b = triton.testing.do_bench_cudagraph(base, rep=200, return_mode="median")
            p = profiler_kernel_ms(gems)
            rg, rb = row.gems_ms / g, row.torch_ms / b
            rp = row.gems_ms / p if p else float("nan")
            ratios += [rg, rb]
            if p and p >= 0.010:
                prof_ratios.append(rp)
            print(f"{case.op:8} {case.dtype:9} {case.shape_detail:16} {row.gems_ms:10.5f} "
                  f"{g:10.5f} {rg:7.3f} {row.torch_ms:10.5f} {b:10.5f} {rb:7.3f} "
                  f"{(p or float('nan')):10.5f} {rp:7.3f}")
    if ratios:
        dev = sorted(abs(r - 1) * 100 for r in ratios)
        print(f"zlh/do_bench_cudagraph: n={len(dev)} median |dev| {dev[len(dev)//2]:.2f}% "
              f"max {dev[-1]:.2f}%")
    if prof_ratios:
        dev = sorted(abs(r - 1) * 100 for r in prof_ratios)
        print(f"zlh gems / profiler kernel time (kernels >= 10 us): n={len(dev)} median |dev| "
              f"{dev[len(dev)//2]:.2f}% max {dev[-1]:.2f}%")


if __name__ == "__main__":
    main(sys.argv[1:])
