"""A switch the adapter cannot read fails every op alike: `zlh screen` refuses it on a side
(as `zlh ab` does) and `zlh batch` in its own environment, one line before anything runs; a
run that ends as bad input (exit 2) is not run again — the retry would read the same input."""
from __future__ import annotations

import csv

from click.testing import CliRunner

from harness.cli import main
from conftest import CPU_FAST


def test_a_side_switch_the_adapter_refuses_stops_the_screen_before_it_starts(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64]]\n")
    root = tmp_path / "sc"
    result = CliRunner().invoke(main, ["screen", "--ops", "add", *CPU_FAST, "--shapes",
                                       str(shapes), "--env-b", "ZLH_BUILTIN_SLOW=bogus",
                                       "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert "side B: ZLH_BUILTIN_SLOW='bogus' is not a switch value" in result.output
    assert not root.exists()


def test_a_batch_whose_environment_every_run_would_refuse_stops_first(tmp_path, monkeypatch):
    monkeypatch.setenv("ZLH_BUILTIN_SLOW", "bogus")
    out = tmp_path / "b"
    result = CliRunner().invoke(main, ["batch", "--ops", "add", *CPU_FAST, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "ZLH_BUILTIN_SLOW='bogus' is not a switch value" in result.output
    assert not out.exists()


def test_a_run_that_ends_as_bad_input_is_not_retried(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64]]\n")                   # no entry for softmax
    out = tmp_path / "b"
    result = CliRunner().invoke(main, ["batch", "--ops", "add,softmax", *CPU_FAST, "--shapes",
                                       str(shapes), "--retries", "2", "--out", str(out)])
    assert result.exit_code == 1, result.output
    rows = {r["op"]: r for r in csv.DictReader(open(out / "ops_status.csv"))}
    assert rows["add"]["status"] == "PASS"
    assert (rows["softmax"]["status"], rows["softmax"]["attempts"], rows["softmax"]["rc"]) == \
        ("FAIL", "1", "2")
    assert "retry_rc" not in rows["softmax"]["notes"]
