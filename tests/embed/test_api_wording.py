"""Errors speak to their caller: the Python API (harness.bench, harness.measure,
BenchOptions.from_flat) names the keyword (`max_time_ms`), the command line the flag
(`--max-time-ms`) — the option table knows both."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import harness
from harness.cli import main
from harness.common.errors import UsageError
from harness.run.options import BenchOptions

CPU = dict(adapter="builtin", backend="cpu")


@pytest.mark.parametrize("call", [
    lambda: BenchOptions.from_flat(max_time_ms=1.0, min_time_ms=5.0),
    lambda: harness.bench("add", max_time_ms=1.0, min_time_ms=5.0, **CPU),
    lambda: harness.measure(lambda: None, max_time_ms=1.0, min_time_ms=5.0),
])
def test_the_api_names_keywords(call):
    with pytest.raises(UsageError) as caught:
        call()
    text = str(caught.value)
    assert text == "max_time_ms 1 is below min_time_ms 5; give a min_time_ms at most 1"
    assert "--" not in text


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(l2="flush"), "l2='flush' needs device events (timer='event')"),
    (dict(plant_pct=5.0), "plant_pct needs replay (side A's run)"),
    (dict(min_samples=0), "option min_samples: 0 is below its minimum 1"),
    (dict(replay="/nonexistent/run"), "replay='/nonexistent/run': no such run directory"),
])
def test_api_errors_from_the_run_plan_name_keywords(kwargs, fragment):
    with pytest.raises(UsageError) as caught:
        harness.bench("add", **CPU, **kwargs)
    assert fragment in str(caught.value) and "--" not in str(caught.value), caught.value


@pytest.mark.parametrize("args, fragment", [
    (["--max-time-ms", "1", "--min-time-ms", "5"],
     "--max-time-ms 1 is below --min-time-ms 5; give a --min-time-ms at most 1"),
    (["--l2", "flush"], "--l2 flush needs device events (--timer event)"),
    (["--plant-pct", "5"], "--plant-pct needs --replay RUN_A"),
    (["--replay", "/nonexistent/run"], "--replay /nonexistent/run: no such run directory"),
])
def test_the_command_line_names_flags(args, fragment):
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr, result.stderr
    # and the API is not left speaking flags after a command ran in this process
    with pytest.raises(UsageError, match="^max_time_ms 1 is below"):
        BenchOptions.from_flat(max_time_ms=1.0, min_time_ms=5.0)
