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

The names load on first use (`__getattr__` below): importing any part of the harness runs this
file first, and the adapters, the backends and the bottom layers import harness.common, so
this file imports nothing above them.
"""
from __future__ import annotations

import importlib

from . import measure as _timing_core  # noqa: F401 - see below
from .version import __version__

# Importing the subpackage bound `measure` to it; the API's `measure` is the timing function
# (harness.embed.timing.measure), which __getattr__ gives once this name is gone. The
# subpackage, now loaded, is never bound here again.
del globals()["measure"]

# API name -> the module it lives in.
_EXPORTS = {
    "bench": "harness.api", "bench_many": "harness.api",
    "measure": "harness.embed.timing",
    "bench_cases": "harness.embed.runs", "compare": "harness.embed.runs",
    "compare_callables": "harness.embed.quick", "CallableComparison": "harness.embed.quick",
    "Case": "adapters.user",
    "BenchOptions": "harness.run.options", "RunResult": "harness.run.runner",
    "Row": "harness.store.results", "Caliber": "harness.store.caliber",
    "Measurement": "harness.measure.measurement", "StoppingRule": "harness.measure.stopping",
    "Budget": "harness.measure.timers",
    "ABReport": "harness.ab.report", "ABRow": "harness.ab.report",
    **{name: "harness.common.errors" for name in (
        "ZlhError", "UsageError", "PreflightError", "CaliberError", "CallableError",
        "DevicePoisonedError", "OpExitError")},
}


def __getattr__(name: str):
    """An API name, imported from its module on first use and kept; else a subpackage not
    imported yet (`harness.embed`), as an eager package would have it."""
    home = _EXPORTS.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = ["__version__", "bench", "bench_many", "measure", "bench_cases", "compare",
           "compare_callables",
           "Case", "BenchOptions", "RunResult", "Row", "Measurement", "Caliber", "StoppingRule",
           "Budget", "ABReport", "ABRow", "CallableComparison", "ZlhError", "UsageError",
           "PreflightError", "CaliberError", "CallableError", "DevicePoisonedError",
           "OpExitError"]
