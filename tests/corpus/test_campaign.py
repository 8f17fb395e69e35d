"""zlh partition and zlh campaign: deterministic plans, imbalance, missing weights, filters,
rounds; dry run; cards side by side with one failing; merge; resume."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.corpus.campaign import plan_campaign, read_campaign, run_cards, write_plan
from harness.corpus.campaign_merge import merge
from harness.corpus.partition import partition, weights_from_screen
from harness.corpus.verdict import TSV_COLUMNS


def screen_tsv(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    """rows: (op, verdict, elapsed_a, elapsed_b)."""
    lines = ["\t".join(TSV_COLUMNS)]
    for op, verdict, ea, eb in rows:
        cells = {c: "-" for c in TSV_COLUMNS}
        cells.update(op=op, verdict=verdict, elapsed_a=ea, elapsed_b=eb)
        lines.append("\t".join(cells[c] for c in TSV_COLUMNS))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_lpt_is_deterministic_and_balanced():
    weights = {"a": 10.0, "b": 9.0, "c": 8.0, "d": 3.0, "e": 3.0, "f": 1.0}
    first = partition(weights, [0, 1])
    again = partition(dict(reversed(list(weights.items()))), [0, 1])
    assert first.assignment == again.assignment
    # a(10)->0, b(9)->1, c(8)->1 (9 < 10), d(3)->0, e(3)->0, f(1)->0 (16 < 17)
    assert first.assignment == {0: ["a", "d", "e", "f"], 1: ["b", "c"]}
    assert first.loads == {0: 17.0, 1: 17.0}
    assert first.critical_path_s == 17.0 and first.total_s == 34.0
    assert first.imbalance == pytest.approx(1.0)
    assert first.heaviest_s == 10.0 and first.lower_bound_s == 17.0
    skewed = partition({"big": 30.0, "s1": 1.0, "s2": 1.0}, [0, 1])
    assert skewed.critical_path_s == 30.0 and skewed.imbalance == pytest.approx(30.0 / 16.0)
    assert skewed.lower_bound_s == 30.0


def test_ties_go_to_the_lower_device_and_rounds_scale_weights():
    part = partition({"x": 5.0, "y": 5.0}, [3, 1, 2], rounds=3)
    assert part.assignment[1] == ["x"] and part.assignment[2] == ["y"]
    assert part.weights == {"x": 15.0, "y": 15.0} and part.loads[3] == 0.0


def test_missing_weights_take_the_median_and_filters_list_the_rest(tmp_path):
    path = screen_tsv(tmp_path / "screen.tsv", [
        ("mm", "IR_CHANGED", "60", "40"), ("bmm", "IR_CHANGED", "-", "-"),
        ("sdpa", "IR_CHANGED", "30", "30"), ("add", "NO_IR_DIFF", "5", "5"),
        ("view", "NO_TRITON", "2", "2")])
    weights, filtered = weights_from_screen(path, ("IR_CHANGED",))
    assert weights == {"mm": 100.0, "bmm": None, "sdpa": 60.0}
    assert filtered == [("add", "NO_IR_DIFF"), ("view", "NO_TRITON")]
    part = partition(weights, [0, 1])
    assert part.weights["bmm"] == 80.0 and part.imputed == ["bmm"]
    result = CliRunner().invoke(main, ["partition", str(path), "--devices", "0,1", "--format",
                                       "tsv"])
    assert result.exit_code == 0
    assert "WARNING: no weight for 1 op(s)" in result.stderr
    assert result.stdout.splitlines()[0] == "device\top\tweight_s"
    text = CliRunner().invoke(main, ["partition", str(path), "--devices", "0,1"]).stdout
    assert "filtered out: add (NO_IR_DIFF)" in text and "imbalance" in text


@pytest.fixture
def screened(corpus_roots):
    """`zlh screen --ops add --switch ZLH_BUILTIN_SLOW=0,1` (conftest's, made once for every
    module that reads it; campaigns only read it)."""
    return corpus_roots / "screen"


@pytest.mark.e2e
def test_dry_run_prints_the_plan_and_writes_nothing(screened, tmp_path):
    result = CliRunner().invoke(main, ["campaign", "--screen", str(screened), "--devices", "0,1",
                                       "--verdict", "NO_TRITON", "--rounds", "2", "--dry-run",
                                       "--root", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "device 0:" in result.output and "critical path" in result.output
    assert not (tmp_path / "c").exists()


@pytest.mark.e2e
def test_cards_run_side_by_side_a_failing_card_does_not_stop_the_other(screened, tmp_path):
    # one op per card and one round: what is tested is the cards (side by side, merged,
    # resumed), and each further op or round is two more `zlh bench` processes
    plan = plan_campaign(tmp_path / "c", screened, [0, 1], 1, ["fault_raise"],
                         ("NO_TRITON",), timeout_s=120)
    failing = plan.part.device_of("fault_raise")
    write_plan(plan)
    cards = run_cards(plan, echo=lambda _: None)
    assert set(cards) == {0, 1}
    assert cards[failing]["rc"] == 1
    doc = merge(plan, cards)
    assert doc["ops_reported"] == ["add"]
    status = (tmp_path / "c/status.tsv").read_text().splitlines()
    assert status[0].split("\t")[:2] == ["device", "round"]
    assert {ln.split("\t")[0] for ln in status[1:]} == {"0", "1"}
    report = json.loads((tmp_path / "c/report.json").read_text())
    assert [op["op"] for op in report["ops"]] == ["add"]
    assert (tmp_path / "c/report.html").exists() and (tmp_path / "c/plan.tsv").exists()
    for device in (0, 1):        # isolated tuner cache forced on every card
        infos = [json.loads(p.read_text())
                 for p in (tmp_path / f"c/card{device}").rglob("run.json")]
        assert infos and all(i["options"]["isolate_tuner_cache"] for i in infos)
    # resume: every reported op is kept, the failing card's op runs again (and fails again)
    again = read_campaign(tmp_path / "c")
    cards = run_cards(again, echo=lambda _: None, resume=True)
    assert list(cards) == [failing] and cards[failing]["ops"] == ["fault_raise"]
    assert (tmp_path / f"c/card{failing}-r1").exists()


def test_a_cards_roots_are_its_own_not_those_of_a_device_whose_number_starts_alike(tmp_path):
    from types import SimpleNamespace
    from harness.corpus.campaign import card_roots
    for name in ("card1", "card1-r1", "card1-softmax", "card10", "card10-r1", "card12-add"):
        (tmp_path / name).mkdir()
    plan = SimpleNamespace(root=tmp_path)
    assert [p.name for p in card_roots(plan, 1)] == ["card1", "card1-r1", "card1-softmax"]
    assert [p.name for p in card_roots(plan, 10)] == ["card10", "card10-r1"]
    assert card_roots(SimpleNamespace(root=tmp_path / "none"), 1) == []


def test_a_local_resume_after_ray_units_runs_no_op_another_lane_reported(
        screened, tmp_path, monkeypatch):
    """A Ray unit runs on the lane that came free: an op the plan gave device 0 may have its
    report under card1-<op>/. A resume through local lanes must not run it again."""
    from harness.corpus import campaign
    plan = plan_campaign(tmp_path / "c", screened, [0, 1], 1, [], ("NO_TRITON",))
    op0 = plan.part.assignment[0][0]
    monkeypatch.setattr(campaign, "done_ops",
                        lambda p, device, echo=None: {op0} if device == 1 else set())
    lanes = []
    monkeypatch.setattr(campaign, "run_lanes", lambda found, on_error: lanes.extend(found))
    run_cards(plan, echo=lambda _: None, resume=True)
    assert all(op0 not in args[1] for _, _, args in lanes)


def card_attempts(tmp_path, *names):
    """A campaign root with the card roots `names` (made in that order), a plan over device
    0 and a softmax record/replay pair: (plan, roots, the pair, its report's writer)."""
    from types import SimpleNamespace
    from harness.ab.compare import compare_runs
    from harness.ab.report import write_reports
    from harness.store.reader import load_run
    from fake_runs import fake_run
    (tmp_path / "sh").mkdir()
    (tmp_path / "sh" / "add.yaml").write_text("add: [[64]]\n")
    rec = fake_run(tmp_path / "runs", "a", op="softmax")
    rep = fake_run(tmp_path / "runs", "b", op="softmax", mode="replay", replay_from=rec)
    root = tmp_path / "c"
    roots = [root / name for name in names]
    for folder in roots:
        folder.mkdir(parents=True)
    plan = SimpleNamespace(root=root, devices=[0], part=SimpleNamespace(loads={}))
    return plan, roots, (rec, rep), lambda where: write_reports(
        where, [compare_runs([(load_run(rec), load_run(rep))])])


def test_runs_a_resume_ran_again_are_superseded_not_failures(tmp_path):
    """A card cut short (its softmax run killed: rc -1, no report), then a resume that ran
    and reported softmax: the killed run stays in status.tsv, counted as superseded, and no
    card has failed runs — a resume that reports every op is a success. A run that failed in
    the attempt that stands still counts."""
    from harness.ab.runs import RunOutcome, append_status
    plan, (cut, again), (rec, rep), report = card_attempts(tmp_path, "card0", "card0-r1")
    append_status(cut, "softmax", RunOutcome(1, "A", 0, 1.0, rec))
    append_status(cut, "softmax", RunOutcome(1, "B", -1, 1.0, None))
    append_status(again, "softmax", RunOutcome(1, "A", 0, 1.0, rec))
    append_status(again, "softmax", RunOutcome(1, "B", 0, 1.0, rep))
    report(again)
    doc = merge(plan, {0: {"rc": 0}})
    assert doc["runs"] == 4 and doc["superseded_runs"] == 2
    assert doc["failed_runs_per_card"] == {} and doc["ops_reported"] == ["softmax"]
    assert len((plan.root / "status.tsv").read_text().splitlines()) == 1 + 4
    append_status(again, "softmax", RunOutcome(2, "B", -9, 1.0, None))   # this attempt's own
    assert merge(plan, {0: {"rc": 0}})["failed_runs_per_card"] == {"0": 1}


def test_the_attempt_that_stands_is_the_newest_whatever_its_name(tmp_path):
    """card0-r10 (the newer resume) sorts before card0-r2 by name: the newest written root
    is the one whose runs stand."""
    import os
    from harness.ab.runs import RunOutcome, append_status
    plan, (older, newer), (rec, rep), report = card_attempts(tmp_path, "card0-r2", "card0-r10")
    append_status(older, "softmax", RunOutcome(1, "B", -1, 1.0, None))
    append_status(newer, "softmax", RunOutcome(1, "A", 0, 1.0, rec))
    append_status(newer, "softmax", RunOutcome(1, "B", 0, 1.0, rep))
    report(newer)
    os.utime(older / "status.tsv", (1_000_000, 1_000_000))
    doc = merge(plan, {0: {"rc": 0}})
    assert doc["superseded_runs"] == 1 and doc["failed_runs_per_card"] == {}
