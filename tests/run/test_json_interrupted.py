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
