"""Small Triton kernels written as a user would, for the embedding API's tests (interpreted
on the CPU: conftest sets TRITON_INTERPRET before this module is imported)."""
from __future__ import annotations

import os
import time

import torch
import triton
import triton.language as tl

import harness


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add(x, y, block: int = 1024):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), block),)](x, y, out, x.numel(), BLOCK=block)
    return out


def _host_do_bench(fn, quantiles=None, **_):
    """The autotuner's benchmark under the interpreter, which has no device events."""
    fn()
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})],
                 key=["n"], do_bench=_host_do_bench)
@triton.jit
def tuned_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def tuned_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    tuned_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return out


def two_inputs(shape, dtype):
    return torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)


def add_cases(fn=add, shapes=((1000,), (4096,))):
    return harness.Case.sweep(fn=fn, baseline=torch.add, make_inputs=two_inputs,
                              shapes=[list(s) for s in shapes], dtypes=["float32"],
                              bytes=lambda shape, dtype: 3 * shape[0] * dtype.itemsize)


def switched_add(x, y):
    """BLOCK from USER_ADD_BLOCK: the switch an A/B of two variants flips."""
    return add(x, y, int(os.environ.get("USER_ADD_BLOCK", "1024")))
