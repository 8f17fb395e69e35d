"""Triton's compiles with the device let go.

Under overlap a run that times nothing holds its device's lock shared while it works on the
device (the timing core's harness/measure/device_lock.py) and lets it go while Triton
compiles a kernel: compiling is host work (front end, LLVM, the assembler), so a timing run
may take the device meanwhile, and this run takes the lock back before its kernel launches.
An autotune sweep's configs compile inside their benchmarks, so they too compile with the
lock let go. A run that times keeps the lock through its compiles (harness/run/phases.py).

The patch is Triton's own compile step: `JITFunction._do_compile` (called on a miss of the
in-memory kernel cache, for a launch and for `run(..., warmup=True)` alike), or, on a Triton
without it, `triton.compiler.compile` as kernels bind it. It is installed once per process
and is inert outside `compiles_aside`.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Callable, ContextManager

_aside: Callable[[], ContextManager] | None = None
_patched: tuple | None = None          # (owner, attribute name, original)


def _let_go(original: Callable) -> Callable:
    @functools.wraps(original)
    def compile_let_go(*args, **kwargs):
        aside = _aside
        if aside is None:
            return original(*args, **kwargs)
        with aside():
            return original(*args, **kwargs)
    compile_let_go.__zlh_aside__ = True
    return compile_let_go


def _target():
    """(owner, attribute) of Triton's compile step, or None without Triton."""
    try:
        from triton.runtime.jit import JITFunction  # heavy: imported only where used
    except Exception:  # noqa: BLE001 - no Triton: nothing compiles
        return None
    if callable(getattr(JITFunction, "_do_compile", None)):
        return JITFunction, "_do_compile"
    import triton.compiler
    return triton.compiler, "compile"


def install() -> str | None:
    """Patch the compile step once per process; the patched name (None without Triton)."""
    global _patched
    if _patched is None:
        target = _target()
        if target is None:
            return None
        owner, name = target
        original = getattr(owner, name)
        if not getattr(original, "__zlh_aside__", False):
            setattr(owner, name, _let_go(original))
        _patched = (owner, name, original)
    owner, name, _ = _patched
    return f"{getattr(owner, '__qualname__', getattr(owner, '__name__', owner))}.{name}"


def uninstall() -> None:
    """Put Triton's compile step back (tests)."""
    global _patched
    if _patched is not None:
        owner, name, original = _patched
        setattr(owner, name, original)
        _patched = None


@contextlib.contextmanager
def compiles_aside(aside: Callable[[], ContextManager]):
    """Within the block, each Triton compile runs inside `aside()` (a device lock's
    `stepped_aside`); the previous setting comes back after it."""
    global _aside
    install()
    previous, _aside = _aside, aside
    try:
        yield
    finally:
        _aside = previous
