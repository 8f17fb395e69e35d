"""Output that fits other tools: colour (NO_COLOR, FORCE_COLOR, --color), the `zlh` logger
(-q, -v), a silent Python API, markdown tables, --json on bench / show / backends, other
libraries' log lines kept off the terminal, `python -m harness` and shell completion."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import harness
from harness.cli import main
from harness.common.schema import schema_path
from conftest import budget_args, CPU, FAST_API, ROOT

TINY = dict(FAST_API, adapter="builtin", backend="cpu", max_time_ms=10.0, dtypes=["float32"])
TINY_ARGS = [*CPU, *budget_args(max_time_ms=10)]
ANSI = "\x1b["


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A record run and a replay of it; builtin add on the CPU is far slower than torch, so
    the speedup column is coloured whenever colour is on."""
    root = tmp_path_factory.mktemp("output")
    run_a = harness.bench("add", out=str(root / "a"), **TINY)
    run_b = harness.bench("add", out=str(root / "b"), replay=str(run_a.run_dir), **TINY)
    return run_a, run_b


@pytest.mark.parametrize("env, args, coloured", [
    ({}, [], False),                                       # not a terminal: no colour
    ({"FORCE_COLOR": "1"}, [], True),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, [], False),    # NO_COLOR wins over FORCE_COLOR
    ({"NO_COLOR": "1"}, ["--color", "always"], True),      # the command line wins over both
    ({"FORCE_COLOR": "1"}, ["--color", "never"], False),
    ({"NO_COLOR": ""}, ["--color", "auto"], False),        # empty NO_COLOR means unset
])
def test_colour_follows_no_color_force_color_and_the_option(runs, env, args, coloured):
    run_a, _ = runs
    result = CliRunner().invoke(main, ["show", str(run_a.run_dir), *args], env=env)
    assert result.exit_code == 0, result.output
    assert (ANSI in result.stdout) is coloured


def test_no_color_also_for_ab_and_bench_tables(runs, tmp_path):
    run_a, run_b = runs
    for env, args in (({"FORCE_COLOR": "1", "NO_COLOR": "1"}, []),
                      ({"FORCE_COLOR": "1"}, ["--color", "never"])):
        result = CliRunner().invoke(main, ["ab", str(run_a.run_dir), str(run_b.run_dir),
                                           *args], env=env)
        assert result.exit_code == 0, result.output
        assert "delta %" in result.stdout and ANSI not in result.stdout
    coloured = CliRunner().invoke(main, ["bench", "add", *TINY_ARGS, "--out", str(tmp_path)],
                                  env={"FORCE_COLOR": "1"})
    assert coloured.exit_code == 0 and ANSI in coloured.stdout
    run_log = next(tmp_path.glob("add_*/run.log")).read_text()
    assert ANSI not in run_log                              # files never get colour


def test_markdown_tables_for_pull_requests(runs):
    run_a, run_b = runs
    shown = CliRunner().invoke(main, ["show", str(run_a.run_dir), "--format", "markdown"])
    assert shown.exit_code == 0
    assert "| caliber " in shown.stdout and "|-----" in shown.stdout
    compared = CliRunner().invoke(main, ["ab", str(run_a.run_dir), str(run_b.run_dir),
                                         "--format", "markdown"])
    assert "| dtype " in compared.stdout and "| delta % " in compared.stdout
    listed = CliRunner().invoke(main, ["backends", "--format", "markdown"])
    assert listed.stdout.startswith("| name ")


def test_python_api_prints_nothing_unless_asked(tmp_path, capfd):
    run = harness.bench("add", out=str(tmp_path / "a"), **TINY)
    replayed = harness.bench("add", out=str(tmp_path / "b"), replay=str(run.run_dir), **TINY)
    report = harness.compare(run, replayed)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    # typed results: rows and caliber, the A/B report
    assert run.caliber.backend == "cpu" and [r.status for r in run.rows] == ["SUCCESS"] * 2
    assert isinstance(report, harness.ABReport) and len(report.rows) == 2
    assert all(row.direction in (-1, 0, 1) for row in report.rows)
    # ... and prints when asked
    harness.bench("add", out=str(tmp_path / "c"), echo=print, progress=print, **TINY)
    out, _ = capfd.readouterr()
    assert "zlh bench add" in out and "[1/2] add float32" in out and "2 ok, 0 failed" in out


def test_api_progress_through_the_zlh_logger_when_configured(tmp_path, caplog, monkeypatch):
    from harness.common import log
    caplog.set_level(logging.DEBUG, logger="zlh")
    monkeypatch.setattr(log.LOGGER, "propagate", True)   # as in a process without the CLI
    harness.bench("add", out=str(tmp_path), progress=log.progress, **TINY)
    messages = [r.getMessage() for r in caplog.records if r.name == "zlh"]
    assert any(m.startswith("[1/2] add float32") for m in messages)
    assert any(m.startswith("compiler under test: triton") for m in messages)


def test_cli_logger_quiet_and_verbose(tmp_path):
    args = ["bench", "add", *TINY_ARGS, "--out", str(tmp_path)]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 0 and "[1/2] add float32" in plain.stderr
    assert "compiler under test" not in plain.stderr
    quiet = CliRunner().invoke(main, [*args, "-q"])
    assert quiet.exit_code == 0 and "[1/2] add" not in quiet.stderr
    assert "zlh bench add" in quiet.stdout                 # results still on stdout
    verbose = CliRunner().invoke(main, [*args, "-v"])
    assert "compiler under test: triton" in verbose.stderr


def _validate(name: str, doc) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(schema_path(name).read_text()))
    errors = list(validator.iter_errors(doc))
    assert not errors, errors[0].message


def test_json_output_of_bench_show_and_backends(tmp_path):
    bench = CliRunner().invoke(main, ["bench", "add", *TINY_ARGS, "--out", str(tmp_path),
                                      "--json"])
    assert bench.exit_code == 0, bench.output
    doc = json.loads(bench.stdout)                         # stdout is the JSON alone
    assert doc["schema_version"] == 1 and doc["zlh_version"] == harness.__version__
    (run,) = doc["runs"]
    assert run["exit_code"] == 0 and len(run["rows"]) == 2
    assert "samples_ms" not in run["rows"][0]["gems"]
    shown = CliRunner().invoke(main, ["show", run["run_dir"], "--json"])
    doc = json.loads(shown.stdout)
    _validate("run", doc["run"])
    assert doc["status"] == "complete" and doc["zlh_version"] == harness.__version__
    for row in doc["rows"]:
        _validate("result_row", {"schema_version": 1, "zlh_version": "x", **row})
    listed = json.loads(CliRunner().invoke(main, ["backends", "--json"]).stdout)
    assert {"cpu", "cuda"} <= {b["name"] for b in listed["backends"]}
    assert listed["adapters"][:3] == ["builtin", "flaggems", "user"]


CASES = textwrap.dedent('''
    import logging
    import torch
    import harness

    def noisy(x):
        # what a library does when it registers its operators on every call
        logging.warning("Skipped registering operator aten::add.Tensor")
        logging.getLogger("somelib.ops").warning("fallback for %s", "add")
        return x + 1

    cases = harness.Case.sweep(fn=noisy, baseline=lambda x: x + 1,
                               make_inputs=lambda shape, dtype: torch.randn(shape, dtype=dtype),
                               shapes=[[16], [32]], dtypes=["float32"])
''')


@pytest.mark.e2e
def test_library_log_lines_go_to_run_log_once(tmp_path):
    (tmp_path / "noisy_cases.py").write_text(CASES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "harness", "bench", "--cases",
                           "noisy_cases:cases", "--backend", "cpu", "--out", str(tmp_path),
                           "--warmup-ms", "1", "--min-samples", "3", "--min-time-ms", "0",
                           "--max-time-ms", "10"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Skipped registering" not in proc.stdout + proc.stderr
    assert "fallback for add" not in proc.stdout + proc.stderr
    assert "log line(s) of other libraries (2 distinct) went to" in proc.stderr
    (run_dir,) = [p for p in tmp_path.glob("cases_*") if p.is_dir()]
    log_lines = (run_dir / "run.log").read_text().splitlines()
    first = [ln for ln in log_lines if ln.startswith("LIBRARY_LOG logger=root level=WARNING")
             and "count=" not in ln]
    assert first == ["LIBRARY_LOG logger=root level=WARNING detail=Skipped registering "
                     "operator aten::add.Tensor"]
    repeated = [ln for ln in log_lines if "logger=somelib.ops" in ln and "count=" in ln]
    assert len(repeated) == 1 and "repeated" in repeated[0]
    info = json.loads((run_dir / "run.json").read_text())
    assert info["library_log"]["distinct"] == 2 and info["library_log"]["records"] > 4


@pytest.mark.e2e
def test_python_m_harness_is_zlh():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "harness", "--version"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"zlh {harness.__version__}"


def _complete(words: str) -> list[str]:
    """What bash completion offers for `words`: click's completion protocol, run in this
    process (the script bash loads is checked in a real process below)."""
    env = {"_ZLH_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    result = CliRunner().invoke(main, [], env=env, prog_name="zlh")
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if "," in line]


def test_shell_completion_of_backends_adapters_ops_and_files(tmp_path):
    assert {"cpu", "cuda"} <= set(_complete("zlh bench --backend c"))
    assert _complete("zlh bench --adapter bu") == ["builtin"]
    assert "softmax" in _complete("zlh bench --adapter builtin so")
    assert "mm" in _complete("zlh bench --adapter builtin ")
    assert "softmax" in _complete("zlh ab --adapter builtin so")        # ops of an A/B too
    assert "softmax" in _complete("zlh calibrate --adapter builtin so")
    script = subprocess.run([sys.executable, "-c", "from harness.cli import main; "
                             "main(prog_name='zlh')"],
                            env=dict(os.environ, PYTHONPATH=str(ROOT),
                                     _ZLH_COMPLETE="bash_source"),
                            capture_output=True, text=True, timeout=120)
    assert "_zlh_completion" in script.stdout
