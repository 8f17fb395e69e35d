"""Three small Triton kernels with torch-compatible wrappers.

Import this module only after the backend is active: Triton decides at decoration time
whether a kernel is compiled or interpreted (TRITON_INTERPRET=1 on the cpu backend).

`slow=True` makes each kernel do measurably more work for the same result (extra passes
over its input); it exists to demonstrate and test A/B comparisons.
"""
from __future__ import annotations

import time

import torch
import triton
import triton.language as tl

INTERPRETED = bool(triton.knobs.runtime.interpret)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
               SLOW: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    out = x + y
    if SLOW:
        # Three more passes over y; max(out, out) keeps the value exactly.
        for _ in tl.static_range(3):
            again = tl.load(x_ptr + offsets, mask=mask, volatile=True) + \
                tl.load(y_ptr + offsets, mask=mask, volatile=True)
            out = tl.maximum(out, again)
    tl.store(out_ptr + offsets, out, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, slow: bool = False) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    block = 1024
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block, SLOW=slow)
    return out


@triton.jit
def softmax_kernel(in_ptr, out_ptr, n_cols, in_row_stride, out_row_stride,
                   BLOCK_N: tl.constexpr, SLOW: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    row_max = tl.max(x, axis=0)
    if SLOW:
        for _ in tl.static_range(3):
            again = tl.load(in_ptr + row * in_row_stride + cols, mask=mask,
                            other=-float("inf"), volatile=True).to(tl.float32)
            row_max = tl.maximum(row_max, tl.max(again, axis=0))
    num = tl.exp(x - row_max)
    den = tl.sum(num, axis=0)
    out = num / den
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor, slow: bool = False) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor."""
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK_N=block,
                            SLOW=slow, num_warps=warps)
    return out


def _host_do_bench(fn, quantiles=None, **_):
    """Autotune's benchmark under the interpreter: there are no device events there."""
    fn()
    start = time.perf_counter()
    fn()
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


if INTERPRETED:
    MM_CONFIGS = [
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, num_warps=1, num_stages=1),
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=1, num_stages=1),
    ]
    _AUTOTUNE_EXTRA = {"do_bench": _host_do_bench}
else:
    MM_CONFIGS = [
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
    ]
    _AUTOTUNE_EXTRA = {}


@triton.autotune(configs=MM_CONFIGS, key=["M", "N", "K"], **_AUTOTUNE_EXTRA)
@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
              stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              SLOW: tl.constexpr, IEEE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    passes: tl.constexpr = 4 if SLOW else 1
    for _ in tl.static_range(passes):
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            k_offs = k * BLOCK_K + offs_k
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + k_offs[None, :] * stride_ak,
                        mask=(offs_m[:, None] < M) & (k_offs[None, :] < K), other=0.0)
            b = tl.load(b_ptr + k_offs[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                        mask=(k_offs[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            if IEEE:
                acc += tl.dot(a, b, input_precision="ieee")
            else:
                acc += tl.dot(a, b)
    if SLOW:
        acc = acc * 0.25   # four passes over the same products, scaled back
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def mm(a: torch.Tensor, b: torch.Tensor, slow: bool = False) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    if K != K2:
        raise ValueError(f"mm: inner dimensions differ ({K} vs {K2})")
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))

    mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1), SLOW=slow, IEEE=a.dtype == torch.float32)
    return c


@triton.jit
def _far_load_kernel(x_ptr, out_ptr, n, OFFSET: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    far = tl.load(x_ptr + offs.to(tl.int64) + OFFSET, mask=mask)
    tl.store(out_ptr + offs, far, mask=mask)


def read_far_out_of_bounds(x: torch.Tensor) -> torch.Tensor:
    """Reads 2**40 elements past the end of `x`: an illegal address on any GPU."""
    out = torch.empty_like(x)
    n = x.numel()
    _far_load_kernel[(triton.cdiv(n, 256),)](x, out, n, OFFSET=1 << 40, BLOCK=256)
    return out
