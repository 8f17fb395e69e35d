"""zlh's harness: the timing core, `zlh bench`, run directories, what the compiler did, A/B
comparison, the CLI and this Python API.

Embedding:

    import harness
    run = harness.bench("softmax", adapter="builtin", backend="cpu", min_samples=5)
    run.rows[0].gems_ms, run.run_dir, run.caliber

    m = harness.measure(lambda: my_kernel(x))               # a Measurement
    cases = harness.Case.sweep(fn=mine, baseline=torch_ref, make_inputs=make,
                               shapes=[[4096]], dtypes=["float16"])
    run_a = harness.bench_cases(cases, op="my_op")          # an ordinary run directory
    run_b = harness.bench_cases(cases, op="my_op", replay=str(run_a.run_dir))
    report = harness.compare(run_a, run_b)                  # the typed A/B report
    quick = harness.compare_callables(fa, fb, rounds=5)     # within this process only

`bench` returns a `RunResult` (rows, run directory, caliber, status) and raises
`harness.ZlhError` subclasses for bad input, each with an `exit_code`. Nothing is printed
unless asked (`echo=print`, `progress=print`); warnings go to the `zlh` logger, silent until
the application configures logging.
"""
from __future__ import annotations

from adapters.user import Case

from .ab.report import ABReport, ABRow
from .common.errors import (CaliberError, CallableError, DevicePoisonedError, OpExitError,
                            PreflightError, UsageError, ZlhError)
from .embed.quick import CallableComparison, compare_callables
from .embed.runs import bench_cases, compare
from .embed.timing import measure
from .measure.measurement import Measurement
from .measure.stopping import StoppingRule
from .measure.timers import Budget
from .run.options import BenchOptions
from .run.runner import RunResult, run_bench
from .store.caliber import Caliber
from .store.results import Row
from .version import __version__


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


__all__ = ["__version__", "bench", "bench_many", "measure", "bench_cases", "compare", "compare_callables",
           "Case", "BenchOptions", "RunResult", "Row", "Measurement", "Caliber", "StoppingRule",
           "Budget", "ABReport", "ABRow", "CallableComparison", "ZlhError", "UsageError",
           "PreflightError", "CaliberError", "CallableError", "DevicePoisonedError",
           "OpExitError"]
