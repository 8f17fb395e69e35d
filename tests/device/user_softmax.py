"""A user's own Triton softmax against torch, through the embedding API (GPU).

USER_SOFTMAX_WARPS picks num_warps: the switch `zlh ab --switch USER_SOFTMAX_WARPS=4,8`
flips. Run from this directory (the module is imported by name):

    python user_softmax.py OUT_DIR    # bench_cases, then zlh ab of num_warps 4 vs 8
"""
import os

import torch
import triton
import triton.language as tl

import harness


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * cols + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x, warps=None):
    out = torch.empty_like(x)
    warps = warps or int(os.environ.get("USER_SOFTMAX_WARPS", "4"))
    softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=warps)
    return out


softmax_cases = harness.Case.sweep(
    fn=softmax, baseline=lambda x: torch.softmax(x, dim=-1),
    make_inputs=lambda shape, dtype: torch.randn(shape, dtype=dtype, device="cuda"),
    shapes=[[4096, 1024], [8192, 2048], [2048, 8192]], dtypes=["float16"],
    bytes=lambda shape, dtype: 2 * shape[0] * shape[1] * dtype.itemsize)

if __name__ == "__main__":
    import subprocess
    import sys
    out = sys.argv[1]
    run = harness.bench_cases(softmax_cases, op="user_softmax", out=f"{out}/runs")
    ab = subprocess.run([sys.executable, "-m", "harness", "ab", "--cases",
                         "user_softmax:softmax_cases", "--switch", "USER_SOFTMAX_WARPS=4,8",
                         "--rounds", "3", "--root", f"{out}/ab", "-q"])
    sys.exit(run.exit_code or ab.returncode)
