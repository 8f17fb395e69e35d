"""The FlagGems adapter's logic against tests/fixtures/fake_flaggems (a FlagGems-shaped tree)."""
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import budget_args, FAKE_FLAGGEMS
from harness.cli import main
from harness.store.reader import read_rows
from harness.store.results import FAILED, SKIPPED, SUCCESS

FAKE = FAKE_FLAGGEMS
FAST = [*budget_args(max_time_ms=10), "--backend", "cpu", "--adapter", "flaggems"]


pytestmark = pytest.mark.usefixtures("fresh_flaggems_modules")


def bench(tmp_path, *args):
    result = CliRunner().invoke(main, ["bench", *args, "--flaggems-dir", str(FAKE), "--out",
                                       str(tmp_path / "runs"), *FAST])
    runs = sorted((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else []
    return result, runs


def rows_of(run_dir):
    return read_rows(run_dir / "results.jsonl")


def test_softmax_runs_through_benchmark_objects(tmp_path):
    result, (run_dir,) = bench(tmp_path, "softmax")
    assert result.exit_code == 0, result.output
    rows = rows_of(run_dir)
    assert [(r.dtype, r.shape_detail) for r in rows] == [
        ("float16", "4x64"), ("float16", "8x32"), ("float32", "4x64"), ("float32", "8x32")]
    assert all(r.status == SUCCESS and r.gems_ms > 0 for r in rows)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["adapter"]["node"] == "benchmark/test_softmax.py::test_softmax"
    assert info["adapter"]["version"] == "0.0-fixture"
    assert info["caliber"]["shape_mode"] == "upstream"
    import flag_gems
    assert flag_gems.ACTIVE["entered"] > 0 and flag_gems.ACTIVE["exclude"] == ["zero_"]


def test_comprehensive_level_isolates_class_level_metrics(tmp_path):
    result, runs = bench(tmp_path, "softmax", "mm", "--level", "comprehensive")
    assert result.exit_code == 0, result.output
    by_name = {r.name.split("_")[0]: rows_of(r) for r in runs}
    softmax, mm = by_name["softmax"], by_name["mm"]
    assert all(r.gbps("gems") for r in softmax)                 # UnaryReduction adds gbps
    assert all(r.status == SUCCESS and r.gbps("gems") is None for r in mm)  # and not to mm
    assert all(r.tflops for r in mm)
    import benchmark.consts as consts
    assert consts.DEFAULT_METRICS == ["latency_base", "latency", "speedup"]


def test_blas_shapes_come_from_the_class_in_the_mro(tmp_path):
    result, (run_dir,) = bench(tmp_path, "mm", "--dtypes", "float32")
    assert result.exit_code == 0, result.output
    (row,) = rows_of(run_dir)
    assert row.shape_detail == "8x24, 24x16"
    assert "BlasBenchmark" in (run_dir / "shapes.yaml").read_text() or \
        "mm" in (run_dir / "shapes.yaml").read_text()


def test_parametrize_marks_skips_subclasses_and_failures(tmp_path):
    result, runs = bench(tmp_path, "scaled_abs", "skip_in_body", "skipif_true", "own_run",
                         "mixin_run", "broken", "local_subclass_and_two_benchmarks", "with_gems_op")
    assert result.exit_code == 1, result.output          # the broken case failed
    by_op = {json.loads((r / "run.json").read_text())["op"].split(":")[0]: rows_of(r)
             for r in runs}
    assert {json.loads((r / "run.json").read_text())["op"] for r in runs} >= {
        "scaled_abs:misc", "own_run:misc"}
    scaled = by_op["scaled_abs"]
    assert [r.status for r in scaled] == [SUCCESS, SKIPPED, SUCCESS]
    assert scaled[1].reason == "too big"
    assert {r.extra["call"] for r in scaled if r.status == SUCCESS} == {"float32-1", "float32-2"}
    (skip_body,) = by_op["skip_in_body"]
    assert skip_body.status == SKIPPED and "feature this device lacks" in skip_body.reason
    (skipif,) = by_op["skipif_true"]
    assert skipif.status == SKIPPED and skipif.reason == "vendor not supported"
    (own,) = by_op["own_run"]
    assert own.status == SKIPPED and own.reason.startswith("UNSUPPORTED OwnRun overrides run()")
    # a run() brought by a mixin ahead of the Benchmark classes is caught too (upstream's own
    # run would otherwise measure inside the test function and zlh see no Benchmark)
    (mixin,) = by_op["mixin_run"]
    assert mixin.status == SKIPPED and \
        mixin.reason.startswith("UNSUPPORTED RunMixin overrides run()"), mixin.reason
    (broken,) = by_op["broken_inputs"]
    assert broken.status == FAILED and broken.reason == "benchmark_error"
    local = by_op["local_subclass_and_two_benchmarks"]
    assert sorted(r.extra["op_name"] for r in local) == ["exp", "neg"]   # 2 Benchmarks, one test
    (gemsop,) = by_op["with_gems_op"]
    assert gemsop.status == SUCCESS


def test_monkeypatch_is_live_while_timing_and_undone_after(tmp_path, monkeypatch):
    monkeypatch.delenv("FAKE_GEMS_SWITCH", raising=False)
    result, (run_dir,) = bench(tmp_path, "env_op")
    assert result.exit_code == 0, result.output
    import benchmark.test_misc as misc
    assert misc.SEEN_ENV and set(misc.SEEN_ENV) == {"1"}
    import os
    assert "FAKE_GEMS_SWITCH" not in os.environ


def test_backward_cases_time_gradients(tmp_path):
    result, (run_dir,) = bench(tmp_path, "softmax_backward")
    assert result.exit_code == 0, result.output
    rows = rows_of(run_dir)
    assert rows and all(r.status == SUCCESS and r.extra["op_name"] == "softmax_backward"
                        for r in rows)


def test_zlh_shape_file_is_looked_up_like_upstream(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("BlasBenchmark:\n  shapes: [[1, 4, 4, 4], [1, 2, 6, 8]]\n")
    result, (run_dir,) = bench(tmp_path, "mm", "--dtypes", "float32", "--shapes", str(shapes))
    assert result.exit_code == 0, result.output
    assert [r.shape_detail for r in rows_of(run_dir)] == ["4x4, 4x4", "2x8, 8x6"]
    info = json.loads((run_dir / "run.json").read_text())
    assert info["caliber"]["shape_mode"].startswith("file:")


def test_unsupported_dtype_for_a_benchmark_is_a_skip(tmp_path):
    result, (run_dir,) = bench(tmp_path, "perf_sort:sort", "--dtypes", "float16")
    assert result.exit_code == 0, result.output
    (row,) = rows_of(run_dir)
    assert row.status == SKIPPED and "not supported by sort" in row.reason


@pytest.mark.parametrize("name, expected", [
    ("softmax", "softmax"),
    ("perf_sort:sort", "perf_sort:sort"),
    ("sort", "perf_sort:sort"),                          # by op mark
    ("perf_sort@test_sort.py", "perf_sort:sort"),
    ("benchmark/test_sort.py::test_perf_sort", "perf_sort:sort"),
    ("dup@dup_b", "dup:dup_b"),
])
def test_names_resolve_statically(name, expected):
    from adapters.flaggems import FlagGemsAdapter
    assert FlagGemsAdapter(flaggems_dir=str(FAKE)).resolve(name) == expected
    assert "flag_gems" not in sys.modules                 # no import needed


def test_ambiguous_and_unknown_names(tmp_path):
    result, _ = bench(tmp_path, "dup")
    assert result.exit_code == 2 and "ambiguous" in result.output and "dup@dup_a" in result.output
    result, _ = bench(tmp_path, "sofmax")
    assert result.exit_code == 2 and "did you mean softmax" in result.output
    assert "Traceback" not in result.output


def test_preflight_failures(tmp_path):
    result = CliRunner().invoke(main, ["bench", "softmax", "--flaggems-dir", str(tmp_path),
                                       "--out", str(tmp_path / "runs"), *FAST])
    assert result.exit_code == 3
    assert "PREFLIGHT_FAILED check=flaggems_dir" in result.output and "benchmark/" in result.output
    broken = tmp_path / "fg"
    shutil.copytree(FAKE, broken)
    (broken / "src" / "flag_gems" / "__init__.py").write_text("raise RuntimeError('no GPU')\n")
    result = CliRunner().invoke(main, ["bench", "softmax", "--flaggems-dir", str(broken),
                                       "--out", str(tmp_path / "runs"), *FAST])
    assert result.exit_code == 3, result.output
    assert "PREFLIGHT_FAILED check=import_flag_gems" in result.output
    assert sys.executable in result.output and "no GPU" in result.output
    assert not (tmp_path / "runs").exists()               # nothing started


def test_a_wrong_vllm_checkout_names_where_it_was_set(tmp_path, monkeypatch):
    """A FLAGGEMS_VLLM_DIR left pointing at a missing folder stops a batch before anything
    runs, and the line says which checkout and which setting, not just a path."""
    monkeypatch.setenv("FLAGGEMS_VLLM_DIR", str(tmp_path / "gone"))
    result = CliRunner().invoke(main, ["batch", "--adapter", "flaggems", "--flaggems-dir",
                                       str(FAKE), "--ops", "vllm:softmax",
                                       "--out", str(tmp_path / "b")])
    assert result.exit_code == 3, result.output
    line = result.output.strip().splitlines()[-1]
    assert "FlagGems-vllm checkout" in line and "FLAGGEMS_VLLM_DIR" in line
    assert str(tmp_path / "gone") in line and "Traceback" not in result.output
    assert not (tmp_path / "b").exists()
    monkeypatch.delenv("FLAGGEMS_VLLM_DIR")
    result = CliRunner().invoke(main, ["batch", "--adapter", "flaggems", "--flaggems-dir",
                                       str(FAKE), "--ops", "vllm:softmax",
                                       "--out", str(tmp_path / "b")])
    assert result.exit_code == 3 and "pass --vllm DIR or set FLAGGEMS_VLLM_DIR" in result.output


def test_a_named_checkout_selects_the_flaggems_adapter(tmp_path, monkeypatch):
    """Without --adapter, naming a checkout means FlagGems: a machine that cannot import it
    gets the preflight's reason, not "unknown op for adapter builtin"."""
    args = ["bench", "layer_norm", "--backend", "cpu", "--out", str(tmp_path / "runs")]
    monkeypatch.delenv("FLAGGEMS_DIR", raising=False)
    result = CliRunner().invoke(main, [*args, "--flaggems-dir", str(tmp_path)])
    assert result.exit_code == 3 and "PREFLIGHT_FAILED check=flaggems_dir" in result.output
    monkeypatch.setenv("FLAGGEMS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 3 and "PREFLIGHT_FAILED check=flaggems_dir" in result.output
    monkeypatch.delenv("FLAGGEMS_DIR")
    # no checkout named and none importable (earlier tests may have left one on sys.path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path
                                      if not (Path(p or ".") / "flag_gems").exists()])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "unknown op 'layer_norm' for adapter builtin" in result.output


def test_foreign_vendor_module_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMS_VENDOR", "nvidia")
    import importlib
    sys.path.insert(0, str(FAKE / "src"))
    importlib.import_module("flag_gems.runtime.backend._mthreads")
    result, _ = bench(tmp_path, "perf_sort:sort")
    assert "FOREIGN_VENDOR_MODULE active=nvidia loaded=mthreads" in result.output


def test_ops_lists_the_corpus_without_importing():
    result = CliRunner().invoke(main, ["ops", "--flaggems-dir", str(FAKE)])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(ln.split()[:3] == ["perf_sort:sort", "benchmark/test_sort.py", "test_perf_sort"]
               for ln in lines)
    assert any("skipif(True" in ln for ln in lines if ln.startswith("skipif_true"))
    assert "flag_gems" not in sys.modules


def test_a_benchmark_file_that_does_not_parse_is_said_not_dropped_silently(tmp_path):
    """A test file of the checkout that Python cannot parse (a merge conflict left in it, a
    wrong encoding) takes its functions out of the corpus; `zlh ops` says which file and why,
    once, and lists the rest."""
    tree = tmp_path / "fg"
    shutil.copytree(FAKE, tree)
    (tree / "benchmark" / "test_conflict.py").write_text("<<<<<<< HEAD\ndef test_x():\n")
    (tree / "benchmark" / "test_latin1.py").write_bytes(b"# caf\xe9\ndef test_y(): pass\n")
    result = CliRunner().invoke(main, ["ops", "--flaggems-dir", str(tree)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 2, result.output
    assert "benchmark/test_conflict.py cannot be read (SyntaxError line 1)" in warnings[0]
    assert "benchmark/test_latin1.py cannot be read (UnicodeDecodeError)" in warnings[1]
    assert "left out of the corpus" in warnings[0]
    assert "softmax" in result.output and "Traceback" not in result.output


def test_a_second_op_in_the_same_process_gets_its_own_dtypes_and_level(tmp_path):
    """A reused worker runs op after op in one process, and the benchmark package binds
    upstream's Config once, at import: each run's dtypes, level and shape file must still be
    the ones that run asked for, never the previous run's."""
    first, _ = bench(tmp_path / "one", "softmax", "--dtypes", "float16")
    assert first.exit_code == 0, first.output
    second, (run_dir,) = bench(tmp_path / "two", "softmax")          # the op's own dtypes
    assert second.exit_code == 0, second.output
    assert sorted({r.dtype for r in rows_of(run_dir)}) == ["float16", "float32"]
    third, (run_dir,) = bench(tmp_path / "three", "softmax", "--dtypes", "float32")
    assert third.exit_code == 0, third.output
    assert {r.dtype for r in rows_of(run_dir)} == {"float32"}
    import benchmark.base
    import benchmark.conftest
    assert benchmark.base.Config is benchmark.conftest.Config       # one Config for all


def test_the_test_modules_autouse_fixtures_run_around_the_measurement(tmp_path):
    """An autouse fixture of the benchmark's own module (upstream's FLA benchmarks install
    Triton's allocator that way) runs before the cases are built and stays set up while they
    are timed; one needing a fixture zlh cannot give is a named SKIP."""
    result, (run_dir,) = bench(tmp_path, "needs_alloc")
    assert result.exit_code == 0, result.output
    rows = rows_of(run_dir)
    assert rows and all(r.status == SUCCESS for r in rows), [r.reason for r in rows]
    import benchmark.test_autouse as module
    assert module.STATE["events"][:1] == ["set up"] and module.STATE["events"][-1] == "torn down"
    result, (run_dir,) = bench(tmp_path / "req", "needs_request")
    (row,) = rows_of(run_dir)
    assert row.status == SKIPPED
    assert "UNSUPPORTED fixture _per_test (autouse) needs request" in row.reason


def test_a_backward_case_differentiates_the_inputs_it_is_given():
    """Backward cases run forward once, then only the gradient; called on other inputs (a
    placement's copy, the output check's) they run forward again on those, or every later
    placement would time the gradient of the first inputs."""
    import torch
    from adapters.flaggems.cases import _backward
    fn = _backward(lambda x: (x * x).sum())
    first = torch.ones(4, requires_grad=True)
    (grad,) = fn(first)
    assert torch.allclose(grad / first, (grad / first)[0].expand(4))
    other = torch.arange(1.0, 5.0, requires_grad=True)
    (grad,) = fn(other)                      # d/dx sum(x²) = 2x · dout: proportional to x
    assert torch.allclose(grad / other, (grad / other)[0].expand(4))
    again = fn(other)[0]
    assert torch.equal(again, grad)          # the same inputs: forward not run again
