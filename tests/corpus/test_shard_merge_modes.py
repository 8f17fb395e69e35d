"""`zlh merge` of screens run with `--timing changed` and of shards run another way: the merged
root holds the timed pairs (A.timed/, B.timed/) and reads, rescores and reports as the
unsharded screen does; shards of another timing mode are refused; shards that differ only in
how their ops ran (overlap, the stall timeout) merge, the merged plan naming the difference.
The report of the unsharded screen takes its IR_CHANGED rows from the timed pair.

Two user ops compiled for a GPU target (tests/ir_kernels.py, the cases of
test_screen_timing.py): `changed` (IR_CHANGED, timed) falls in shard 1/2, `same` (NO_IR_DIFF,
never timed) in shard 2/2."""
from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FAST, importable_cases
from harness.cli import main
from harness.corpus.verdict import read_tsv
from harness.report import corpus as corpus_report
from switch_cases import CASES

TIMES = ("elapsed_s", "run_dir", "torch_ms", "gems_ms", "speedup", "elapsed_a", "elapsed_b",
         "median_delta_pct", "note")


def zlh(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def screen(*args):
    return zlh("screen", "--cases", "ir_cases:cases", "--ops", "changed,same", "--backend",
               "cpu", *FAST, "--switch", "ZLH_TEST_SWITCH=0,1", *args)


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """The unsharded `--timing changed` screen (`whole`), its shards 1/2 (`s1`, stall timeout
    120) and 2/2 (`s2`, with --overlap and stall timeout 60), and shard 2/2 run with
    `--timing none` (`none2`)."""
    base = tmp_path_factory.mktemp("modes")
    mp = pytest.MonkeyPatch()
    importable_cases(mp, base, "ir_cases", CASES)
    runs = {"whole": ("--timing", "changed", "--stall-timeout", "120"),
            "s1": ("--timing", "changed", "--stall-timeout", "120", "--shard", "1/2"),
            "s2": ("--timing", "changed", "--stall-timeout", "60", "--overlap",
                   "--shard", "2/2"),
            "none2": ("--timing", "none", "--stall-timeout", "120", "--shard", "2/2")}
    try:
        for name, args in runs.items():
            result = screen(*args, "--root", base / name)
            assert result.exit_code == 0, result.output
    finally:
        mp.undo()
    return base


def rows(path: Path, sep: str = ",") -> list[dict]:
    with open(path, newline="") as f:
        return [{k: v for k, v in row.items() if k not in TIMES}
                for row in csv.DictReader(f, delimiter=sep)]


def verdicts(root: Path) -> dict:
    return {r["op"]: (r["verdict"], r["timed"], r["median_delta_pct"] != "-")
            for r in read_tsv(root / "screen.tsv")}


@pytest.mark.e2e
def test_a_timing_changed_screen_merges_as_the_unsharded_one(roots, tmp_path):
    whole, out = roots / "whole", tmp_path / "m"
    assert verdicts(whole) == {"changed": ("IR_CHANGED", "yes", True),
                               "same": ("NO_IR_DIFF", "no", False)}
    result = zlh("merge", roots / "s2", roots / "s1", "--out", out)
    assert result.exit_code == 0, result.output
    assert verdicts(out) == verdicts(whole)
    assert rows(out / "screen.tsv", "\t") == rows(whole / "screen.tsv", "\t")
    assert json.loads((out / "screen.json").read_text())["timing"] == "changed"
    for side in ("A", "B", "A.timed", "B.timed"):
        for name in ("ops_status.csv", "summary.csv"):
            assert rows(out / side / name) == rows(whole / side / name), (side, name)
        plan = json.loads((out / side / "batch.json").read_text())
        assert plan["screen_side"] == side and [o["op"] for o in plan["ops"]] == \
            ["changed", "same"]
    for side in ("A.timed", "B.timed"):               # the timed pair, linked, not copied
        assert not (out / side / "same").exists()
        done = json.loads((out / side / "changed" / ".complete").read_text())
        run = out / side / done["run_dir"]
        assert json.loads(run.joinpath("results.jsonl").read_text().splitlines()[0])[
            "gems"]["samples_ms"]
        assert os.stat(run / "run.json").st_ino == \
            os.stat(roots / "s1" / side / done["run_dir"] / "run.json").st_ino
    rescored = zlh("screen", "--rescore", out)
    assert rescored.exit_code == 0, rescored.output
    assert verdicts(out) == verdicts(whole)
    report = zlh("report", out)
    assert report.exit_code == 0 and "changed" in report.output, report.output
    # the report reads IR_CHANGED's shapes and range from the merged timed pair
    entries = {e.op: e for e in corpus_report.screen(out, tmp_path).ops}
    assert entries["changed"].shapes and entries["changed"].low is not None


@pytest.mark.e2e
def test_the_report_of_a_timing_changed_screen_shows_the_timed_pair(roots, tmp_path):
    root = roots / "whole"
    report = corpus_report.screen(root, tmp_path)
    assert "timer=none" not in report.headline.caliber      # the timed pair's caliber
    assert "inputs=device" in report.headline.caliber
    entries = {e.op: e for e in report.ops}
    changed, same = entries["changed"], entries["same"]
    # IR_CHANGED: its shapes and range come from the timed pair (A/ and B/ timed nothing)
    assert changed.shapes and changed.shapes[0].delta is not None
    assert changed.low is not None and changed.high is not None
    assert any("A.timed" in target for _, target in changed.links)
    # NO_IR_DIFF, untimed: no delta at all (not a 0 % noise floor), and no noise floor
    assert not same.noise and same.delta is None and same.low is None
    assert not any(s.delta for s in same.shapes)
    text = zlh("report", root)
    assert text.exit_code == 0, text.output
    line = next(x for x in text.output.splitlines() if x.startswith("changed "))
    assert re.search(r"[+-]\d+\.\d+ ~ [+-]\d+\.\d+", line), line
    page = zlh("report", root, "--html", tmp_path / "p.html")
    assert page.exit_code == 0, page.output


@pytest.mark.e2e
def test_shards_of_other_timing_modes_are_refused(roots, tmp_path):
    result = zlh("merge", roots / "s1", roots / "none2", "--out", tmp_path / "m")
    assert result.exit_code == 2, result.output
    assert "other --timing mode" in result.output and "'none' vs 'changed'" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "m").exists()


@pytest.mark.e2e
def test_shards_run_another_way_merge_and_the_plan_says_how_each_ran(roots, tmp_path):
    plans = [json.loads((roots / s / "screen.json").read_text())["batch"] for s in ("s1", "s2")]
    assert [(p["overlap"], p["stall_timeout_s"]) for p in plans] == [(False, 120), (True, 60)]
    out = tmp_path / "m"
    result = zlh("merge", roots / "s1", roots / "s2", "--out", out)
    assert result.exit_code == 0, result.output
    for plan in (json.loads((out / "screen.json").read_text())["batch"],
                 json.loads((out / "A.timed" / "batch.json").read_text())):
        assert (plan["overlap"], plan["stall_timeout_s"]) == (False, 120)    # shard 1's
        merged = plan["merged"]
        assert merged["differing"] == ["overlap", "stall_timeout_s"]
        assert [(s["k"], s["overlap"], s["stall_timeout_s"], s["executor"])
                for s in merged["shards"]] == [(1, False, 120, "local"), (2, True, 60, "local")]
