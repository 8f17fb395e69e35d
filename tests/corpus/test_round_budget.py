"""`--round-budget auto`: each op's record at the twins budget, its rounds at the budget of the
round process its record chose (GEMMs at the power limit: four placements of short windows),
the caliber guard holding the rounds to each other rather than to the record."""
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.render import render_terminal
from harness.ab.round_budget import (BUDGETS, RECORD_BUDGET, TURNS_BUDGET, TWINS_BUDGET,
                                     budget_flags)
from harness.ab.guard import reference_run
from harness.ab.rounds import CHOICE_FILE, TURNS_FRESH, TWINS
from harness.cli import main
from harness.cli.rounds import budget_given, rounds_plan
from harness.common.errors import UsageError
from harness.corpus.chosen_rounds import ChosenRounds, choose_by_record
from harness.measure.device_lock import LOCK_DIR_ENV
from harness.run.options import BenchOptions
from slow_add import slow_add_plan


def _budget_of(run_json: Path) -> dict:
    caliber = json.loads(run_json.read_text())["caliber"]
    stopping = caliber["stopping"]
    return {"placements": caliber["placements"], "warmup_ms": caliber["warmup_ms"],
            "min_samples": stopping["min_samples"], "min_time_ms": stopping["min_time_ms"],
            "max_time_ms": stopping["max_time_ms"],
            "level_placements": caliber["level_placements"]}


# Budgets of the same shape as BUDGETS (one placement with level placements for twins, more
# without for turns-fresh; every field apart) at a fraction of their milliseconds: what is
# tested is that each op's rounds run at the budget its process was given, not the budgets'
# values (BUDGETS reaches the runner: test_the_round_budget_follows_only_the_chosen_process...;
# each parses as `zlh bench` options there too). At BUDGETS a CPU run measured for 3-4 s.
TEST_TWINS = {"placements": 1, "warmup_ms": 2.0, "min_samples": 5, "min_time_ms": 1.0,
              "max_time_ms": 15.0, "level_placements": 2}
TEST_TURNS = {"placements": 2, "warmup_ms": 1.0, "min_samples": 3, "min_time_ms": 0.0,
              "max_time_ms": 5.0, "level_placements": 0}
TEST_BUDGETS = {TWINS: TEST_TWINS, TURNS_FRESH: TEST_TURNS}
TEST_RECORD = TEST_TWINS                     # as RECORD_BUDGET is TWINS_BUDGET


@pytest.fixture(scope="module")
def auto_ab(tmp_path_factory):
    """Two rounds of the slowed add and softmax with --round-process auto --round-budget auto
    (at TEST_BUDGETS), softmax's record choosing turns-fresh: (the reports, the exit code, the
    lines said, the root). Made once for the tests that read it."""
    tmp_path = tmp_path_factory.mktemp("round_budget")

    def choose(run_dir):          # no CPU case runs at a power limit: softmax's record says so
        if Path(run_dir).parent.parent.name == "softmax":
            return {"process": "turns-fresh", "held_by_power": ["float32 4x64"],
                    "why": "said so for the test"}
        return choose_by_record(run_dir)
    runner = ChosenRounds(shift_max_bytes=1 << 16, choose=choose, budgets=TEST_BUDGETS)
    plan = slow_add_plan(tmp_path, runner, rounds=2,
                         shapes="add: [[4096]]\nsoftmax: [[4, 64]]\n")
    plan.ops = ["add", "softmax"]
    plan.options = plan.options.with_flat(**TEST_RECORD)       # as the command line sets it
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
        reports, code = abmod.run_ab(plan, echo=lines.append)
    return reports, code, lines, tmp_path / "ab"


@pytest.mark.e2e
def test_each_op_rounds_at_the_budget_of_the_process_its_record_chose(auto_ab):
    reports, code, lines, root = auto_ab
    # the rounds of softmax ran at another budget than its record: the guard held them to
    # each other, not to the record, and both ops were reported
    assert code == 0 and [r.op for r in reports] == ["add", "softmax"], lines
    runs = {(op, name): next((root / op / name).glob("*/run.json"))
            for op in ("add", "softmax") for name in ("r0_A", "r1_A", "r1_B", "r2_A", "r2_B")}
    assert {key: _budget_of(path) for key, path in runs.items()} == {
        (op, name): TEST_TURNS if op == "softmax" and name != "r0_A" else TEST_TWINS
        for op, name in runs}
    choices = {op: json.loads((root / op / CHOICE_FILE).read_text()) for op in ("add", "softmax")}
    assert choices["add"]["budget"] == budget_flags(TEST_TWINS)
    assert choices["softmax"]["budget"] == budget_flags(TEST_TURNS)
    assert (f"softmax: rounds as turns-fresh at {' '.join(budget_flags(TEST_TURNS))}: said "
            f"so for the test") in lines
    assert "--placements 2" in render_terminal(reports[1])
    plan_json = json.loads((root / "plan.json").read_text())
    assert plan_json["round_budget"] == "auto"
    again = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert again.exit_code == 0, again.output
    rescored = json.loads((root / "report.json").read_text())["ops"]
    assert [op["summary"]["round_process"]["budget"] for op in rescored] == [
        budget_flags(TEST_TWINS), budget_flags(TEST_TURNS)]


def test_the_round_budget_follows_only_the_chosen_process_and_no_budget_given():
    base = {"rounds": "auto", "target_pct": None, "min_rounds": None, "max_rounds": None,
            "settle_ms": None, "round_spacer_mb": None}
    _, _, runner = rounds_plan({**base, "round_process": "auto", "round_budget": "auto"})
    assert isinstance(runner, ChosenRounds) and runner.budgets == BUDGETS
    _, _, runner = rounds_plan({**base, "round_process": "auto", "round_budget": "as-given"})
    assert runner.budgets is None
    for process in ("fresh", "turns-fresh", "twins"):
        with pytest.raises(UsageError, match="--round-budget auto only with --round-process "
                                             f"auto .*not {process}"):
            rounds_plan({**base, "round_process": process, "round_budget": "auto"})
    for budget in (TWINS_BUDGET, TURNS_BUDGET):      # each, as `zlh bench` reads its flags
        assert {name: BenchOptions.from_argv(budget_flags(budget)).to_flat()[name]
                for name in budget} == budget
    given = {"adapter": "builtin"}
    assert budget_given({"round_budget": "as-given"}, given) is given
    assert budget_given({"round_budget": "auto"}, given) == {**given, **RECORD_BUDGET}
    with pytest.raises(UsageError, match="--placements, --max-time-ms with --round-budget "
                                         "auto"):
        budget_given({"round_budget": "auto"}, {"placements": 2, "max_time_ms": 5.0})


@pytest.mark.parametrize("argv, says", [
    (["ab", "add", "--env-b", "X=1", "--round-budget", "auto"],
     "--round-budget auto only with --round-process auto"),
    (["ab", "add", "--env-b", "X=1", "--round-process", "auto", "--round-budget", "auto",
      "--warmup-ms", "5"], "--warmup-ms with --round-budget auto"),
    (["calibrate", "add", "--round-process", "auto", "--round-budget", "auto",
      "--min-samples", "3"], "--min-samples with --round-budget auto"),
    (["ab", "--replay", "runA", "--round-budget", "auto"], "--round-budget does not apply"),
])
def test_a_round_budget_that_cannot_apply_is_one_line_and_exit_2(tmp_path, argv, says):
    result = CliRunner().invoke(main, [*argv, "--root", str(tmp_path / "root")])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not (tmp_path / "root").exists()


@pytest.mark.e2e
def test_the_record_is_still_held_to_the_rounds_in_all_but_the_budget(auto_ab, tmp_path):
    """Round 1's A differs from the record in its budget (let through) or in anything else
    (refused): the record is held to the rounds in all but the budget. (add's record and
    round 1's A of auto_ab, copied: they ran at one budget.)"""
    add = tmp_path / "add"
    shutil.copytree(auto_ab[3] / "add", add)
    record, first_a = (next((add / name).glob("*/run.json")).parent
                       for name in ("r0_A", "r1_A"))
    lines: list[str] = []
    assert reference_run(record, first_a, True, "add", False, lines.append).path == first_a
    assert reference_run(record, first_a, False, "add", False, lines.append).path == record
    moved = json.loads((first_a / "run.json").read_text())
    moved["caliber"]["placements"] = 4                                 # a budget: let through
    moved["caliber"]["stopping"]["max_time_ms"] = 20.0
    (first_a / "run.json").write_text(json.dumps(moved))
    assert reference_run(record, first_a, True, "add", False, lines.append) is not None
    moved["caliber"]["seed"] += 1                                      # not a budget: refused
    (first_a / "run.json").write_text(json.dumps(moved))
    assert reference_run(record, first_a, True, "add", False, lines.append) is None
    assert any("[caliber] add: seed differs" in line for line in lines), lines
    assert not any("placements" in line for line in lines), lines


def test_with_flat_changes_the_options_named_and_keeps_the_rest():
    from harness.measure.stopping import StoppingRule
    base = BenchOptions.from_flat(adapter="builtin", backend="cpu", dtypes=["float32"],
                                  shapes="s.yaml", placement_seed=7, min_samples=5)
    base = base.replace(rule=StoppingRule(min_samples=5, max_samples=77))
    changed = base.with_flat(placements=4, max_time_ms=200.0, warmup_ms=10.0)
    assert (changed.placements, changed.rule.max_time_ms, changed.budget.warmup_ms) == (
        4, 200.0, 10.0)
    assert changed.rule.max_samples == 77 and changed.rule.min_samples == 5
    assert {k: v for k, v in changed.to_flat().items()
            if k not in ("placements", "max_time_ms", "warmup_ms")} == {
        k: v for k, v in base.to_flat().items()
        if k not in ("placements", "max_time_ms", "warmup_ms")}
    with pytest.raises(UsageError, match="placements"):
        base.with_flat(placements=0)
