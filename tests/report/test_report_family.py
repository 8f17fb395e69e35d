"""An op's family in the report: the benchmark class its cases came from (a corpus with one
benchmark file per op would otherwise name the op again), else its file's name."""
from __future__ import annotations

from types import SimpleNamespace

from harness.report import sources


def test_the_family_is_the_benchmark_class_where_the_run_names_it():
    run = SimpleNamespace(rows=[SimpleNamespace(extra={}),
                                SimpleNamespace(extra={"benchmark": "UnaryPointwiseBenchmark"})])
    assert sources.family("benchmark/test_acosh.py", run) == "UnaryPointwise"
    assert sources.family("benchmark/test_reduction_ops.py", None) == "reduction_ops"
    assert sources.family("benchmark/test_acosh.py", SimpleNamespace(rows=[])) == "acosh"
    assert sources.family("-", None) == "-"
