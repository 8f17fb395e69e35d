"""`zlh screen --timing all|changed|none` on the CPU, with real IR: two user ops whose kernel is
compiled for a GPU target (tests/ir_kernels.py) and launched through Triton's hooks, one whose
code the switch changes (`changed`) and one it leaves alone (`same`). With `changed`, the
verdicts are those of `all`, the NO_IR_DIFF op is never timed, the IR_CHANGED one is, and a
screen stopped between its untimed and its timed pair resumes without redoing either."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.corpus.screen import rescore
from harness.corpus.verdict import IR_CHANGED, NO_IR_DIFF, NO_ROWS, read_tsv
from conftest import FAST, ROOT, importable_cases
from switch_cases import CASES


@pytest.fixture(scope="module")
def screens(tmp_path_factory):
    """{timing: root} of the same screen under each timing mode, made once."""
    base = tmp_path_factory.mktemp("timing")
    mp = pytest.MonkeyPatch()
    importable_cases(mp, base, "ir_cases", CASES)
    roots = {}
    try:
        for timing in ("changed", "all", "none"):
            roots[timing] = base / timing
            result = screen(base, "--timing", timing, "--root", str(roots[timing]),
                            "--stall-timeout", "120",
                            *(["--overlap"] if timing == "changed" else []))
            assert result.exit_code == 0, result.output
    finally:
        mp.undo()
    return roots


def screen(base: Path, *args):
    return CliRunner().invoke(main, ["screen", "--cases", "ir_cases:cases", "--ops",
                                     "changed,same", "--backend", "cpu", *FAST, "--switch",
                                     "ZLH_TEST_SWITCH=0,1", *args])


def run_of(root: Path, side: str, op: str) -> Path:
    return root / side / json.loads((root / side / op / ".complete").read_text())["run_dir"]


def rows_of(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def table(root: Path) -> dict:
    return {r["op"]: r for r in read_tsv(root / "screen.tsv")}


@pytest.mark.e2e
def test_changed_times_only_the_ops_whose_code_changed(screens):
    root = screens["changed"]
    rows = table(root)
    assert {op: r["verdict"] for op, r in rows.items()} == {"changed": IR_CHANGED,
                                                            "same": NO_IR_DIFF}
    assert {op: r["verdict"] for op, r in rows.items()} == \
        {op: r["verdict"] for op, r in table(screens["all"]).items()}
    plan = json.loads((root / "screen.json").read_text())
    assert plan["timing"] == "changed" and plan["batch"]["stall_timeout_s"] == 120
    assert json.loads((root / "A.timed/batch.json").read_text())["stall_timeout_s"] == 120
    # the verdict pass timed nothing: each case ran once, untimed, and says so
    for side in "AB":
        for op in ("changed", "same"):
            run = run_of(root, side, op)
            info = json.loads((run / "run.json").read_text())
            assert info["caliber"]["timer"] == "none" and info["options"]["timing"] is False
            assert [(r["status"], r["gems"], r["torch"]) for r in rows_of(run)] == \
                [("SUCCESS", None, None)]
            assert (run / "ttgir").is_dir()
            # (with --overlap) it held the device shared, beside the other untimed runs
            assert info["device_lock"]["shared_s"] == info["device_lock"]["held_s"] > 0
    # NO_IR_DIFF: never timed, no noise floor, and the table says so
    assert not (root / "A.timed/same").exists() and not (root / "B.timed/same").exists()
    assert rows["same"]["timed"] == "no" and rows["same"]["median_delta_pct"] == "-"
    assert "not timed, so no noise floor" in rows["same"]["note"]
    # IR_CHANGED: a timed pair, both sides replaying A's record
    for side in ("A.timed", "B.timed"):
        run = run_of(root, side, "changed")
        assert rows_of(run)[0]["gems"]["samples_ms"]
        info = json.loads((run / "run.json").read_text())
        assert info["autotune_mode"] == "replay" and "/A/changed/" in info["autotune_replay_from"]
        assert info["device_lock"]["held_s"] > 0 == info["device_lock"]["shared_s"]   # alone
    assert rows["changed"]["timed"] == "yes" and rows["changed"]["median_delta_pct"] != "-"
    assert rows["changed"]["timer"] != "none"        # the caliber of the timed pair
    # (with --overlap) the timed pair ran after every untimed run, one run at a time
    spans = {(side, op): info_of(root, side, op)["device_lock"]["run_span"]
             for side in "AB" for op in ("changed", "same")}
    timed = [info_of(root, side, "changed")["device_lock"]["run_span"]
             for side in ("A.timed", "B.timed")]
    assert max(end for _, end in spans.values()) <= min(start for start, _ in timed)
    assert timed[0][1] <= timed[1][0]


def info_of(root: Path, side: str, op: str) -> dict:
    return json.loads((run_of(root, side, op) / "run.json").read_text())


@pytest.mark.e2e
def test_a_timed_run_loads_the_kernels_its_untimed_run_compiled(screens):
    """Each side's timed run points at the Triton cache the untimed run of that side and op
    kept, compiles nothing (every kernel a cache load), still captures its IR; every kept
    cache is gone once its op's pair is done, timed or not."""
    root = screens["changed"]
    for side in "AB":
        untimed, timed = info_of(root, side, "changed"), info_of(root, f"{side}.timed", "changed")
        kept = untimed["caches"]["env"]["TRITON_CACHE_DIR"]
        assert Path(kept).parent == root / side / "changed"
        assert Path(kept).name.startswith(".compile-cache-")
        assert timed["caches"]["env"]["TRITON_CACHE_DIR"] == kept
        assert timed["options"]["compile_cache"] == kept
        assert untimed["ir"]["compiles"] >= 1 and "compiles" not in timed["ir"]
        assert timed["ir"]["variants"] == untimed["ir"]["variants"] >= 1
        assert (run_of(root, f"{side}.timed", "changed") / "ttgir" / "index.tsv").is_file()
        assert info_of(root, side, "same")["options"]["keep_compile_cache"] is True
    assert not list(root.glob("*/*/.compile-cache-*")) and not list(root.glob("*/*/.cache-*"))
    # timed everything, or nothing: no run keeps its cache
    for timing in ("all", "none"):
        assert not info_of(screens[timing], "A", "changed")["options"]["keep_compile_cache"]


@pytest.mark.e2e
def test_all_times_every_op_and_none_times_nothing(screens):
    rows = table(screens["all"])
    assert [rows[op]["timed"] for op in ("changed", "same")] == ["yes", "yes"]
    assert "noise floor" in rows["same"]["note"] and rows["same"]["median_delta_pct"] != "-"
    assert not (screens["all"] / "A.timed").exists()
    rows = table(screens["none"])
    assert {op: r["verdict"] for op, r in rows.items()} == {"changed": IR_CHANGED,
                                                            "same": NO_IR_DIFF}
    assert [rows[op]["timed"] for op in ("changed", "same")] == ["no", "no"]
    assert not (screens["none"] / "A.timed").exists()
    assert all(r["gems"] is None for op in ("changed", "same") for side in "AB"
               for r in rows_of(run_of(screens["none"], side, op)))


@pytest.mark.e2e
def test_a_screen_stopped_before_its_timed_pair_resumes_without_redoing_work(
        screens, tmp_path, monkeypatch):
    import shutil
    root = tmp_path / "s"
    shutil.copytree(screens["changed"], root, symlinks=True)
    # stopped after the verdict pass and the timed A, before the timed B finished
    (root / "B.timed/changed/.complete").unlink()
    kept = {side: sorted((root / side).glob("*/*_*/run.json")) for side in ("A", "B", "A.timed")}
    importable_cases(monkeypatch, screens["changed"].parent)
    result = CliRunner().invoke(main, ["screen", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    assert {side: sorted((root / side).glob("*/*_*/run.json")) for side in kept} == kept
    assert (root / "B.timed/changed/.complete").exists()
    assert rows_of(run_of(root, "B.timed", "changed"))[0]["gems"]["samples_ms"]
    # B's untimed cache went with the first screen: the timed run compiled into its own
    timed = info_of(root, "B.timed", "changed")
    untimed = Path(info_of(root, "B", "changed")["caches"]["env"]["TRITON_CACHE_DIR"])
    assert timed["options"]["compile_cache"] == str(root / "B/changed" / untimed.name)
    assert Path(timed["caches"]["env"]["TRITON_CACHE_DIR"]).parent.parent == \
        root / "B.timed/changed" and timed["ir"]["compiles"] >= 1
    assert not list(root.glob("*/*/.cache-*")) and not list(root.glob("*/*/.compile-cache-*"))
    assert table(root)["changed"]["timed"] == "yes" and len(table(root)) == 2
    # every step done: a second resume runs nothing
    before = sorted(root.glob("*/*/*_*/run.json"))
    result = CliRunner().invoke(main, ["screen", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    assert sorted(root.glob("*/*/*_*/run.json")) == before


def test_rescore_reads_every_timing_mode_and_roots_older_than_it(screens, tmp_path):
    import shutil
    for timing, root in screens.items():
        copy = shutil.copytree(root, tmp_path / timing, symlinks=True)
        verdicts = rescore(copy, [], lambda _: None)
        assert {op: v.verdict for op, v in verdicts.items()} == {"changed": IR_CHANGED,
                                                                 "same": NO_IR_DIFF}
        assert verdicts["changed"].timed == (timing != "none")
    old = tmp_path / "all"                   # written before --timing: timed everything
    doc = json.loads((old / "screen.json").read_text())
    del doc["timing"]
    (old / "screen.json").write_text(json.dumps(doc))
    verdicts = rescore(old, [], lambda _: None)
    assert verdicts["same"].timed and verdicts["same"].shown_range().startswith("noise floor")


def test_timing_without_the_code_is_refused(tmp_path):
    result = screen(tmp_path, "--timing", "changed", "--no-ir", "--root", str(tmp_path / "s"))
    assert result.exit_code == 2 and "--no-ir does not capture" in result.output
    assert not (tmp_path / "s").exists()


@pytest.mark.e2e
def test_a_screen_killed_after_its_untimed_pair_resumes_at_the_timed_one(screens, tmp_path):
    """SIGTERM once `changed` has its verdict pair (and before `same` ran): the resume keeps
    that pair, times it, screens `same`, and decides as an unbroken screen did."""
    import os
    import signal
    import subprocess
    import sys
    import time
    base = screens["changed"].parent
    env = {**os.environ, "PYTHONPATH": f"{base}:{ROOT}:{ROOT / 'tests'}"}
    root = tmp_path / "s"
    args = [sys.executable, "-m", "harness", "screen", "--cases", "ir_cases:cases", "--ops",
            "changed,same", "--backend", "cpu", *FAST, "--switch", "ZLH_TEST_SWITCH=0,1",
            "--timing", "changed", "--root", str(root)]
    proc = subprocess.Popen(args, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while not (root / "B/changed/.complete").exists() and proc.poll() is None \
                and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (root / "B/same/.complete").exists(), "the screen ended before the kill"
    kept = {side: run_of(root, side, "changed") for side in "AB"}
    result = subprocess.run([sys.executable, "-m", "harness", "screen", "--resume", str(root)],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {side: run_of(root, side, "changed") for side in "AB"} == kept
    assert len(list((root / "A/changed").glob("changed_*"))) == 1
    rows = table(root)
    assert {op: (r["verdict"], r["timed"]) for op, r in rows.items()} == {
        "changed": (IR_CHANGED, "yes"), "same": (NO_IR_DIFF, "no")}


def test_a_root_copied_without_its_ttgir_gets_no_verdict_from_the_code(screens, tmp_path):
    """A run whose ttgir/index.tsv lists dumped files that are gone (an archive that left the
    .ttgir out) is not taken for an op that never reached Triton: the rescore says what is
    missing, and the op has no verdict from the code (NO_ROWS), not NO_TRITON."""
    import shutil
    copy = shutil.copytree(screens["all"], tmp_path / "copied", symlinks=True)
    for path in run_of(copy, "B", "same").rglob("*.ttgir"):
        path.unlink()
    verdicts = rescore(copy, [], lambda _: None)
    assert verdicts["changed"].verdict == IR_CHANGED
    assert verdicts["same"].verdict == NO_ROWS, verdicts["same"]
    assert "side B: TTGIR files its ttgir/index.tsv lists are missing" in verdicts["same"].note


def test_side_b_and_the_timed_pair_start_from_the_dtypes_side_a_fell_back_to(tmp_path,
                                                                              monkeypatch):
    importable_cases(monkeypatch, tmp_path, "ir_cases", CASES)
    root = tmp_path / "dtypes"
    result = screen(tmp_path, "--timing", "changed", "--dtypes", "bfloat16",   # float32 ops
                    "--root", str(root))
    assert result.exit_code == 0, result.output
    assert {r["op"]: r["verdict"] for r in read_tsv(root / "screen.tsv")} == {
        "changed": IR_CHANGED, "same": NO_IR_DIFF}

    def attempts(side: str, op: str) -> tuple[int, str]:
        done = json.loads((root / side / op / ".complete").read_text())
        logs = len(list((root / side / op).glob("run.attempt*.log")))
        return logs, " ".join(done.get("notes") or [])
    # A found it out: the requested dtype (not retried: nothing to run), then the op's own
    assert attempts("A", "changed") == (2, "dtype_fallback")
    for side, op in (("B", "changed"), ("B", "same"), ("A.timed", "changed"),
                     ("B.timed", "changed")):
        logs, notes = attempts(side, op)
        assert (logs, notes) == (1, "settled_by_a=dtypes"), (side, op)
    assert json.loads((run_of(root, "B.timed", "changed") / "run.json").read_text()
                      )["dtypes"] == ["float32"]
