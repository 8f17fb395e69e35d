"""zlh screen: verdicts from constructed run directories, their order, BROKEN_BY_B, rescore,
screen.tsv, resume, and a CPU end-to-end run."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.common.errors import UsageError
from harness.corpus.outcome import CRASH, FAIL, PASS, POISONED, TIMEOUT, Outcome
from harness.corpus.verdict import (BROKEN_BY_B, IR_CHANGED, NO_IR_DIFF, NO_ROWS, NO_TRITON,
                                    SETUP_IR_CHANGED, TSV_COLUMNS, decide, read_tsv)
from harness.measure.measurement import Measurement
from harness.store.caliber import Caliber
from harness.store.results import FAILED, SUCCESS, Row
from harness.store.rundir import RunDir
from conftest import FAST

CALIBER = {"backend": "cuda", "device": "NVIDIA H200", "timer": "graph", "bench_level": "core",
           "shape_mode": "upstream", "tuner_cache": "isolated", "repeat": 1, "l2_policy": "warm",
           "warmup_ms": 100.0, "stopping": {"min_samples": 20}, "autotune_mode": "record",
           "ir_capture": True, "ir_stage": "ttgir"}
TTGIR = 'module attributes {"ttg.num-warps" = 4 : i32} {\n  tt.func @k() { tt.return }\n}\n'
STAMPED = ('module attributes {"ttg.num-warps" = 4 : i32, "ttg.rlc-x" = 2 : i32} {\n'
           '  tt.func @k() { tt.return }\n}\n')


def run_dir(root: Path, name: str, latencies=None, ttgir=TTGIR, setup=None, statuses=None,
            mode="record") -> Path:
    rng = np.random.default_rng(len(name))
    run = RunDir.create(root, name)
    rows = []
    for shape, ms in (latencies or {"64": 1.0, "128": 2.0}).items():
        ok = (statuses or {}).get(shape, SUCCESS) == SUCCESS
        samples = tuple(float(v) for v in ms * (1 + 0.002 * rng.standard_normal(20)))
        rows.append(Row(op="op", dtype="float16", shape=None, shape_detail=shape,
                        status=SUCCESS if ok else FAILED, reason="" if ok else "boom",
                        torch=Measurement(samples, "graph") if ok else None,
                        gems=Measurement(samples, "graph") if ok else None))
    run.write_results(rows)
    run.write_run_json({"op": "op", "status": "complete",
                        "caliber": dict(CALIBER, autotune_mode=mode),
                        "ir": {"measured_variants": 1 if ttgir else 0}})
    if ttgir:
        (run.path / "ttgir/64/k").mkdir(parents=True)
        (run.path / "ttgir/64/k/w4s3.ttgir").write_text(ttgir)
    if setup:
        (run.path / "ttgir/_setup/64/fill").mkdir(parents=True)
        (run.path / "ttgir/_setup/64/fill/w4s3.ttgir").write_text(setup)
    return run.path


def outcome(path: Path | None, status=PASS, rows=2, reason="") -> Outcome:
    return Outcome(status, 0 if status == PASS else 1, 1.5, reason, path, rows, rows)


@pytest.fixture
def sides(tmp_path):
    return tmp_path / "A", tmp_path / "B"


def test_ir_changed_with_kernels_and_convert_counts(sides):
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    b = run_dir(sides[1], "op", {"64": 0.9, "128": 1.8},
                ttgir=TTGIR.replace("tt.return", "ttg.convert_layout tt.return"))
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == IR_CHANGED
    assert v.note == "kernels 1->1, convert_layout 0->1"
    assert v.median_delta_pct == pytest.approx(11.1, abs=0.5)
    assert v.shown_range().startswith("median +11.")


def test_no_ir_diff_after_scrub_and_its_range_is_a_noise_floor(sides):
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    b = run_dir(sides[1], "op", ttgir=STAMPED)             # the switch only stamps
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == NO_IR_DIFF and v.shown_range().startswith("noise floor ")
    assert SETUP_IR_CHANGED not in v.note


def test_sides_timed_with_different_timers_are_said_in_the_note(sides):
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    b = run_dir(sides[1], "op", ttgir=TTGIR)
    info = json.loads((b / "run.json").read_text())
    info["caliber"]["timer"] = "event"              # B fell back to event timing
    (b / "run.json").write_text(json.dumps(info))
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == NO_IR_DIFF
    assert v.note.endswith("; timers differ (A graph, B event): the delta mixes two timers")
    assert "timers differ" not in decide("op", outcome(a), outcome(a)).note


def test_setup_only_change_is_noted_never_ir_changed(sides):
    a = run_dir(sides[0], "op", setup=TTGIR)
    b = run_dir(sides[1], "op", setup=TTGIR.replace("@k", "@fill2"))
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == NO_IR_DIFF and SETUP_IR_CHANGED in v.note


def test_no_triton_has_no_range(sides):
    a = run_dir(sides[0], "op", ttgir=None)
    b = run_dir(sides[1], "op", ttgir=None)
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == NO_TRITON and v.shown_range() == ""
    assert "nothing went through Triton" in v.note


def test_rule_order_no_rows_before_everything(sides):
    a = run_dir(sides[0], "op", ttgir=None, statuses={"64": FAILED, "128": FAILED})
    b = run_dir(sides[1], "op", ttgir=None)
    v = decide("op", outcome(a, FAIL, 0, "2 of 2 cases failed"), outcome(b))
    assert v.verdict == NO_ROWS and "side A FAIL: 2 of 2 cases failed" in v.note
    v = decide("op", outcome(run_dir(sides[0], "x")),
               Outcome(TIMEOUT, 124, 30.0, "no result", None))
    assert v.verdict == NO_ROWS and "time problem, not a verdict on the switch" in v.note
    v = decide("op", outcome(None, FAIL, 0, "zlh: unknown op"), None)
    assert v.verdict == NO_ROWS and "side B not run" in v.note and v.shown_range() == ""


def test_broken_by_b_is_flagged_whatever_the_verdict(sides):
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    b = run_dir(sides[1], "op", ttgir=TTGIR + "// other\n", statuses={"128": FAILED})
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == IR_CHANGED and v.broken and v.broken_by_b == ["float16 128"]
    assert v.note.startswith(f"{BROKEN_BY_B} 1 case(s) B failed that A ran (float16 128)")



def test_a_failed_input_builder_on_b_breaks_the_cases_it_took_with_it(sides):
    """B's input builder raised after its first shape (out of memory, say): one FAILED row
    named after the op, and A's second shape never built on B. That is BROKEN_BY_B, not a
    quiet IR difference."""
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    b = run_dir(sides[1], "op", {"64": 1.0, "op": 1.0}, ttgir=TTGIR + "// fewer kernels\n",
                statuses={"op": FAILED})
    v = decide("op", outcome(a), outcome(b))
    assert v.broken and v.broken_by_b == ["float16 128 (not run on B)"]
    assert v.note.startswith(f"{BROKEN_BY_B} 1 case(s) B failed that A ran")


def test_a_b_whose_process_died_under_its_cases_broke_those_it_did_not_reach(sides):
    """Switch B crashes the op (a segfault on its second case, a device made unusable): B's
    run has no row for it, no FAILED row either — still BROKEN_BY_B, not a quiet NO_ROWS or a
    verdict on the first case. A B that timed out is a time problem, not counted."""
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    for status, rows in ((CRASH, {"64": 1.0}), (POISONED, {"64": 1.0})):
        b = run_dir(sides[1], f"op{status}{len(rows)}", rows, ttgir=TTGIR)
        v = decide("op", outcome(a), outcome(b, status, rows=len(rows)))
        assert v.broken and "float16 128 (not run on B)" in v.broken_by_b, (status, v.note)
        assert v.note.startswith(BROKEN_BY_B), v.note
    timed_out = decide("op", outcome(a), outcome(b, TIMEOUT, rows=0))
    assert not timed_out.broken_by_b


def test_a_case_b_lacks_without_any_failure_is_not_broken(sides):
    a = run_dir(sides[0], "op", ttgir=TTGIR)
    b = run_dir(sides[1], "op", {"64": 1.0}, ttgir=TTGIR)
    assert decide("op", outcome(a), outcome(b)).broken_by_b == []



def test_a_verdict_from_a_side_that_timed_out_says_so(sides):
    """Both sides reached one case before the op timeout: the code comparison stands on that
    case, and the note must say the sides were cut short."""
    a = run_dir(sides[0], "op", {"64": 1.0}, ttgir=TTGIR)
    b = run_dir(sides[1], "op", {"64": 1.0}, ttgir=TTGIR + "// other\n")
    v = decide("op", Outcome(TIMEOUT, 124, 60.0, "no result", a, 1, 1),
               Outcome(TIMEOUT, 124, 60.0, "no result", b, 1, 1))
    assert v.verdict == IR_CHANGED
    assert v.note == ("kernels 1->1, convert_layout 0->0; side A TIMEOUT after 1 case(s): the "
                      "verdict covers those; side B TIMEOUT after 1 case(s): the verdict "
                      "covers those")
    assert "TIMEOUT" not in decide("op", outcome(a), outcome(b)).note

SHAPES = "add: [[64]]\nsoftmax: [[4, 64]]\n"


def screen_cli(tmp_path, *args):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(SHAPES)
    return CliRunner().invoke(main, ["screen", "--adapter", "builtin", "--backend", "cpu",
                                     "--shapes", str(shapes), *FAST, *args])


@pytest.fixture
def add_screen(corpus_roots):
    """`zlh screen --ops add --switch ZLH_BUILTIN_SLOW=0,1` (conftest's, made once for every
    module that reads it): the tests that rescore, resume or damage a screen work on copies
    (`copy_screen`)."""
    return corpus_roots / "screen"


def copy_screen(add_screen: Path, root: Path) -> Path:
    shutil.copytree(add_screen, root, symlinks=True)
    return root


@pytest.mark.e2e
def test_cpu_end_to_end_screen(tmp_path):
    root = tmp_path / "s"
    result = screen_cli(tmp_path, "--ops", "add,softmax,fault_raise", "--switch",
                        "ZLH_BUILTIN_SLOW=0,1", "--root", str(root))
    assert result.exit_code == 0, result.output
    rows = {r["op"]: r for r in read_tsv(root / "screen.tsv")}
    assert {op: r["verdict"] for op, r in rows.items()} == {
        "add": NO_TRITON, "softmax": NO_TRITON, "fault_raise": NO_ROWS}
    header = (root / "screen.tsv").read_text().splitlines()[0].split("\t")
    assert tuple(header) == TSV_COLUMNS and header[-len(Caliber.field_names()):] == \
        list(Caliber.field_names())
    assert rows["add"]["backend"] == "cpu" and rows["add"]["autotune_mode"] == "record"
    assert rows["add"]["median_delta_pct"] == "-"             # NO_TRITON: no range
    assert "interpreter compiles nothing" in rows["add"]["note"]
    # side B replayed side A's record, each side is an ordinary batch root
    b_run = json.loads((root / "B/add/.complete").read_text())["run_dir"]
    info = json.loads((root / "B" / b_run / "run.json").read_text())   # relative to B/
    assert info["autotune_mode"] == "replay" and "/A/add/" in info["autotune_replay_from"]
    assert (root / "A/ops_status.csv").exists() and (root / "B/batch.json").exists()
    assert (root / "ir_changed.txt").read_text() == ""
    assert "NO_TRITON 2, NO_ROWS 1" in result.output


@pytest.mark.e2e
def test_rescore_with_a_new_scrub_and_resume(tmp_path, add_screen):
    """A screen whose B stamps a value into the IR reads IR_CHANGED; rescoring with a scrub
    for that stamp turns it into NO_IR_DIFF, keeping the screen's own table."""
    root = copy_screen(add_screen, tmp_path / "s")
    for side, text in (("A", TTGIR), ("B", TTGIR.replace("@k()", "@k() attributes {stamp = 7}"))):
        run = root / side / json.loads((root / side / "add/.complete").read_text())["run_dir"]
        (run / "ttgir/64/k").mkdir(parents=True, exist_ok=True)
        (run / "ttgir/64/k/w4s3.ttgir").write_text(text)
    lines = []
    from harness.corpus.screen import rescore
    verdicts = rescore(root, [], lines.append)
    assert verdicts["add"].verdict == IR_CHANGED and "add NO_TRITON -> IR_CHANGED" in lines
    result = CliRunner().invoke(main, ["screen", "--rescore", str(root), "--scrub",
                                       r" attributes \{stamp = \d+\}"])
    assert result.exit_code == 0, result.output
    assert "add IR_CHANGED -> NO_IR_DIFF" in result.output
    # the table as the screen wrote it, kept by the first rescore, not replaced by the second
    assert read_tsv(root / "screen.tsv.before-rescore")[0]["verdict"] == "NO_TRITON"
    assert read_tsv(root / "screen.tsv")[0]["verdict"] == NO_IR_DIFF
    # resume: a finished pair is not run again; an unfinished side B is
    (root / "B/add/.complete").unlink()
    before = set((root / "A/add").glob("add_*"))
    result = CliRunner().invoke(main, ["screen", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    assert set((root / "A/add").glob("add_*")) == before
    assert (root / "B/add/.complete").exists() and list((root / "B/.abandoned").iterdir())
    assert len(read_tsv(root / "screen.tsv")) == 1


def test_screen_bad_inputs(tmp_path):
    result = screen_cli(tmp_path, "--ops", "add")
    assert result.exit_code == 2 and "say what differs between the sides" in result.output
    result = screen_cli(tmp_path, "--ops", "add", "--switch", "X=0,1", "--scrub", "(")
    assert result.exit_code == 2 and "bad scrub pattern" in result.output
    result = CliRunner().invoke(main, ["screen", "--rescore", str(tmp_path)])
    assert result.exit_code == 2 and "not a screen root" in result.output


@pytest.mark.e2e
def test_a_side_interpreter_without_the_imports_is_a_preflight_failure(tmp_path, add_screen):
    """Checked before the root exists, new or resumed: otherwise every op of that side would
    end as a worker that never started, and the screen would exit 0 with NO_ROWS."""
    broken = tmp_path / "python-without-torch"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\n"
                      "exit 1\n")
    broken.chmod(0o755)
    root = tmp_path / "s"
    result = screen_cli(tmp_path, "--ops", "add", "--python-a", str(broken), "--root", str(root))
    assert result.exit_code == 3, result.output
    assert "PREFLIGHT_FAILED check=interpreter --python-a" in result.output
    assert "No module named torch" in result.output and not root.exists()
    copy_screen(add_screen, root)
    doc = json.loads((root / "screen.json").read_text())
    doc["B"]["python"] = str(broken)
    (root / "screen.json").write_text(json.dumps(doc))
    (root / "B/add/.complete").unlink()
    result = CliRunner().invoke(main, ["screen", "--resume", str(root)])
    assert result.exit_code == 3, result.output
    assert "screen.json: --python-b" in result.output


def test_rescore_leaves_out_an_op_whose_side_b_was_cut_short(tmp_path, add_screen):
    """A screen killed while side B ran (its run directory there, no .complete) has no verdict
    for that op yet: a rescore must not turn it into NO_ROWS ('side B not run'), it keeps no
    row until a resume runs B."""
    from harness.corpus.screen import rescore
    root = copy_screen(add_screen, tmp_path / "s")
    (root / "B/add/.complete").unlink()
    warned = []
    with pytest.raises(UsageError, match="no op has finished"):
        rescore(root, [], lambda _: None, warned.append)
    assert any("1 op(s) not finished" in w and "add" in w for w in warned)
