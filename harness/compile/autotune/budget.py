"""A shorter timing budget for each config of an autotune sweep (`--sweep-ms`).

A tuner times every config of a sweep with its `do_bench` (Triton's default: 25 ms of warmup,
then 100 ms measured, whatever the kernel's length). For the length of one sweep the tuner's
`do_bench` is replaced by one that spends `warmup` + `rep` ms per config: the tuner's own
benchmarker where it takes those budgets as keywords, else the backend's event benchmarker
(Triton's `do_bench` on CUDA) with them; it is put back when the sweep ends. Which config
wins may change where two are within the shorter budget's noise; a record pins whatever won,
so both sides of an A/B still run the same config.
"""
from __future__ import annotations

import contextlib
import inspect

WARMUP_SHARE = 0.2        # Triton's default split: 25 ms of 125 ms warm up


def split(total_ms: float) -> tuple[float, float]:
    """(warmup, rep) in ms for `total_ms` per config, in Triton's default proportion."""
    return total_ms * WARMUP_SHARE, total_ms * (1 - WARMUP_SHARE)


def _takes_budget(bench) -> bool:
    try:
        params = list(inspect.signature(bench).parameters.values())
    except (TypeError, ValueError):
        return False
    names = {p.name for p in params}
    return {"warmup", "rep"} <= names or any(p.kind is p.VAR_KEYWORD for p in params)


def device_benchmarker():
    """The active Triton backend's event benchmarker (`do_bench` on CUDA), which takes
    `warmup` and `rep`; Triton's `do_bench` where the backend names none."""
    from triton.runtime import driver          # heavy: imported only where used
    try:
        return driver.active.get_benchmarker()
    except Exception:  # noqa: BLE001 - no active backend (the interpreter): Triton's own
        from triton.testing import do_bench
        return do_bench


def budgeted(bench, warmup: float, rep: float):
    """A `do_bench(kernel_call, quantiles)` that spends `warmup` + `rep` ms per call."""
    if _takes_budget(bench):
        def timed(kernel_call, quantiles=None):
            return bench(kernel_call, quantiles=quantiles, warmup=warmup, rep=rep)
    else:
        device = device_benchmarker()           # once per sweep, not per config
        def timed(kernel_call, quantiles=None):
            return device(kernel_call, warmup=warmup, rep=rep, quantiles=quantiles)
    timed.zlh_budget = (warmup, rep)
    return timed


@contextlib.contextmanager
def sweep_budget(tuner, warmup: float, rep: float):
    """`tuner.do_bench` budgeted for the length of the block, then as it was (an instance
    attribute put back, a property's cached value dropped so it is computed again). A tuner
    whose `do_bench` cannot be read or set sweeps on its own budget."""
    state = getattr(tuner, "__dict__", None)
    had, before = state is not None and "do_bench" in state, (state or {}).get("do_bench")
    try:
        original = tuner.do_bench
    except Exception:  # noqa: BLE001 - a tuner without a readable benchmarker: its own way
        original = None
    if state is None or original is None:
        yield False
        return
    try:
        tuner.do_bench = budgeted(original, warmup, rep)
    except AttributeError:              # a property without a setter
        yield False
        return
    try:
        yield True
    finally:
        if had:
            state["do_bench"] = before
        else:
            state.pop("do_bench", None)
