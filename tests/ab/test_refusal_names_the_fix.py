"""`zlh ab RUN_A RUN_B` on two runs that both recorded their configs is refused (exit 4) with
the command that fixes it: `zlh ab --replay RUN_A`."""
from __future__ import annotations

import shlex

from click.testing import CliRunner

from fake_runs import fake_run
from harness.cli import main


def test_two_recording_runs_are_refused_with_the_replay_command(tmp_path):
    a = fake_run(tmp_path / "runs dir", "add_a")
    b = fake_run(tmp_path / "runs dir", "add_b")
    result = CliRunner().invoke(main, ["ab", str(a), str(b)])
    assert result.exit_code == 4, result.output
    assert f"zlh ab --replay {shlex.quote(str(a))}" in result.output
