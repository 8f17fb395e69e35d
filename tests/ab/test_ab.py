"""zlh ab: caliber guard, pairing, statistics wiring, rounds, status.tsv, output gate, CLI."""
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.ab import compare, guard, orchestrate as abmod, pairing
from harness.ab.report import ABReport
from harness.ab.sides import ABPlan, Side
from harness.cli import main
from harness.run.options import BenchOptions
from harness.store.caliber import Caliber
from harness.store.reader import load_run
from harness.store.results import FAILED
from conftest import budget_args, FAST_API
from fake_runs import CALIBER, make_run


@pytest.mark.parametrize("field", [f for f in Caliber.field_names()
                                   if f not in ("autotune_mode", "card")])
def test_every_caliber_field_is_guarded_on_its_own(tmp_path, field):
    """B replays A and equals it in every field but one: that field, and nothing else, is
    the refusal (a check masked by another would go unnoticed otherwise)."""
    other = {"stopping": {"min_samples": 5}, "repeat": 3, "warmup_ms": 1.0,
             "ir_capture": False, "seed": 7, "placements": 4, "inputs": "upstream",
             "placement_memory": "new", "level_placements": 64, "level_min_us": 5.0,
             "tuning_space": {"USE_FLAGTUNE": "1"}}.get(field, "something-else")
    a = make_run(tmp_path, "a", {"64x64": 1.0})
    b = make_run(tmp_path, "b", {"64x64": 1.0}, caliber={field: other}, mode="replay",
                 replay_from=a)
    same = make_run(tmp_path, "same", {"64x64": 1.0}, mode="replay", replay_from=a)
    assert guard.check_caliber(load_run(a), load_run(same)).ok       # the control
    check = guard.check_caliber(load_run(a), load_run(b))
    shown = json.dumps(other, sort_keys=True) if isinstance(other, dict) else other
    assert check.problems == [f"!!! [caliber] softmax: {field} differs: "
                              f"A={guard_value(CALIBER.get(field, {}))}, B={shown}"
                              + (" (the library's tuning-space switches: the sides tuned "
                                 "over different config spaces)"
                                 if field == "tuning_space" else "")]


def guard_value(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def test_op_differs_is_refused_on_its_own(tmp_path):
    """Two runs equal in everything but the op they measured."""
    a = make_run(tmp_path, "a", {"64x64": 1.0}, op="softmax")
    b = make_run(tmp_path, "b", {"64x64": 1.0}, op="layer_norm", mode="replay", replay_from=a)
    check = guard.check_caliber(load_run(a), load_run(b))
    assert check.problems == ["!!! [caliber] softmax: op differs: A=softmax, B=layer_norm"]


def test_seed_joined_the_caliber_and_older_runs_still_read(tmp_path):
    """A run written before the seed was a caliber field has it at the top level of run.json:
    that value stands in; with neither, the field is <missing> and differs from any seed."""
    a = make_run(tmp_path, "a", {"64x64": 1.0})
    old = make_run(tmp_path, "old", {"64x64": 1.0}, mode="replay", replay_from=a)
    info = json.loads((old / "run.json").read_text())
    del info["caliber"]["seed"]
    info["seed"] = 0
    (old / "run.json").write_text(json.dumps(info))
    assert load_run(old).caliber.seed == 0 and guard.check_caliber(load_run(a), load_run(old)).ok
    del info["seed"]
    (old / "run.json").write_text(json.dumps(info))
    assert load_run(old).caliber.seed == "<missing>"
    assert guard.check_caliber(load_run(a), load_run(old)).problems == [
        "!!! [caliber] softmax: seed differs: A=0, B=<missing>"]


def test_missing_identity_and_both_record_are_refused(tmp_path):
    a = make_run(tmp_path, "a", {"64x64": 1.0})
    bare = make_run(tmp_path, "bare", {"64x64": 1.0}, caliber=False)
    check = guard.check_caliber(load_run(a), load_run(bare))
    assert not check.ok and "side B has no identity" in check.problems[0]
    b = make_run(tmp_path, "b", {"64x64": 1.0}, mode="record")
    check = guard.check_caliber(load_run(a), load_run(b))
    assert any("both sides record" in p for p in check.problems)


def test_record_against_replay_passes_and_shared_cache_only_warns(tmp_path):
    a = make_run(tmp_path, "a", {"64x64": 1.0}, caliber={"tuner_cache": "shared(/x)"})
    b = make_run(tmp_path, "b", {"64x64": 1.0}, caliber={"tuner_cache": "shared(/x)"},
                 mode="replay", replay_from=a)
    check = guard.check_caliber(load_run(a), load_run(b))
    assert check.ok
    assert check.warnings and "shared tuner cache" in check.warnings[0]


def test_replay_of_another_record_is_refused(tmp_path):
    a = make_run(tmp_path, "a", {"64x64": 1.0})
    x = make_run(tmp_path, "x", {"64x64": 1.0})
    b = make_run(tmp_path, "b", {"64x64": 1.0}, mode="replay", replay_from=x)
    check = guard.check_caliber(load_run(a), load_run(b))
    assert any("not pinned to the same record" in p for p in check.problems)
    c = make_run(tmp_path, "c", {"64x64": 1.0}, mode="replay", replay_from=a)
    assert guard.check_caliber(load_run(a), load_run(c)).ok


def test_runs_moved_elsewhere_stay_pinned_to_their_record(tmp_path):
    """Run directories copied off the machine that made them: the record is known by the
    digest of its records file, not by the path the replay saw."""
    from harness.compile.autotune import RECORDS_FILE, records_digest
    a = make_run(tmp_path / "device", "a", {"64x64": 1.0})
    (a / RECORDS_FILE).parent.mkdir(parents=True, exist_ok=True)
    (a / RECORDS_FILE).write_text('{"kernels": {"k": {"(64,)": {"kwargs": {"B": 64}}}}}')
    b = make_run(tmp_path / "device", "b", {"64x64": 1.0}, mode="replay", replay_from=a)
    info = json.loads((b / "run.json").read_text())
    info["autotune_replay_records_sha256"] = records_digest(a)
    (b / "run.json").write_text(json.dumps(info))
    moved = tmp_path / "laptop"
    shutil.move(str(tmp_path / "device"), str(moved))
    a2, b2 = moved / a.name, moved / b.name
    assert guard.check_caliber(load_run(a2), load_run(b2)).ok
    (a2 / RECORDS_FILE).write_text('{"kernels": {"k": {"(64,)": {"kwargs": {"B": 128}}}}}')
    check = guard.check_caliber(load_run(a2), load_run(b2))
    assert any("not pinned to the same record" in p for p in check.problems)
    # a replay written without the digest, its record moved away: paired by the record's id
    del info["autotune_replay_records_sha256"]
    (b2 / "run.json").write_text(json.dumps(info))
    assert guard.check_caliber(load_run(a2), load_run(b2)).ok
    other = make_run(tmp_path / "laptop", "x", {"64x64": 1.0})
    check = guard.check_caliber(load_run(other), load_run(b2))
    assert any("not pinned to the same record" in p for p in check.problems)


def test_variants_pair_separately(tmp_path):
    a = make_run(tmp_path, "a", {"s1": 1.0})
    b = make_run(tmp_path, "b", {"s1": 1.0}, mode="replay", replay_from=a)
    run_a, run_b = load_run(a), load_run(b)
    run_a.rows[0].variant, run_b.rows[0].variant = "div[trunc]", "div[floor]"
    pairs, unpaired = pairing.pair_rows(run_a.rows, run_b.rows)
    assert not pairs and {u["variant"] for u in unpaired} == {"div[trunc]", "div[floor]"}


def test_pairing_lists_every_unpaired_case(tmp_path):
    a = make_run(tmp_path, "a", {"s1": 1.0, "s2": 2.0, "s3": 3.0}, statuses={"s2": FAILED})
    b = make_run(tmp_path, "b", {"s1": 1.0, "s2": 2.0, "s4": 4.0}, mode="replay")
    pairs, unpaired = pairing.pair_rows(load_run(a).rows, load_run(b).rows)
    assert [ra.shape_detail for ra, _ in pairs] == ["s1"]
    reasons = {(u["side"], u["shape_detail"]): u["reason"] for u in unpaired}
    assert reasons == {("A", "s2"): "boom", ("A", "s3"): "no such case on side B",
                       ("B", "s4"): "no such case on side A"}


def test_report_signs_and_significance(tmp_path):
    a = make_run(tmp_path, "a", {"s1": 1.00, "s2": 2.00, "s3": 3.00}, seed=1)
    b = make_run(tmp_path, "b", {"s1": 0.90, "s2": 2.20, "s3": 3.00}, mode="replay", seed=2)
    report = compare.compare_runs([(load_run(a), load_run(b))]).to_dict()
    rows = {r["shape_detail"]: r for r in report["rows"]}
    assert rows["s1"]["delta_pct"] == pytest.approx(11.1, abs=0.6)       # B faster
    assert rows["s2"]["delta_pct"] == pytest.approx(-9.1, abs=0.6)       # B slower
    assert rows["s1"]["significant"] and rows["s2"]["significant"]
    assert rows["s1"]["ci_low_pct"] < rows["s1"]["delta_pct"] < rows["s1"]["ci_high_pct"]
    s = report["summary"]
    assert (s["faster"], s["slower"], s["n"]) == (1, 1, 3)


def test_output_gate_flags_wrong_results(tmp_path):
    good = [{"dtype": "bfloat16", "shape": [4], "norm": 2.0, "nan": 0,
             "sample": [1.0, 1.0, 1.0, 1.0]}]
    bad = [dict(good[0], norm=2.5, sample=[1.0, 1.5, 1.0, 1.0])]
    a = make_run(tmp_path, "a", {"s1": 1.0, "s2": 1.0}, outputs={"s1": good, "s2": good})
    b = make_run(tmp_path, "b", {"s1": 0.5, "s2": 1.0}, mode="replay",
                 outputs={"s1": bad, "s2": good})
    report = compare.compare_runs([(load_run(a), load_run(b))]).to_dict()
    (mismatch,) = report["output_mismatches"]
    assert mismatch["shape_detail"] == "s1" and "norm" in mismatch["reason"]


def test_rounds_judge_significance_between_processes_not_pooled_samples(tmp_path):
    """Each process measures itself to 0.5%, but the processes disagree by 1-2% with the sign
    flipping: pooled samples would call that a change, the per-round deltas do not."""
    def rounds_of(a_ms, b_ms):
        pairs = []
        for i, (la, lb) in enumerate(zip(a_ms, b_ms)):
            a = make_run(tmp_path, f"a{i}-{la}", {"64x64": la, "1024": 10 * la}, seed=i,
                         mode="record" if i == 0 else "replay")
            b = make_run(tmp_path, f"b{i}-{lb}", {"64x64": lb, "1024": 10 * lb}, seed=10 + i,
                         mode="replay")
            pairs.append((load_run(a), load_run(b)))
        return pairs

    noise = compare.compare_runs(rounds_of([1.00, 1.02, 0.99], [1.01, 1.00, 1.01])).to_dict()
    pooled = compare.compare_runs(rounds_of([1.00, 1.02, 0.99], [1.01, 1.00, 1.01])[:1]).to_dict()
    assert pooled["rows"][0]["significant"]          # one round: the processes' own noise only
    assert all(not r["significant"] and r["interval"] == "rounds" for r in noise["rows"])
    assert noise["summary"]["unchanged"] == 2
    from harness.ab.render import render_terminal
    assert "95% CI (rounds)" in render_terminal(ABReport.from_dict(noise), colour=False)
    assert "one round: intervals and p-values see each process's own noise only" in \
        render_terminal(ABReport.from_dict(pooled), colour=False)
    real = compare.compare_runs(rounds_of([1.00, 1.01, 0.99], [0.90, 0.91, 0.89])).to_dict()
    assert all(r["significant"] and r["ci_low_pct"] > 5 for r in real["rows"])
    assert real["summary"]["faster"] == 2


def test_cli_refuses_mismatched_calibers_with_exit_4(tmp_path):
    a = make_run(tmp_path, "a", {"s1": 1.0})
    b = make_run(tmp_path, "b", {"s1": 1.0}, caliber={"timer": "event"}, mode="replay")
    result = CliRunner().invoke(main, ["ab", str(a), str(b)])
    assert result.exit_code == 4
    assert "!!! [caliber] softmax: timer differs: A=graph, B=event" in result.output
    assert "delta" not in result.output                       # no report
    allowed = CliRunner().invoke(main, ["ab", str(a), str(b), "--allow-caliber-mismatch"])
    assert allowed.exit_code == 0 and "timer differs" in allowed.output
    # these runs hold no IR: the printing rule shows why instead of a range
    assert "verdict: NO_IR" in allowed.output and "no latency range is printed" in allowed.output
    assert "summary:" not in allowed.output


def test_cli_json_has_rows_and_summary(tmp_path):
    a = make_run(tmp_path, "a", {"s1": 1.0, "s2": 2.0})
    b = make_run(tmp_path, "b", {"s1": 0.5, "s2": 2.0}, mode="replay", replay_from=a)
    result = CliRunner().invoke(main, ["ab", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [round(r["delta_pct"]) for r in data["rows"]] == [100, 0]
    assert data["summary"]["n"] == 2


# Short budgets; the warm-up still covers the first calls of a fresh process (one-time costs
# there once made a plain round read slower than the slow switch).
# Enough warmup and samples that the slowed side of an A/B is slower on every shape.
FAST_OPTIONS = dict(FAST_API, warmup_ms=30.0, min_samples=5, max_time_ms=60.0)
FAST = budget_args(**FAST_OPTIONS)


def builtin_plan(tmp_path, rounds, op="add", shapes_yaml="add: [[4096], [20000]]\n", **kw):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(shapes_yaml)
    return ABPlan(
        ops=[op], a=Side("A", {}, description="plain"),
        b=Side("B", {"ZLH_BUILTIN_SLOW": "1"}, description="ZLH_BUILTIN_SLOW=1"),
        options=BenchOptions.from_flat(adapter="builtin", backend="cpu", shapes=str(shapes),
                                       **FAST_OPTIONS),
        root=tmp_path / "ab", rounds=rounds, **kw)


@pytest.mark.e2e
def test_identical_ir_stops_the_op_after_round_one(tmp_path, monkeypatch):
    monkeypatch.setattr(abmod, "ir_verdict", lambda *a: "NO_IR_DIFF")
    lines = []
    reports, code = abmod.run_ab(builtin_plan(tmp_path, rounds=3), echo=lines.append)
    assert any(ln.startswith("SWITCH_NO_IR_DIFF op=add") for ln in lines)
    status = (tmp_path / "ab" / "status.tsv").read_text().splitlines()
    assert len(status) == 1 + 2                      # round 1 only
    assert reports[0].verdict.startswith("SWITCH_NO_IR_DIFF")


@pytest.mark.e2e
def test_a_run_past_its_timeout_is_killed_and_recorded_as_124(tmp_path):
    lines = []
    reports, code = abmod.run_ab(builtin_plan(tmp_path, rounds=1, timeout_s=0.2),
                                 echo=lines.append)
    assert reports == [] and code == 1
    row = (tmp_path / "ab" / "status.tsv").read_text().splitlines()[1].split("\t")
    assert row[3] == "124"
    assert any("round 1 side A failed (rc=124" in ln for ln in lines)


@pytest.mark.e2e
def test_report_is_written_after_each_op_so_an_interrupt_keeps_finished_ops(tmp_path,
                                                                            monkeypatch):
    plan = builtin_plan(tmp_path, rounds=1)
    plan.ops = ["add", "softmax"]
    (tmp_path / "shapes.yaml").write_text("add: [[4096], [20000]]\nsoftmax: [[4, 64]]\n")
    real_run_side = abmod.run_side

    def interrupted_on_softmax(plan, op, *args):
        if op == "softmax":
            raise KeyboardInterrupt
        return real_run_side(plan, op, *args)

    monkeypatch.setattr(abmod, "run_side", interrupted_on_softmax)
    with pytest.raises(KeyboardInterrupt):
        abmod.run_ab(plan, echo=lambda _: None)
    report = json.loads((tmp_path / "ab" / "report.json").read_text())
    assert [op["op"] for op in report["ops"]] == ["add"]
    assert len(report["rows"]) == 2


@pytest.mark.e2e
def test_a_failing_side_says_why_and_keeps_its_exit_code(tmp_path, monkeypatch):
    """A run that fails on its own (here: the up-front checks skipped) is reported with its
    last line, and its bad-input exit code is the A/B's."""
    monkeypatch.setattr(abmod, "check_plan", lambda plan: None)
    plan = builtin_plan(tmp_path, rounds=1)
    plan.ops = ["layer_norm"]
    lines = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert reports == [] and code == 2
    assert any("round 1 side A failed (rc=2): zlh: unknown op 'layer_norm'" in ln for ln in lines)


@pytest.mark.e2e
def test_replay_mode_runs_side_b_with_side_a_caliber(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[4096]]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    import subprocess
    subprocess.run([sys.executable, "-m", "harness.cli", "bench", "add", "--adapter", "builtin",
                    "--backend", "cpu", "--shapes", str(shapes), "--out", str(tmp_path / "a"),
                    *FAST], check=True, env=env, capture_output=True, timeout=300)
    (run_a,) = (tmp_path / "a").iterdir()
    result = CliRunner().invoke(main, ["ab", "--replay", str(run_a), "--root",
                                       str(tmp_path / "b"), "--dtypes", "float16"])
    (run_b,) = (tmp_path / "b" / "add" / "r1_B").glob("add_*")
    assert json.loads((run_b / "run.json").read_text())["dtypes"] == ["float16"]   # overridden
    # ... so no case pairs with A's float32: nothing compared is not a success
    assert result.exit_code == 1, result.output
    assert "!!! add: no case paired between A and B" in result.stderr
    result = CliRunner().invoke(main, ["ab", "--replay", str(run_a), "--root",
                                       str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    (run_b,) = (tmp_path / "c" / "add" / "r1_B").glob("add_*")
    assert (tmp_path / "c" / "status.tsv").exists() and (tmp_path / "c" / "report.json").exists()
    info_b = json.loads((run_b / "run.json").read_text())
    info_a = json.loads((run_a / "run.json").read_text())
    assert info_b["autotune_mode"] == "replay"
    # B's later placements behind A's spacers: none drawn for the round
    assert info_b["options"]["placement_seed"] == info_a["options"]["placement_seed"] is None
    assert {k: v for k, v in info_b["caliber"].items() if k != "autotune_mode"} == \
        {k: v for k, v in info_a["caliber"].items() if k != "autotune_mode"}
    assert "summary: 1 shapes" in result.output
    assert not list((tmp_path / "c").rglob(".compile-cache-*"))   # nothing left to load from


def test_json_failure_keeps_its_exit_code_and_nan_becomes_null(tmp_path):
    a = make_run(tmp_path, "a", {"s1": 1.0})
    b = make_run(tmp_path, "b", {"s1": 1.0}, caliber={"timer": "event"}, mode="replay",
                 replay_from=a)
    result = CliRunner().invoke(main, ["ab", str(a), str(b), "--json"])
    assert result.exit_code == 4
    from harness.common.files import json_safe
    assert json_safe({"x": [float("nan"), 1.0, float("inf")]}) == {"x": [None, 1.0, None]}


def test_bench_options_round_trip_through_argv_and_run_json(tmp_path):
    """to_argv is parsed back by `zlh bench` into the same options; from_run reproduces a
    stored run's options with the device pinned; given options replace stored ones."""
    from harness.cli.common import parse_bench_args
    options = BenchOptions.from_flat(adapter="builtin", backend="cpu", dtypes=["float16"],
                                     level="comprehensive", timer="host", repeat=3, l2="warm",
                                     warmup_ms=12.5, min_samples=7, min_time_ms=2.0,
                                     max_time_ms=80.0, target_rel_err=0.002, seed=5,
                                     check=False, ir=False, isolate_tuner_cache=True)
    argv = options.to_argv()
    assert "--no-check" in argv and "--no-ir" in argv and "--out" not in argv
    assert BenchOptions.from_flat(**parse_bench_args(argv, "test")) == options
    assert BenchOptions().to_argv() == []
    info = {"options": options.replace(out=str(tmp_path), replay="/x").to_dict(),
            "device": {"index": 1}, "caliber": {"backend": "cuda"}}
    again = BenchOptions.from_run(info)
    assert again == options.replace(device=1)          # location options are not kept
    given = {"dtypes": ["bfloat16"], "ir": True}
    merged = BenchOptions.from_flat(**{**again.to_flat(), **given})
    assert merged.dtypes == ("bfloat16",) and merged.ir is True and merged.repeat == 3


def test_rounds_with_replay_are_refused_before_anything_runs(tmp_path):
    """--replay compares one new B against a stored A that is never run again: rounds cannot
    apply, so asking for them is a usage error, not a silent single round."""
    a = make_run(tmp_path, "a", {"64x64": 1.0})
    root = tmp_path / "b"
    result = CliRunner().invoke(main, ["ab", "--replay", str(a), "--rounds", "3",
                                       "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert "--rounds does not apply with --replay RUN_A" in result.stderr
    assert "Traceback" not in result.output and not root.exists()


def test_bad_side_options_are_usage_errors(tmp_path):
    result = CliRunner().invoke(main, ["ab", "add", "--switch", "NOEQUALS"])
    assert result.exit_code == 2 and "--switch expects NAME=A_VALUE,B_VALUE" in result.output
    result = CliRunner().invoke(main, ["ab", "only-one-dir"])
    assert result.exit_code == 2 and "give two run directories" in result.output
    recipe = tmp_path / "r.yaml"
    recipe.write_text("ops: [add]\nswitchh: X=0,1\n")
    result = CliRunner().invoke(main, ["ab", "--recipe", str(recipe)])
    assert result.exit_code == 2 and "unknown keys switchh" in result.output


def test_compare_existing_checks_the_caliber_once(tmp_path, monkeypatch):
    a = make_run(tmp_path, "a", {"s1": 1.0})
    b = make_run(tmp_path, "b", {"s1": 1.0}, mode="replay", replay_from=a)
    calls = []
    real = abmod.check_caliber
    monkeypatch.setattr(abmod, "check_caliber", lambda *args: calls.append(args) or real(*args))
    report, code = abmod.compare_existing(a, b, False, echo=lambda _: None)
    assert code == 0 and report is not None and len(calls) == 1


def test_terminal_colour_follows_the_direction_not_the_delta_sign():
    import click
    from harness.ab.render import render_terminal
    from harness.ab.report import ABRow
    row = ABRow(variant="", dtype="float16", shape_detail="8x8", occurrence=0, a_ms=1.004,
                b_ms=1.0, delta_pct=0.4, ci_low_pct=-2.0, ci_high_pct=-0.5, p_value=0.01,
                significant=True, direction=-1, interval="rounds")
    report = ABReport(op="softmax", caliber={}, sides={"A": {}, "B": {}}, rows=[row])
    text = render_terminal(report, colour=True)
    assert click.style("+0.40", fg="red") in text
    assert click.style("+0.40", fg="green") not in text


def with_ir(run: Path, text: str = "module {}\n") -> Path:
    (run / "ttgir/s/k").mkdir(parents=True, exist_ok=True)
    (run / "ttgir/s/k/w4s3.ttgir").write_text(text)
    return run


def test_identical_ir_labels_the_range_as_noise_floor(tmp_path):
    a = with_ir(make_run(tmp_path, "a", {"s1": 1.0, "s2": 2.0}))
    b = with_ir(make_run(tmp_path, "b", {"s1": 1.0, "s2": 2.0}, mode="replay", replay_from=a))
    result = CliRunner().invoke(main, ["ab", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "verdict: NO_IR_DIFF" in result.output
    with_ir(b, "module { changed }\n")
    result = CliRunner().invoke(main, ["ab", str(a), str(b)])
    assert "verdict: IR_CHANGED" in result.output and "summary: 2 shapes" in result.output


def test_broken_by_b_exits_1_and_is_in_the_report(tmp_path):
    a = with_ir(make_run(tmp_path, "a", {"s1": 1.0, "s2": 2.0}))
    b = with_ir(make_run(tmp_path, "b", {"s1": 1.0, "s2": 2.0}, mode="replay", replay_from=a,
                         statuses={"s2": FAILED}), "module { changed }\n")
    result = CliRunner().invoke(main, ["ab", str(a), str(b), "--root", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "!!! BROKEN_BY_B op=softmax: B failed 1 case(s) A ran: bfloat16 s2" in result.stderr
    report = json.loads((tmp_path / "r/report.json").read_text())
    assert report["ops"][0]["broken_by_b"] == ["bfloat16 s2"]


def test_ops_file_for_ab(tmp_path):
    from harness.cli.ab import _ops_from_file
    path = tmp_path / "ir_changed.txt"
    path.write_text("mm\n# comment\nbmm\n")
    assert _ops_from_file(str(path)) == ("mm", "bmm")
    path.write_text("mm::bfloat16\n")
    result = CliRunner().invoke(main, ["ab", "--ops-file", str(path), "--switch", "X=0,1"])
    assert result.exit_code == 2 and "per-op dtypes" in result.output
