"""The Python API refuses bad arguments with the documented exception types (UsageError, with
its exit code) before any run directory exists: no AttributeError or TypeError from deep
inside, no run directory left behind by an argument checked too late."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

import harness
from harness import StoppingRule, UsageError

from fake_runs import fake_run
from conftest import FAST_API

FAST = dict(FAST_API, adapter="builtin", backend="cpu")


@pytest.fixture
def shapes(tmp_path):
    path = tmp_path / "add.yaml"
    path.write_text("add: [[64]]\n")
    return str(path)


@pytest.mark.parametrize("keywords, message", [
    (dict(rule={"min_samples": 3}), "option rule: expected a harness.StoppingRule, got dict"),
    (dict(rule=5), "option rule: expected a harness.StoppingRule"),
    (dict(budget="x"), "option budget: expected a harness.Budget, got str"),
    (dict(argv=5), "option argv: expected a list of arguments"),
    (dict(telemetry_interval=1e308), "option telemetry_interval: 1e+308 is above its maximum"),
    (dict(plant_pct=5000.0), "option plant_pct: 5000.0 is above its maximum 1000"),
    (dict(echo=5), "echo must be a function taking one line"),
    (dict(progress="x"), "progress must be a function taking one line"),
], ids=["rule_dict", "rule_int", "budget_str", "argv_int", "telemetry_huge", "plant_huge",
        "echo_int", "progress_str"])
def test_bench_refuses_bad_arguments_before_a_run_directory(tmp_path, shapes, keywords,
                                                            message):
    out = tmp_path / "out"
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("+", r"\+")):
        harness.bench("add", shapes=shapes, out=str(out), **FAST, **keywords)
    assert not out.exists()


def test_bench_many_takes_any_iterable_of_names_and_refuses_the_rest(tmp_path, shapes):
    with pytest.raises(UsageError, match="ops must be a list of names, got 5"):
        harness.bench_many(5, shapes=shapes, out=str(tmp_path / "x"), **FAST)
    with pytest.raises(UsageError, match="ops must be a list of names"):
        harness.bench_many("add", shapes=shapes, out=str(tmp_path / "x"), **FAST)
    assert not (tmp_path / "x").exists()
    runs = harness.bench_many((op for op in ["add"]), shapes=shapes, out=str(tmp_path / "g"),
                              **FAST)
    assert [r.rows[0].op for r in runs] == ["add"]       # a generator is not read twice


@pytest.fixture
def pair(tmp_path):
    (tmp_path / "sh").mkdir()
    (tmp_path / "sh" / "add.yaml").write_text("add: [[64]]\n")
    rec = fake_run(tmp_path, "rec")
    return rec, fake_run(tmp_path, "rep", mode="replay", replay_from=rec)


@pytest.mark.parametrize("keywords, message", [
    (dict(alpha=math.nan), "alpha must be a number between 0 and 1, got nan"),
    (dict(alpha=5), "alpha must be a number between 0 and 1, got 5"),
    (dict(alpha="x"), "alpha must be a number between 0 and 1"),
    (dict(scrub="("), "scrub must be a list of regular expressions, got '\\('"),
    (dict(scrub=["("]), "bad scrub pattern"),
    (dict(allow_caliber_mismatch="no"), "allow_caliber_mismatch must be True or False"),
    (dict(root=""), "root: an empty path is not a directory"),
    (dict(root=5), "root must be a directory path, got int"),
], ids=["alpha_nan", "alpha_5", "alpha_str", "scrub_str", "scrub_bad", "allow_str",
        "root_empty", "root_int"])
def test_compare_refuses_bad_arguments(pair, keywords, message):
    with pytest.raises(UsageError, match=message):
        harness.compare(*pair, **keywords)


def test_compare_refuses_a_root_that_is_a_file_and_a_run_compared_with_itself(tmp_path, pair):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError, match="root .*afile: exists and is not a directory"):
        harness.compare(*pair, root=str(afile))
    rep = pair[1]
    with pytest.raises(UsageError, match="are the same run directory"):
        harness.compare(rep, Path(str(rep) + "/"))
    report = harness.compare(*pair, root=str(tmp_path / "ab"))
    assert report.rows and (tmp_path / "ab" / "report.json").is_file()


def test_stopping_rule_given_whole_is_taken():
    options = harness.BenchOptions.from_flat(rule=StoppingRule(min_samples=7))
    assert options.rule.min_samples == 7
    assert harness.BenchOptions.from_flat(rule=None).rule == StoppingRule()
