"""`zlh bench --json` cut short by Ctrl-C: stdout still holds the JSON, of the runs finished
and the one cut short with the cases it measured, marked interrupted (exit 130)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from harness.run import runner
from conftest import CPU_FAST


def test_json_holds_what_was_measured_when_interrupted(tmp_path, monkeypatch):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64], [128], [256]]\n")
    earlier = CliRunner().invoke(main, ["bench", "add", *CPU_FAST, "--shapes", str(shapes),
                                        "--out", str(tmp_path / "earlier"), "-q"])
    assert earlier.exit_code == 0        # a run this process made before: not in the JSON
    real, calls = runner.measure_case, []

    def measure_then_stop(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(runner, "measure_case", measure_then_stop)
    result = CliRunner().invoke(main, ["bench", "add", *CPU_FAST, "--shapes", str(shapes),
                                       "--out", str(tmp_path / "r"), "--json", "-q"])
    assert result.exit_code == 130, result.output
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True and doc["exit_code"] == 130
    (run,) = doc["runs"]
    assert run["status"] == "interrupted"
    assert [r["shape_detail"] for r in run["rows"]] == ["64", "128"]
    assert f"interrupted; cases measured so far are in {run['run_dir']}" in result.stderr


def test_an_interrupt_before_the_run_began_leaves_no_directory_named(tmp_path, monkeypatch):
    """Ctrl-C while the run directory is being set up: the directory goes (nothing was
    measured), the JSON holds no run and the line names none."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner, "device_identity", interrupted)
    result = CliRunner().invoke(main, ["bench", "add", *CPU_FAST, "--out", str(tmp_path / "r"),
                                       "--json", "-q"])
    assert result.exit_code == 130, result.output
    assert json.loads(result.stdout)["runs"] == []
    assert "nothing was measured yet (no run directory was made)" in result.stderr


def test_a_parallel_sweep_cut_short_still_prints_its_json(tmp_path, monkeypatch):
    """--parallel-sweep's measurement is cut short: stdout holds the JSON of the runs this
    command made (here one, finished before the interrupt), marked interrupted."""
    import harness.cli.bench as bench_cli

    def one_run_then_stop(ops, options, *args):
        runner.run_bench(["add"], options, echo=lambda _: None)
        raise KeyboardInterrupt
    monkeypatch.setattr(bench_cli, "bench_with_sweep", one_run_then_stop)
    result = CliRunner().invoke(main, ["bench", "add", "mul", *CPU_FAST, "--out",
                                       str(tmp_path / "r"), "--parallel-sweep", "2",
                                       "--sweep-devices", "0,1", "--json", "-q"])
    assert result.exit_code == 130, result.output
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True and [r["op"] for r in doc["runs"]] == ["add"]
    assert f"interrupted; cases measured so far are in {doc['runs'][0]['run_dir']}" in \
        result.stderr
