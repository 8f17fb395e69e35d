"""zlh's harness: timing core, runner, run directories, comparison, CLI and API.

Embedding:

    import harness
    run = harness.bench("softmax", adapter="builtin", backend="cpu")
    run.rows[0].gems_ms, run.run_dir

`bench` returns a `RunResult` (rows, run directory, caliber, status) and raises
`harness.ZlhError` subclasses for bad input, each with an `exit_code`.
"""
from __future__ import annotations

from .errors import (CaliberError, DevicePoisonedError, PreflightError, UsageError, ZlhError)
from .measurement import Measurement
from .results import Row
from .runner import BenchOptions, RunResult, run_bench
from .stopping import StoppingRule
from .timers import Budget


def bench(op: str, **options) -> RunResult:
    """Run one op; keyword arguments are the fields of `BenchOptions`."""
    echo = options.pop("echo", print)
    options.setdefault("argv", ["harness.bench", op])
    return run_bench([op], BenchOptions(**options), echo=echo)[0]


def bench_many(ops, **options) -> list[RunResult]:
    echo = options.pop("echo", print)
    options.setdefault("argv", ["harness.bench_many", *ops])
    return run_bench(list(ops), BenchOptions(**options), echo=echo)


__all__ = ["bench", "bench_many", "BenchOptions", "RunResult", "Row", "Measurement",
           "StoppingRule", "Budget", "ZlhError", "UsageError", "PreflightError", "CaliberError",
           "DevicePoisonedError"]
