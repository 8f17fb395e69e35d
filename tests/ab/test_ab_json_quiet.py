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


def test_json_cut_short_still_holds_the_ops_that_finished(tmp_path, monkeypatch):
    """The CI guide pipes `zlh ab … --json` into a file: Ctrl-C after the first op leaves
    that op's report there, marked interrupted (exit 130)."""
    from harness.ab import orchestrate as abmod
    synthetic_sides(monkeypatch, b_ratio=0.9, sd=0.0002)
    real = abmod.OpAB.run
    calls = []

    def run(self):
        calls.append(self.op)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self)
    monkeypatch.setattr(abmod.OpAB, "run", run)
    result = CliRunner().invoke(main, ["ab", "softmax", "mm", "--adapter", "builtin",
                                       "--backend", "cpu", "--env-b", "X=1", "--json", "-q",
                                       "--fail-on", "slower:2%", "--root", str(tmp_path / "r")])
    assert result.exit_code == 130, result.output
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True and [op["op"] for op in doc["ops"]] == ["softmax"]
    assert doc["fail_on"]["regressions"] == []          # the CI guide's jq step reads it
