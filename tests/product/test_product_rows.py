"""Product campaign rows: a workload may name the one parametrized call it measures
(`benchmark`, with `benchmark_scope_reason`), and its accuracy tests take extra pytest
arguments (`correctness.pytest_args`), recorded in the correctness receipt. The adapter's
`op[CALL]` form behind the selector is checked too."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from harness.cli import main
from harness.product import cells as cells_mod
from harness.product import runner as runner_mod
from harness.product.validate import violations
from harness.store.reader import read_rows

from product_fakes import FakeCells, Spec, builtin_doc, flaggems_doc, mutated, no_contract, write

FAKE = FIXTURES / "fake_flaggems"


pytestmark = pytest.mark.usefixtures("fresh_flaggems_modules")


def cli(*args):
    return CliRunner().invoke(main, ["product", *map(str, args)])


def test_op_with_a_call_id_runs_that_parametrized_call_only(tmp_path):
    fast = ["--warmup-ms", "1", "--min-samples", "3", "--min-time-ms", "0", "--max-time-ms",
            "10", "--backend", "cpu", "--adapter", "flaggems", "--flaggems-dir", str(FAKE)]
    result = CliRunner().invoke(main, ["bench", "scaled_abs:misc[float32-2]", *fast,
                                       "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert rows and {r.variant for r in rows} == {"abs_x2[float32-2]"}
    info = json.loads((run_dir / "run.json").read_text())
    assert info["adapter"]["node"] == "benchmark/test_misc.py::test_scaled_abs[float32-2]"
    result = CliRunner().invoke(main, ["bench", "scaled_abs:misc[nope]", *fast,
                                       "--out", str(tmp_path / "runs2")])
    (run_dir,) = (tmp_path / "runs2").iterdir()
    (row,) = read_rows(run_dir / "results.jsonl")
    assert "no parametrized call 'nope'" in row.markers[0] and "float32-2" in row.markers[0]


@pytest.mark.parametrize("change, expected", [
    (lambda w: w.update(benchmark="dtype0"),
     "workloads[0].benchmark_scope_reason: narrowing the benchmark to one call needs"),
    (lambda w: w.update(benchmark_scope_reason="why"),
     "workloads[0].benchmark_scope_reason: given without benchmark"),
    (lambda w: w.update(benchmark="a[b]", benchmark_scope_reason="r"),
     "workloads[0].benchmark: a parametrized call's id without brackets"),
    (lambda w: w.update(correctness={"file": "t.py", "pytest_args": "-q"}),
     "workloads[0].correctness.pytest_args: must be a list of non-empty strings"),
    (lambda w: w.update(correctness={"file": "t.py", "pytest_args": ["--rootdir=/x"]}),
     "workloads[0].correctness.pytest_args: '--rootdir=/x' would change"),
])
def test_manifest_rows_are_checked(tmp_path, change, expected):
    doc = mutated(builtin_doc(tmp_path), lambda d: change(d["workloads"][0]))
    assert any(expected in p for p in violations(doc)), violations(doc)


def test_benchmark_selector_is_frozen_and_pytest_args_reach_the_receipt(tmp_path, monkeypatch):
    monkeypatch.setattr(cells_mod, "run_fresh", FakeCells(
        {("mm", "cand"): Spec(kernels=[("hot", 1, 100)], code="v2")}))
    monkeypatch.setattr(runner_mod, "check_contract", no_contract)
    doc = flaggems_doc(tmp_path)
    doc["workloads"][0]["correctness"]["pytest_args"] = ["-p", "no:warnings", "-p",
                                                         "no:doctest", "--tb=line"]
    doc["workloads"].append({"id": "abs2", "op": "scaled_abs", "op_file": "misc",
                             "family": "pointwise", "cost": "light", "canary": False,
                             "correctness": None, "benchmark": "float32-2",
                             "benchmark_scope_reason": "the other scales are the same kernel"})
    doc["protocol"]["canary_gate"] = {"classes": {"mm": ["G", "C", "B", "K", "X"]}}
    manifest = write(tmp_path / "m.json", doc)
    result = cli("prepare", manifest, "--selection", "all", "--dry-run")
    assert result.exit_code == 0, result.output          # the selector resolves in the corpus
    assert cli("prepare", manifest, "--selection", "canary", "--out", tmp_path).exit_code == 0
    frozen = tmp_path / "fake-lib-v1--canary"
    (task,) = json.loads((frozen / "task-matrix.json").read_text())["tasks"]
    assert task["correctness"]["pytest_args"][-1] == "--tb=line"
    result = cli("run", frozen)
    assert result.exit_code == 0, result.output
    check = json.loads((frozen / "run/tasks/mm/correctness/candidate/correctness-receipt.json")
                       .read_text())
    tests = check["accuracy_tests"]
    assert tests["pytest_args"] == ["-p", "no:warnings", "-p", "no:doctest", "--tb=line"]
    assert tests["command"][-5:] == tests["pytest_args"] and tests["status"] == "PASS"


def test_the_selector_is_in_the_plan_and_ops_file(tmp_path):
    doc = flaggems_doc(tmp_path)
    doc["workloads"][0].update(benchmark="x", benchmark_scope_reason="r")
    doc["workloads"][0]["op"], doc["workloads"][0]["op_file"] = "scaled_abs", "misc"
    doc["workloads"][0]["benchmark"] = "float32-2"
    doc["protocol"]["canary_order"] = ["mm"]
    manifest = write(tmp_path / "m.json", doc)
    result = cli("prepare", manifest, "--selection", "canary", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    frozen = tmp_path / "fake-lib-v1--canary"
    (task,) = json.loads((frozen / "task-matrix.json").read_text())["tasks"]
    assert task["op_name"] == "scaled_abs:misc[float32-2]"
    assert (task["benchmark"], task["benchmark_scope_reason"]) == ("float32-2", "r")
    assert (frozen / "ops.txt").read_text().startswith("scaled_abs:misc[float32-2]:")
