"""Two block sizes of one Triton kernel, compared inside this process."""
import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.language as tl

import harness

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


x = torch.randn(1 << 24 if DEVICE == "cuda" else 4096, device=DEVICE)
y, out = torch.randn_like(x), torch.empty_like(x)


def add(block):
    return lambda: add_kernel[(triton.cdiv(x.numel(), block),)](x, y, out, x.numel(),
                                                               BLOCK=block)


result = harness.compare_callables(add(256), add(1024), rounds=3, max_time_ms=200)
print(result)                      # says: within one process
print(f"B (BLOCK=1024) vs A (BLOCK=256): {result.delta_pct:+.1f}%, direction {result.direction}")
