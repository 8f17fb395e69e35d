"""Your own cases: a row softmax in Triton against torch.softmax.

    python my_cases.py                                   # record, replay, compare
    zlh bench --cases my_cases:cases                     # the same cases from the CLI
    zlh ab --cases my_cases:cases --switch SOFTMAX_WARPS=4,8
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.language as tl

import harness

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * cols + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    out = torch.empty_like(x)
    warps = int(os.environ.get("SOFTMAX_WARPS", "4"))     # an A/B switch for `zlh ab`
    softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=warps)
    return out


cases = harness.Case.sweep(
    fn=softmax, baseline=lambda x: torch.softmax(x, dim=-1),
    make_inputs=lambda shape, dtype: torch.randn(shape, dtype=dtype, device=DEVICE),
    shapes=[[4096, 4096], [16384, 1024]] if DEVICE == "cuda" else [[8, 128], [16, 256]],
    dtypes=["float16"] if DEVICE == "cuda" else ["float32"],
    bytes=lambda shape, dtype: 2 * shape[0] * shape[1] * dtype.itemsize)

if __name__ == "__main__":
    run_a = harness.bench_cases(cases, op="my_softmax", max_time_ms=300)
    run_b = harness.bench_cases(cases, op="my_softmax", max_time_ms=300,
                                replay=str(run_a.run_dir))   # same autotune configs as A
    report = harness.compare(run_a, run_b)
    for row in report.rows:
        print(row.dtype, row.shape_detail, f"{row.delta_pct:+.2f}%", row.direction)
