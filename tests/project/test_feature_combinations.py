"""Features that landed apart, used together: a replay of an untimed, paced, upstream-input or
kernel-split run (`zlh ab --replay`), the caliber guard over inputs and pacing, a screen's
inputs and pacing in its table and in the `zlh ab` commands of a campaign on it. (The report
of a `--timing changed` screen, its IR_CHANGED rows from the timed pair, and of merged shards
of one: test_shard_merge_modes, on the screens that module makes once.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness
from harness.ab.guard import check_caliber
from harness.cli import main
from harness.corpus.campaign import card_command, plan_campaign
from harness.corpus.verdict import NO_TRITON, read_tsv
from harness.store.reader import load_run
from conftest import FAST, FAST_API

SHAPES = "add: [[64]]\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Runs of the builtin add, each made once: untimed, paced with upstream inputs and a
    kernel split, and plain."""
    base = tmp_path_factory.mktemp("combos")
    shapes = base / "add.yaml"
    shapes.write_text(SHAPES)
    common = dict(adapter="builtin", backend="cpu", shapes=str(shapes), **FAST_API)
    runs = {"base": base, "shapes": shapes}
    for name, extra in (("untimed", {"timing": False}),
                        ("paced", {"inputs": "upstream", "pace_us": 5.0, "kernel_split": True}),
                        ("plain", {})):
        runs[name] = Path(harness.bench("add", out=str(base / name), **common, **extra).run_dir)
    return runs


@pytest.mark.e2e
def test_replaying_an_untimed_run_is_refused_before_side_b_runs(made):
    root = made["base"] / "ab_untimed"
    result = CliRunner().invoke(main, ["ab", "--replay", str(made["untimed"]),
                                       "--root", str(root)])
    assert result.exit_code == 4, result.output
    assert "timed nothing" in result.output and "--no-timing" in result.output
    assert not root.exists()          # no side B was run only to be refused


@pytest.mark.e2e
def test_a_replay_keeps_inputs_and_pacing_and_does_not_split_kernels_again(made):
    root = made["base"] / "ab_paced"
    result = CliRunner().invoke(main, ["ab", "--replay", str(made["paced"]), "--root", str(root)])
    assert result.exit_code == 0, result.output
    (side_b,) = root.glob("add/r1_B/add_*")
    info = json.loads((side_b / "run.json").read_text())
    assert info["caliber"]["inputs"] == "upstream"
    assert info["caliber"]["stopping"]["pace_us"] == 5.0
    assert info["options"]["kernel_split"] is False and info["options"]["timing"] is True


@pytest.mark.e2e
def test_a_replay_told_other_inputs_or_pacing_is_refused_before_side_b_runs(made):
    for told, named in ((["--inputs", "device"], "--inputs"), (["--pace-us", "0"], "--pace-us")):
        root = made["base"] / f"ab_{named[2:]}"
        result = CliRunner().invoke(main, ["ab", "--replay", str(made["paced"]), *told,
                                           "--root", str(root)])
        assert result.exit_code == 4, result.output
        assert named in result.output and "--allow-caliber-mismatch" in result.output
        assert not root.exists()


@pytest.mark.e2e
def test_the_guard_refuses_runs_of_other_inputs_or_pacing(made):
    check = check_caliber(load_run(made["plain"]), load_run(made["paced"]))
    assert any("inputs differs: A=device, B=upstream" in p for p in check.problems)
    assert any("stopping differs" in p and "pace_us" in p for p in check.problems)


@pytest.mark.e2e
def test_a_screen_records_inputs_and_pacing_and_its_campaign_passes_them_on(made):
    root = made["base"] / "screen"
    result = CliRunner().invoke(main, [
        "screen", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(made["shapes"]),
        *FAST, "--ops", "add", "--switch", "ZLH_BUILTIN_SLOW=0,1", "--timing", "none",
        "--inputs", "upstream", "--pace-us", "5", "--root", str(root)])
    assert result.exit_code == 0, result.output
    (row,) = read_tsv(root / "screen.tsv")
    assert row["inputs"] == "upstream" and "pace_us=5.0" in row["stopping"]
    plan = plan_campaign(made["base"] / "campaign", root, [0], 2, [], verdicts=(NO_TRITON,))
    command = card_command(plan, ["add"], made["base"] / "card0")
    text = " ".join(command)
    assert "--inputs upstream" in text and "--pace-us 5.0" in text
    assert "--no-timing" not in text        # the screen's untimed pass is no option of zlh ab
    assert command[3] == "ab"
    main.commands["ab"].make_context("ab", command[4:])     # zlh ab takes every argument


def test_a_persistent_round_gets_the_options_a_fresh_round_gets(tmp_path, monkeypatch):
    """Same seed, --inputs and --pace-us in a reused worker as in a fresh `zlh bench`: the
    inputs (device-drawn ones too, seeded from the run's seed per case) are the same values."""
    from types import SimpleNamespace
    from harness.ab import orchestrate
    from harness.ab.sides import ABPlan, Side
    from harness.corpus.rounds import PersistentRounds
    from harness.run.options import BenchOptions
    options = BenchOptions.from_flat(backend="cpu", seed=9, inputs="device", pace_us=5.0)
    plan = ABPlan(ops=["add"], a=Side("A"), b=Side("B", options={"seed": 9}), options=options,
                  root=tmp_path)
    seen = {}

    def start(cmd, *args, **kwargs):
        seen["fresh"] = cmd[cmd.index("bench") + 2:]
        return SimpleNamespace(finish=lambda *a, **k: 0, returncode=0)

    monkeypatch.setattr(orchestrate.launcher, "start", start)
    orchestrate.run_side(plan, "add", 2, plan.b, tmp_path / "record")

    class Worker:
        alive = True

        def run(self, job, *args):
            seen["persistent"] = job["args"]
            return SimpleNamespace(rc=0, elapsed_s=0.0, run_dir=None)

    rounds = PersistentRounds(settle_s=0.0)
    monkeypatch.setattr(rounds, "_worker", lambda plan, side, job=None: Worker())
    rounds.run(plan, "add", 2, plan.b, tmp_path / "record")
    assert seen["persistent"] == seen["fresh"]
    again = BenchOptions.from_argv(seen["persistent"])
    assert (again.seed, again.inputs, again.rule.pace_us) == (9, "device", 5.0)
