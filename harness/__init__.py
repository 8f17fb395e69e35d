"""zlh's harness: the timing core, `zlh bench`, run directories, what the compiler did, A/B
comparison, the CLI and this Python API.

Embedding:

    import harness
    run = harness.bench("softmax", adapter="builtin", backend="cpu", min_samples=5)
    run.rows[0].gems_ms, run.run_dir, run.caliber

`bench` returns a `RunResult` (rows, run directory, caliber, status) and raises
`harness.ZlhError` subclasses for bad input, each with an `exit_code`.
"""
from __future__ import annotations

from .common.errors import (CaliberError, DevicePoisonedError, PreflightError, UsageError,
                            ZlhError)
from .measure.measurement import Measurement
from .measure.stopping import StoppingRule
from .measure.timers import Budget
from .run.options import BenchOptions
from .run.runner import RunResult, run_bench
from .store.caliber import Caliber
from .store.results import Row


def bench(op: str, *, echo=print, progress=None, **options) -> RunResult:
    """Run one op; keyword arguments are BenchOptions' flat names (`dtypes`, `backend`,
    `min_samples`, `warmup_ms`, ...), each type-checked."""
    if not isinstance(op, str):
        raise UsageError(f"op must be a name (a string), got {op!r}")
    options.setdefault("argv", ["harness.bench", op])
    return run_bench([op], BenchOptions.from_flat(**options), echo=echo, progress=progress)[0]


def bench_many(ops, *, echo=print, progress=None, **options) -> list[RunResult]:
    if isinstance(ops, str) or not all(isinstance(op, str) for op in ops):
        raise UsageError(f"ops must be a list of names, got {ops!r}")
    options.setdefault("argv", ["harness.bench_many", *ops])
    return run_bench(list(ops), BenchOptions.from_flat(**options), echo=echo, progress=progress)


__all__ = ["bench", "bench_many", "BenchOptions", "RunResult", "Row", "Measurement", "Caliber",
           "StoppingRule", "Budget", "ZlhError", "UsageError", "PreflightError", "CaliberError",
           "DevicePoisonedError"]
