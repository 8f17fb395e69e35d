"""An A/B cut short keeps what it measured: `zlh ab` names the root and `--rescore`, which
reports the rounds whose runs of both sides completed (the first that did not, and those
after it, said and left out); `--rescore` holds the root and refuses a damaged plan.json."""
from __future__ import annotations

import json

from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.rescore import rescore
from harness.cli import main
from harness.common.lock import holding
from test_rounds_auto import auto_plan, synthetic_sides

from harness.ab.rounds import AutoRounds


def three_rounds(tmp_path, monkeypatch):
    synthetic_sides(monkeypatch, b_ratio=0.9, sd=0.0002)
    plan = auto_plan(tmp_path, AutoRounds())
    plan.auto, plan.rounds = None, 3
    abmod.run_ab(plan, echo=lambda _: None)
    return tmp_path / "ab"


def set_status(root, number: int, side: str, status: str) -> None:
    (run,) = (root / "softmax" / f"r{number}_{side}").iterdir()
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps(dict(info, status=status)))


def test_rescore_reports_the_rounds_before_the_first_that_did_not_complete(
        tmp_path, monkeypatch):
    root = three_rounds(tmp_path, monkeypatch)
    assert json.loads((root / "report.json").read_text())["ops_done"] == ["softmax"]
    set_status(root, 2, "A", "interrupted")
    lines = []
    (report,), code = rescore(root, [], None, False, lines.append)
    assert code == 0 and report.summary.get("rounds", 1) == 1
    assert any(line.startswith("WARNING softmax: round 2 and later left out (side A "
                               "interrupted") and "reporting 1 round(s)" in line
               for line in lines), lines
    # the CLI the same way: no refusal, no --allow-partial asked for
    result = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert result.exit_code == 0, result.output
    assert "round 2 and later left out" in result.output
    set_status(root, 1, "B", "interrupted")        # not one round left: the op is left out
    result = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert result.exit_code == 1 and "no round whose runs of both sides completed" in \
        result.output, result.output


def test_a_round_that_failed_on_its_own_fails_the_op_as_zlh_ab_does(tmp_path, monkeypatch):
    """A crashed run is no interruption: zlh ab gives no report for the op and exits 1, and
    so does the rescore (not a report of the rounds before it)."""
    root = three_rounds(tmp_path, monkeypatch)
    set_status(root, 2, "B", "crashed")
    lines = []
    reports, code = rescore(root, [], None, False, lines.append)
    assert code == 1 and reports == []
    assert any("!!! softmax: round 2 failed (side B crashed" in ln and
               "no report for this op" in ln for ln in lines), lines


def set_rc(root, number: int, side: str, rc: int, went_on: bool = True) -> None:
    """status.tsv's exit status of the op's run of round `number`, side `side`; `went_on`
    False: the rows of later rounds dropped (the A/B went no further)."""
    rows = [line.split("\t") for line in (root / "status.tsv").read_text().splitlines()]
    for row in rows[1:]:
        if row[0] == str(number) and row[2] == side:
            row[3] = str(rc)
    rows = [row for row in rows if went_on or not row[0].isdigit() or int(row[0]) <= number]
    (root / "status.tsv").write_text("\n".join("\t".join(r) for r in rows) + "\n")


def test_the_rescore_reads_a_runs_exit_status_as_zlh_ab_did(tmp_path, monkeypatch):
    """status.tsv's exit status decides as the live A/B did. zlh ab records a stop of the A/B
    as plan.json's `stop_rc` (-1) and only so: that cuts the rounds short; any other code but
    a pass — an abort, an exit 7, a timeout (124), no result (125), a signal that killed the
    run alone (out of memory), even the last run's — fails the op, whether its run.json was
    left running, says interrupted or even complete, or it wrote none. A root written before
    `stop_rc` read a stop's signal as a stop where the A/B went no further."""
    import shutil
    root = three_rounds(tmp_path, monkeypatch)
    status_tsv = (root / "status.tsv").read_text()
    plan = json.loads((root / "plan.json").read_text())
    assert plan["stop_rc"] == -1
    legacy = {k: v for k, v in plan.items() if k != "stop_rc"}

    def reads(status, rc, went_on, failed):
        (root / "status.tsv").write_text(status_tsv)
        set_status(root, 2, "B", status)
        set_rc(root, 2, "B", rc, went_on)
        lines = []
        reports, code = rescore(root, [], None, False, lines.append)
        case = (status, rc, went_on, lines)
        assert code == (1 if failed else 0), case
        assert (reports == []) == failed, case
        said = [ln for ln in lines if "round 2" in ln]
        assert said and ("round 2 failed" in said[0]) == failed, case

    for status, rc, went_on, failed in (
            ("running", -1, False, False), ("interrupted", -1, False, False),
            ("running", -15, False, True), ("running", -9, False, True),
            ("interrupted", -2, False, True), ("running", -6, False, True),
            ("interrupted", 124, False, True), ("complete", 7, False, True),
            ("running", 125, False, True), ("complete", -9, True, True)):
        reads(status, rc, went_on, failed)
    (root / "plan.json").write_text(json.dumps(legacy))
    for status, rc, went_on, failed in (
            ("running", -15, False, False), ("running", -1, False, False),
            ("running", -9, False, False), ("interrupted", -2, False, False),
            ("running", -6, False, True), ("interrupted", 124, False, True),
            ("complete", 7, False, True), ("running", 125, False, True),
            ("complete", -9, True, True), ("running", -15, True, True),
            ("interrupted", 130, True, True)):
        reads(status, rc, went_on, failed)
    (root / "plan.json").write_text(json.dumps(plan))
    shutil.rmtree(root / "softmax" / "r2_B")         # a side that died before its run dir
    set_rc(root, 2, "B", 7)
    lines = []
    reports, code = rescore(root, [], None, False, lines.append)
    assert code == 1 and reports == [] and "side B has no run, exit status 7" in lines[-1]


def test_an_ab_cut_at_a_rounds_boundary_reads_interrupted(tmp_path, monkeypatch):
    """Cut after round 2 of 3, before round 3 began: nothing of round 3 is on disk, yet the
    plan asked for 3 — the rescore says so and reports 2."""
    import shutil
    root = three_rounds(tmp_path, monkeypatch)
    for side in "AB":
        shutil.rmtree(root / "softmax" / f"r3_{side}")
    lines = []
    (report,), code = rescore(root, [], None, False, lines.append)
    assert code == 0 and report.summary["rounds"] == 2
    assert any("round 3 and later never ran; reporting 2 round(s)" in ln for ln in lines), lines


def test_rescore_waits_its_turn_and_refuses_a_damaged_plan(tmp_path, monkeypatch):
    root = three_rounds(tmp_path, monkeypatch)
    before = (root / "report.json").read_text()
    monkeypatch.setattr("harness.common.lock.LEFTOVER_WAIT_S", 0.0)
    with holding(root, "ab"):
        monkeypatch.setattr("harness.common.lock._HELD", {})     # as another process
        result = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert result.exit_code == 2 and "is in use by zlh ab" in result.output, result.output
    assert (root / "report.json").read_text() == before
    assert not (root / "report.json.before-rescore").exists()
    plan = json.loads((root / "plan.json").read_text())
    for field, value, said in (("ops", [], "field ops"), ("scrub", ["("], "field scrub"),
                               ("scrub", "x", "field scrub"), ("A", "x", "field A"),
                               ("rounds", "3", "field rounds"), ("rounds", 0, "field rounds"),
                               ("rounds_auto", {"target_pct": 0.1}, "field rounds_auto: rounds_auto is malformed"),
                               ("rounds_auto", "x", "field rounds_auto: expected an object"),
                               ("rounds_auto", {"target_pct": 0, "min_rounds": 8,
                                                "max_rounds": 16}, "field rounds_auto: ")):
        (root / "plan.json").write_text(json.dumps(dict(plan, **{field: value})))
        result = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
        assert result.exit_code == 2 and said in result.output, (field, result.output)
    assert (root / "report.json").read_text() == before


def interrupted(plan, echo, progress):
    """A run of the A/B or calibration plan that makes its root (its plan.json written, as
    orchestrate.ab_root does first) and is cut short."""
    plan.root.mkdir(parents=True)
    (plan.root / "plan.json").write_text("{}")
    raise KeyboardInterrupt


def test_an_interrupted_ab_names_its_root_and_the_rescore(tmp_path, monkeypatch):
    monkeypatch.setattr(abmod, "run_ab", interrupted)
    root = tmp_path / "ab"
    result = CliRunner().invoke(main, ["ab", "add", "--adapter", "builtin", "--backend", "cpu",
                                       "--env-b", "ZLH_BUILTIN_SLOW=1", "--root", str(root)])
    assert result.exit_code == 130
    assert (f"interrupted; the runs of finished rounds are kept under {root}: zlh ab "
            f"--rescore {root} reports them") in result.output, result.output


def test_an_interrupted_calibration_names_its_root_and_the_rescore(tmp_path, monkeypatch):
    import harness.cli.calibrate as calibrate_cli
    monkeypatch.setattr(calibrate_cli, "run_calibration", interrupted)
    root = tmp_path / "cal"
    result = CliRunner().invoke(main, ["calibrate", "add", "--adapter", "builtin",
                                       "--backend", "cpu", "--root", str(root)])
    assert result.exit_code == 130
    assert (f"interrupted; the floors of the ops that finished (calibration.json, complete: "
            f"false, when one did) and the runs of finished rounds are kept under {root}: zlh "
            f"ab --rescore {root} reports those rounds") in result.output, result.output


def test_a_round_with_one_side_only_is_said_and_an_auto_design_reads_interrupted(
        tmp_path, monkeypatch):
    """Cut short after round 3's A and before its B: the rescore reports rounds 1-2 and says
    round 3 was left out; under --rounds auto the design reads `interrupted`, neither the
    target nor the cap."""
    import shutil
    synthetic_sides(monkeypatch, b_ratio=0.999, sd=0.001)
    abmod.run_ab(auto_plan(tmp_path, AutoRounds(0.15, 3, 6)), echo=lambda _: None)
    root = tmp_path / "ab"
    for number in range(4, 7):
        for side in "AB":
            shutil.rmtree(root / "softmax" / f"r{number}_{side}", ignore_errors=True)
    shutil.rmtree(root / "softmax" / "r3_B")
    lines = []
    (report,), code = rescore(root, [], None, False, lines.append)
    assert report.summary["rounds"] == 2
    assert any("round 3 and later left out (side B has no run)" in ln for ln in lines), lines
    assert report.summary["rounds_design"]["stopped_by"] == "interrupted"


def test_calibrate_runs_an_op_named_twice_once(tmp_path, monkeypatch):
    import harness.cli.calibrate as calibrate_cli
    seen = []
    monkeypatch.setattr(calibrate_cli, "run_calibration",
                        lambda plan, echo, progress: (seen.append(plan.ops), ([], 0))[1])
    result = CliRunner().invoke(main, ["calibrate", "add", "softmax", "add", "--adapter",
                                       "builtin", "--backend", "cpu", "--root",
                                       str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert seen == [["add", "softmax"]]


def test_a_calibration_cut_short_keeps_the_floor_of_the_ops_that_finished(tmp_path, monkeypatch):
    """Ctrl-C after the first op: calibration.json holds that op (complete: false), usable as
    a noise floor; the op cut short is not in it."""
    import harness.calibrate.run as calibrate_run
    from harness.calibrate.noise import NoiseFloor
    synthetic_sides(monkeypatch, b_ratio=1.0, sd=0.001)
    real = calibrate_run.run_rounds

    def stop_after_the_first_op(ab_plan, echo, progress):
        ab_plan.ops = ab_plan.ops[:1]
        real(ab_plan, echo, progress)                 # softmax finishes, report.json says so
        raise KeyboardInterrupt                       # … and the next op is cut short
    monkeypatch.setattr(calibrate_run, "run_rounds", stop_after_the_first_op)
    root = tmp_path / "cal"
    result = CliRunner().invoke(main, ["calibrate", "softmax", "mm", "--adapter", "builtin",
                                       "--backend", "cpu", "--rounds", "2", "--root", str(root)])
    assert result.exit_code == 130, result.output
    doc = json.loads((root / "calibration.json").read_text())
    assert doc["complete"] is False and [op["op"] for op in doc["ops"]] == ["softmax"]
    NoiseFloor.load(root / "calibration.json")       # usable as --noise-floor


def test_calibrate_takes_the_op_of_user_cases_and_asks_for_one_otherwise(tmp_path, monkeypatch):
    import harness.cli.calibrate as calibrate_cli
    seen = []
    monkeypatch.setattr(calibrate_cli, "run_calibration",
                        lambda plan, echo, progress: (seen.append(plan.ops), ([], 0))[1])
    ok = CliRunner().invoke(main, ["calibrate", "--cases", "my_cases:cases", "--backend",
                                   "cpu", "--root", str(tmp_path / "c")])
    assert ok.exit_code == 0, ok.output
    assert seen == [["cases"]]
    none = CliRunner().invoke(main, ["calibrate", "--adapter", "builtin", "--backend", "cpu"])
    assert none.exit_code == 2 and "name at least one op to calibrate" in none.output


def test_an_interrupted_replay_names_side_b_run_and_the_compare(tmp_path, monkeypatch):
    """`zlh ab --replay RUN_A` cut short while side B ran: the line names B's run (the cases
    it measured) and the command that compares them; --json still prints, marked
    interrupted; with no run of B made, the line says nothing was measured."""
    root = tmp_path / "ab"

    def cut_short(run_a, given, root, *args):
        run = root / "add" / "r1_B" / "add_20260101-000000"
        run.mkdir(parents=True)
        (run / "run.json").write_text("{}")
        raise KeyboardInterrupt
    monkeypatch.setattr(abmod, "replay_against", cut_short)
    result = CliRunner().invoke(main, ["ab", "--replay", "runA", "--root", str(root),
                                       "--json"])
    assert result.exit_code == 130, result.output
    run = root / "add" / "r1_B" / "add_20260101-000000"
    assert (f"interrupted; side B's cases measured so far are in {run}: zlh ab runA {run} "
            f"--allow-partial compares them") in result.stderr
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True and doc["exit_code"] == 130

    def before_b(run_a, given, root, *args):
        raise KeyboardInterrupt
    monkeypatch.setattr(abmod, "replay_against", before_b)
    result = CliRunner().invoke(main, ["ab", "--replay", "runA", "--root",
                                       str(tmp_path / "none")])
    assert result.exit_code == 130
    assert f"side B made no run under {tmp_path / 'none'} (nothing was measured)" in \
        result.output, result.output


def test_an_op_the_cut_came_before_is_said_not_failed_but_a_finished_ops_lost_folder_fails(
        tmp_path, monkeypatch):
    root = three_rounds(tmp_path, monkeypatch)
    plan = json.loads((root / "plan.json").read_text())
    (root / "plan.json").write_text(json.dumps(dict(plan, ops=["softmax", "gelu"])))
    lines: list[str] = []
    reports, code = rescore(root, [], None, False, lines.append)
    assert code == 0 and [r.op for r in reports] == ["softmax"]
    assert "WARNING gelu: never ran (the A/B was cut short before it); not in the report" \
        in lines
    import shutil
    shutil.rmtree(root / "softmax")                  # report.json says it finished
    lines.clear()
    reports, code = rescore(root, [], None, False, lines.append)
    assert code == 1 and any("!!! softmax: no round whose runs" in ln for ln in lines), lines


def test_rescore_of_a_missing_folder_or_a_looping_link_says_so(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for root, said in ((tmp_path / "nope", "no such folder"),
                       (loop, "a symbolic link that leads nowhere")):
        result = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
        assert result.exit_code == 2 and f"--rescore {root}: {said}" in result.output, \
            result.output
