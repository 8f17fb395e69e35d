"""Small Triton kernels compiled for a GPU target on a machine without one.

`triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))` runs the real
compiler pipeline (TTIR, TTGIR, PTX, cubin) and fires the compile listener on a CPU-only
host, even with TRITON_INTERPRET set: that is what the IR capture tests need. Kernels
cannot be launched here, so launches are simulated through Triton's own hook chains with
the arguments Triton passes (`kernel_load_end_hook(module, function, name,
metadata_group, hash)`, then `launch_enter_hook(LazyDict({"name", "function",
"stream"}))`).
"""
from __future__ import annotations

import contextlib
import itertools
import os

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

TARGET = GPUTarget("cuda", 90, 32)
_MISSING = object()


def _language_objects() -> list:
    core = tl.core
    objs = [tl, core, tl.math, core.tensor, core.dtype]
    objs += [o for o in (getattr(core, "condition", None),
                         getattr(core, "tensor_descriptor_base", None)) if o is not None]
    return objs


# triton.language as imported, before any test ran a kernel through the interpreter.
_PRISTINE = [(obj, dict(vars(obj))) for obj in _language_objects()]


@contextlib.contextmanager
def pristine_language():
    """Compile against triton.language as it was at import.

    Triton's interpreter (TRITON_INTERPRET=1, set for the whole CPU test suite) patches
    triton.language while it runs a kernel and does not undo every patch after a device
    function call; a later real compile in the same process then fails inside the code
    generator. The patched attributes are swapped out for the compile and put back."""
    changed = []
    for obj, pristine in _PRISTINE:
        current = dict(vars(obj))
        for name in set(current) | set(pristine):
            before, now = pristine.get(name, _MISSING), current.get(name, _MISSING)
            if before is not now and not name.startswith("__dict"):
                changed.append((obj, name, now))
                _set(obj, name, before)
    try:
        yield
    finally:
        for obj, name, value in reversed(changed):
            _set(obj, name, value)


def _set(obj, name, value) -> None:
    if value is _MISSING:
        if name in vars(obj):
            delattr(obj, name)
    else:
        setattr(obj, name, value)


def add_kernel(x_ptr, y_ptr, out_ptr, n, EM, BLOCK_SIZE_M: tl.constexpr, HAS_BIAS: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs + EM, mask=mask)
    if HAS_BIAS:
        x = x + 1
    tl.store(out_ptr + offs, x + y, mask=mask)


def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 0.0, mask=offs < n)


ADD = JITFunction(add_kernel)
FILL = JITFunction(fill_kernel)


def compile_add(block=64, dtype="fp16", em_div16=True, has_bias=False, n_is_1=False,
                **options):
    """One add_kernel variant; options go to the compiler (num_warps, num_stages, ...).
    n_is_1: `n` specialised to the constant 1, as the JIT does for an int argument of 1."""
    signature = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
                 "n": "constexpr" if n_is_1 else "i32", "EM": "i32",
                 "BLOCK_SIZE_M": "constexpr", "HAS_BIAS": "constexpr"}
    constexprs = {"BLOCK_SIZE_M": block, "HAS_BIAS": has_bias, **({"n": 1} if n_is_1 else {})}
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]],
             (2,): [["tt.divisibility", 16]]}
    if em_div16:
        attrs[(4,)] = [["tt.divisibility", 16]]
    src = ASTSource(ADD, signature, constexprs=constexprs, attrs=attrs)
    options.setdefault("num_warps", 4)
    options.setdefault("num_stages", 3)
    with pristine_language():
        return triton.compile(src, target=TARGET, options=options)


def compile_fill(block=128):
    src = ASTSource(FILL, {"out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": block}, attrs={(0,): [["tt.divisibility", 16]]})
    with pristine_language():
        return triton.compile(src, target=TARGET, options={"num_warps": 4, "num_stages": 3})


_handles = itertools.count(0x1000)
_loaded: dict[str, int] = {}


def launch(kernel, times=1):
    """Simulate `times` launches of a compiled kernel through Triton's hook chains: the
    first one loads it (kernel_load_end_hook hands out its function handle)."""
    from triton import knobs
    from triton.compiler.compiler import LazyDict
    handle = _loaded.get(kernel.hash)
    if handle is None:
        handle = _loaded[kernel.hash] = next(_handles)
        knobs.runtime.kernel_load_end_hook(None, handle, kernel.name, kernel.metadata_group,
                                           kernel.hash)
    for _ in range(times):
        knobs.runtime.launch_enter_hook(LazyDict({"name": kernel.name, "function": handle,
                                                  "stream": 0}))


def trans_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(out_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))


TRANS = JITFunction(trans_kernel)


def compile_trans(m=64, n=64, target=TARGET):
    """A transpose: its TTGIR carries a ttg.convert_layout (one, on sm90)."""
    src = ASTSource(TRANS, {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "constexpr",
                            "N": "constexpr"}, constexprs={"M": m, "N": n},
                    attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
    with pristine_language():
        return triton.compile(src, target=target, options={"num_warps": 4, "num_stages": 3})


@contextlib.contextmanager
def private_cache(path):
    """A private TRITON_CACHE_DIR (as a run has) and Triton 3.9's fp-fusion default made
    explicit (unset, it warns on every compile); both restored afterwards."""
    keys = {"TRITON_CACHE_DIR": str(path), "TRITON_DEFAULT_FP_FUSION": "1"}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield path
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def measured(kernel, times=1):
    """`launch`, as the function under test's call: its launches are the case's measured
    code (outside such a call, a launch in a case window is set-up)."""
    from harness.compile.ir.triton_hooks import timed_call
    timed_call(lambda: launch(kernel, times))()
