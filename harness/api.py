"""The Python API's own entry points, `harness.bench` and `harness.bench_many`: a run from
flat keyword options, type-checked as the command line's are. The package re-exports them
(harness/__init__.py) with the other API names."""
from __future__ import annotations

from .common.errors import UsageError
from .run.options import BenchOptions
from .run.runner import RunResult, run_bench


def bench(op: str, *, echo=None, progress=None, **options) -> RunResult:
    """Run one op; keyword arguments are BenchOptions' flat names (`dtypes`, `backend`,
    `min_samples`, `warmup_ms`, ...), each type-checked. Prints nothing unless asked:
    `echo=print` shows the header, markers and table (run.log has them either way),
    `progress=print` a line per case."""
    if not isinstance(op, str):
        raise UsageError(f"op must be a name (a string), got {op!r}")
    options.setdefault("argv", ["harness.bench", op])
    return run_bench([op], BenchOptions.from_flat(**options), echo=echo, progress=progress)[0]


def bench_many(ops, *, echo=None, progress=None, **options) -> list[RunResult]:
    names = list(ops) if not isinstance(ops, (str, bytes)) and hasattr(ops, "__iter__") \
        else None
    if names is None or not all(isinstance(op, str) for op in names):
        raise UsageError(f"ops must be a list of names, got {ops!r}")
    options.setdefault("argv", ["harness.bench_many", *names])
    return run_bench(names, BenchOptions.from_flat(**options), echo=echo, progress=progress)
