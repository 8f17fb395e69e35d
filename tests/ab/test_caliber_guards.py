"""Guards the caliber gained: the library's tuning-space switches (USE_FLAGTUNE) must be equal
on both sides of an A/B (refused like a caliber mismatch, exit 4, unless
--allow-caliber-mismatch), and the card each side ran on is recorded (different cards of one
model: a warning only)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, budget_args
from harness.ab import guard
from harness.cli import main
from harness.store.reader import load_run
from fake_runs import fake_run

import adapters

FAKE = FIXTURES / "fake_flaggems"
FAST = [*budget_args(max_time_ms=10), "--backend", "cpu", "--adapter", "flaggems"]


pytestmark = pytest.mark.usefixtures("fresh_flaggems_modules")


def test_flaggems_tuning_space_is_the_switches_that_are_on():
    adapter = adapters.get_adapter("flaggems", flaggems_dir=str(FAKE))
    assert adapter.tuning_space({"USE_FLAGTUNE": "1"}) == {"USE_FLAGTUNE": "1"}
    assert adapter.tuning_space({"USE_FLAGTUNE": "0"}) == {} == adapter.tuning_space({})
    assert adapters.get_adapter("builtin").tuning_space({"USE_FLAGTUNE": "1"}) == {}


def test_a_run_records_its_tuning_space_and_card(tmp_path, monkeypatch):
    monkeypatch.setenv("USE_FLAGTUNE", "1")
    result = CliRunner().invoke(main, ["bench", "softmax", "--flaggems-dir", str(FAKE),
                                       "--out", str(tmp_path / "runs"), *FAST])
    assert result.exit_code == 0, result.output
    import flag_gems                       # the fixture read the switch at import
    assert flag_gems.FLAGTUNE
    (run_dir,) = (tmp_path / "runs").iterdir()
    caliber = json.loads((run_dir / "run.json").read_text())["caliber"]
    assert caliber["tuning_space"] == {"USE_FLAGTUNE": "1"}
    assert "card" in caliber and load_run(run_dir).caliber.tuning_space == {"USE_FLAGTUNE": "1"}


def test_ab_with_different_tuning_spaces_is_refused_before_anything_runs(tmp_path):
    root = tmp_path / "ab"
    args = ["ab", "softmax", "--flaggems-dir", str(FAKE), *FAST, "--root", str(root),
            "--env-a", "USE_FLAGTUNE=1", "--env-b", "USE_FLAGTUNE=0"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 4, result.output
    assert "tuning_space differs (USE_FLAGTUNE: A=1 B=off)" in result.output
    assert "--allow-caliber-mismatch" in result.output and not root.exists()


def test_guard_refuses_other_tuning_spaces_and_warns_on_other_cards(tmp_path):
    a = fake_run(tmp_path, "a", caliber={"card": "GPU-aaaa"})
    b = fake_run(tmp_path, "b", mode="replay", replay_from=a,
                 caliber={"card": "GPU-bbbb"})
    check = guard.check_caliber(load_run(a), load_run(b))
    assert check.ok and check.warnings == [
        "WARNING [caliber] add: the sides ran on different cards of one model "
        "(A=GPU-aaaa, B=GPU-bbbb): card-to-card spread is part of the difference"]
    same = fake_run(tmp_path, "same", mode="replay", replay_from=a, caliber={"card": "GPU-aaaa"})
    assert guard.check_caliber(load_run(a), load_run(same)).warnings == []
    tuned = fake_run(tmp_path, "tuned", mode="replay", replay_from=a,
                     caliber={"card": "GPU-aaaa", "tuning_space": {"USE_FLAGTUNE": "1"}})
    check = guard.check_caliber(load_run(a), load_run(tuned))
    assert not check.ok and check.problems[0].startswith(
        '!!! [caliber] add: tuning_space differs: A={}, B={"USE_FLAGTUNE": "1"}')
    # a run written before these fields: the default space, card unknown (no warning)
    old = fake_run(tmp_path, "old", mode="replay", replay_from=a)
    assert guard.check_caliber(load_run(a), load_run(old)).ok
    assert load_run(old).caliber.card == ""
