"""`zlh ab --rounds auto`: the rounds policy over synthetic sides (a clear change stops after
the pilot, noise wider than the target runs to the cap), the ABBA order, the report's
per-shape rounds and detectable change, --rescore of an auto root, and the option checks."""
import csv

import numpy as np
import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.render import render_terminal
from harness.ab.rescore import rescore
from harness.ab.report import load_report
from harness.ab.rounds import AutoRounds, side_order
from harness.ab.runs import RunOutcome, append_status
from harness.ab.sides import ABPlan, Side
from harness.cli import main
from harness.measure.measurement import Measurement
from harness.run.options import BenchOptions
from harness.store.results import SUCCESS, Row
from harness.store.rundir import RunDir
from fake_runs import CALIBER

SHAPES = ("1024", "4096")


def exact_run(out, latencies, replay_from):
    """A run whose every sample is the given latency (its median is exactly that)."""
    run = RunDir.create(out, "softmax")
    run.write_results([Row(op="softmax", dtype="bfloat16", shape=None, shape_detail=shape,
                           status=SUCCESS, torch=Measurement((ms,) * 5, "graph"),
                           gems=Measurement((ms,) * 5, "graph"))
                       for shape, ms in latencies.items()])
    info = {"op": "softmax", "status": "complete",
            "caliber": dict(CALIBER, autotune_mode="replay" if replay_from else "record")}
    if replay_from is not None:
        info["autotune_replay_from"] = str(replay_from)
    run.write_run_json(info)
    return run.path


def synthetic_sides(monkeypatch, b_ratio: float, sd: float, seed: int = 5):
    """run_side replaced: side A latency 1 (x10 per shape), side B b_ratio, each run scattered
    by a factor 1 + sd * N(0, 1); returns the (round, side) order the runs were made in."""
    rng, order = np.random.default_rng(seed), []

    def run_side(plan, op, number, side, replay_from):
        base = 1.0 if side.label == "A" else b_ratio
        noise = 1 + sd * rng.standard_normal()
        out = plan.root / op / f"r{number}_{side.label}"
        path = exact_run(out, {s: base * noise * 10 ** k for k, s in enumerate(SHAPES)},
                         replay_from)
        outcome = RunOutcome(number, side.label, 0, 0.0, path, None)
        append_status(plan.root, op, outcome)
        order.append((number, side.label))
        return outcome

    monkeypatch.setattr(abmod, "run_side", run_side)
    monkeypatch.setattr(abmod, "check_plan", lambda plan: None)
    return order


def auto_plan(tmp_path, auto: AutoRounds) -> ABPlan:
    return ABPlan(ops=["softmax"], a=Side("A", description="a"), b=Side("B", description="b"),
                  options=BenchOptions(), root=tmp_path / "ab", rounds=auto.max_rounds,
                  auto=auto)


def status_order(root) -> list[tuple[int, str]]:
    lines = (root / "status.tsv").read_text().splitlines()[1:]
    return [(int(ln.split("\t")[0]), ln.split("\t")[2]) for ln in lines]


def test_a_clear_change_stops_after_the_pilot(tmp_path, monkeypatch):
    order = synthetic_sides(monkeypatch, b_ratio=0.9, sd=0.0002)      # B 11 % faster
    lines = []
    (report,), code = abmod.run_ab(auto_plan(tmp_path, AutoRounds(0.15, 4, 12)),
                                   echo=lines.append)
    assert code == 0 and len(order) == 2 * 4                          # the pilot only
    assert any("rounds auto: 4 rounds after a pilot of 4" in ln for ln in lines), lines
    assert report.summary["rounds"] == 4
    assert report.summary["rounds_design"] == {"design": "two-stage", "target_pct": 0.15,
                                               "min_rounds": 4, "max_rounds": 12,
                                               "stopped_by": "target"}
    for row in report.rows:
        assert row.significant and row.direction == 1 and row.delta_pct == pytest.approx(11.1, abs=0.2)
        assert row.rounds["rounds"] == 4 and row.rounds["needed"] == 4
        assert row.rounds["half_width_pct"] <= 0.15 and row.rounds["detectable_pct"] < 0.3
    # --rescore reads the design back from plan.json: the same two-stage test
    again, code = rescore(tmp_path / "ab", [], None, False, lambda _: None)
    assert code == 0
    assert [r.p_value for r in again[0].rows] == [r.p_value for r in report.rows]
    assert again[0].summary["rounds_design"] == report.summary["rounds_design"]
    _, stored = load_report(tmp_path / "ab")
    assert stored[0].rows[0].rounds["needed"] == 4
    rows = list(csv.DictReader(open(tmp_path / "ab" / "report.csv")))
    assert [(r["rounds"], r["rounds_needed"]) for r in rows] == [("4", "4")] * 2
    assert all(0 < float(r["detectable_pct"]) < 0.3 for r in rows)


def test_noise_wider_than_the_target_runs_to_the_cap_in_abba_order(tmp_path, monkeypatch):
    order = synthetic_sides(monkeypatch, b_ratio=1.0, sd=0.005)      # A/A, 0.5 % per run
    lines = []
    (report,), code = abmod.run_ab(auto_plan(tmp_path, AutoRounds(0.15, 4, 10)),
                                   echo=lines.append)
    assert code == 0 and report.summary["rounds"] == 10
    assert report.summary["rounds_design"]["stopped_by"] == "cap"
    assert any("capped at 10" in ln for ln in lines), lines
    assert not any(r.significant for r in report.rows)
    assert all(r.rounds["needed"] > 10 for r in report.rows)
    expected = [(n, s) for n in range(1, 11) for s in side_order(n)]
    assert order == expected == status_order(tmp_path / "ab")
    assert [s for _, s in expected[:8]] == list("ABBAABBA")


def test_fixed_rounds_report_what_they_could_see(tmp_path, monkeypatch):
    synthetic_sides(monkeypatch, b_ratio=1.0, sd=0.001)
    plan = auto_plan(tmp_path, AutoRounds())
    plan.auto, plan.rounds = None, 3
    (report,), _ = abmod.run_ab(plan, echo=lambda _: None)
    assert report.summary["rounds_design"] == {"design": "fixed"}
    row = report.rows[0]
    assert row.rounds["df"] == 2 and "needed" not in row.rounds
    assert row.rounds["detectable_pct"] == pytest.approx(3.097 * row.rounds["sd_pct"] / 1.0,
                                                         rel=2e-3)
    report.verdict = "IR_CHANGED"            # (a verdict whose table shows the summary)
    assert "(chosen from the record)" not in render_terminal(report)
    report.summary["round_process"] = {"process": "turns-fresh", "why": "…"}   # (auto's)
    assert "rounds fixed at 3; rounds as turns-fresh (chosen from the record); detectable" \
        in render_terminal(report)


@pytest.mark.parametrize("extra, said", [
    (["--target-pct", "0.2"], "--target-pct only with --rounds auto"),
    (["--rounds", "auto", "--min-rounds", "8", "--max-rounds", "4"],
     "--max-rounds 4 is below --min-rounds 8"),
    (["--rounds", "often"], "neither a whole number nor auto"),
    (["--rounds", "0"], "not in the range 1<=x<=1000"),
])
def test_rounds_options_are_checked_before_anything_runs(tmp_path, extra, said):
    result = CliRunner().invoke(main, ["ab", "add", "--adapter", "builtin", "--backend", "cpu",
                                       "--env-b", "ZLH_BUILTIN_SLOW=1",
                                       "--root", str(tmp_path / "ab"), *extra])
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert not (tmp_path / "ab").exists()


def test_a_target_far_below_the_spread_asks_for_the_cap_not_an_overflow():
    from harness.measure import sequential
    assert sequential.rounds_needed(0.5, 8, 1e-300) == sequential.MANY_ROUNDS
    deltas = [[0.1, -0.3, 0.4, 0.2, -0.1, 0.0, 0.3, -0.2]]
    assert sequential.planned_rounds(deltas, 8, 1e-300, 24) == 24


def test_a_recipe_may_ask_for_auto_rounds_as_the_command_line_does(tmp_path):
    from harness.ab.recipe import load_recipe
    from harness.cli.ab import _apply_recipe
    from harness.cli.rounds import rounds_plan
    recipe = tmp_path / "r.yaml"
    recipe.write_text("ops: [add]\nswitch: X=0,1\nrounds: Auto\n")
    assert load_recipe(str(recipe))["rounds"] == "auto"
    params = {"switch": None, "env_a": (), "env_b": (), "python_a": None, "python_b": None,
              "rounds": None, "scrub": (), "max_rounds": 12}
    _, params, _ = _apply_recipe(str(recipe), (), params, {})
    rounds, auto, _ = rounds_plan(params)
    assert auto is not None and rounds == auto.max_rounds == 12


def test_the_rounds_a_target_needs_never_fall_as_the_target_shrinks():
    from harness.measure import sequential
    needs = [sequential.rounds_needed(1.0, 6, t) for t in (1e-2, 1e-4, 1e-8, 1e-9, 1e-300)]
    assert needs == sorted(needs) and needs[-1] == sequential.MANY_ROUNDS
