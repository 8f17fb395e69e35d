"""Time one Triton kernel with zlh's timing core."""
import os

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"   # no GPU: Triton's interpreter, host clock
import triton
import triton.language as tl

import harness

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


x = torch.randn(1 << 20 if DEVICE == "cuda" else 4096, device=DEVICE)
out = torch.empty_like(x)


def run():
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), 2.0, BLOCK=1024)


m = harness.measure(run, max_time_ms=300)
print(f"median {m.median:.5f} ms ± {m.rel_error:.2%} from {m.n} samples, timer {m.timer}")
if m.fallback:
    print("graph capture failed, event-timed:", m.fallback)
