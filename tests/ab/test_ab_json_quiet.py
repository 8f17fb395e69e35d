"""`zlh ab OP … --json -q`: stdout holds the JSON alone and stderr only warnings and
refusals (the CI guide's `> ab.json` form); without -q the tables go to stderr."""
from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from test_rounds_auto import synthetic_sides


def test_json_with_q_prints_no_tables(tmp_path, monkeypatch):
    synthetic_sides(monkeypatch, b_ratio=0.9, sd=0.0002)
    args = ["ab", "softmax", "--adapter", "builtin", "--backend", "cpu", "--env-b", "X=1",
            "--rounds", "2", "--json"]
    quiet = CliRunner().invoke(main, [*args, "-q", "--root", str(tmp_path / "q")])
    assert quiet.exit_code == 0, quiet.output
    assert json.loads(quiet.stdout)["ops"][0]["op"] == "softmax"
    assert quiet.stderr == ""
    loud = CliRunner().invoke(main, [*args, "--root", str(tmp_path / "l")])
    assert "verdict:" in loud.stderr and json.loads(loud.stdout)["ops"], loud.stderr
