"""Upstream's run configuration (`benchmark.conftest.Config`), set the way zlh runs.

FlagGems' `pytest_configure` builds a `BenchConfig` from the command line; its benchmark
modules bind `Config` from conftest at import, once per process. So there must be exactly one
Config object per process, installed before `benchmark.base` is imported and reset (not
replaced) for every later run in that process — a reused worker's next op writes its dtypes,
level and shape file where every benchmark module reads them.
"""
from __future__ import annotations

import importlib
from pathlib import Path


def configure(conftest, level: str, shape_file: str | None, root: Path):
    """The process's one Config, reset to upstream's defaults and then to this run's level
    and shape file (dtypes and metrics: each benchmark's own until a case sets them)."""
    fresh = conftest.BenchConfig()
    if isinstance(conftest.Config, conftest.BenchConfig):
        vars(conftest.Config).clear()
        vars(conftest.Config).update(vars(fresh))
    else:
        conftest.Config = fresh
    config = conftest.Config
    consts = importlib.import_module("benchmark.consts")
    config.bench_level = consts.BenchLevel(level)
    config.mode = consts.BenchMode.KERNEL   # unused: zlh times; kept for code that reads it
    config.query = False
    config.user_desired_dtypes = None
    config.user_desired_metrics = None
    config.shape_file = shape_file or str(root / "benchmark" / "core_shapes.yaml")
    return config
