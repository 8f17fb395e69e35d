"""Faults and edge cases beyond a bad argument: a full disk, signals, a closed pipe, runs that
did not finish, crashed A/B children, undersampled and suspect samples, `zlh ops` output."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.sides import ABPlan, Side
from harness.cli import main
from harness.common.errors import UsageError
from harness.measure import sample_stats
from harness.measure.measurement import Measurement
from harness.run.options import BenchOptions
from harness.store import rundir as rundir_module

from fake_runs import fake_run
from conftest import FAKE_FLAGGEMS, FAST

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


def shapes(tmp_path, text="add: [[64], [128]]\nsoftmax: [[4, 64]]\n") -> str:
    path = tmp_path / "shapes.yaml"
    path.write_text(text)
    return str(path)


def leftovers(root: Path) -> list[str]:
    """Temp files, private caches and half-built IR trees a run must never leave behind."""
    return [str(p) for p in root.rglob("*") if p.name.startswith((".cache-", ".ttgir."))
            or p.name.endswith(".tmp")]


# ---- a full disk ----------------------------------------------------------------------------
def _enospc_on(monkeypatch, name: str, after: int = 0):
    """Writes of `name` fail with ENOSPC after `after` successful ones."""
    real = rundir_module.atomic_write_text
    seen = {"n": 0}

    def write(path, text):
        if Path(path).name == name:
            seen["n"] += 1
            if seen["n"] > after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, text)
    monkeypatch.setattr(rundir_module, "atomic_write_text", write)


def test_a_full_disk_marks_the_run_failed_and_skips_the_remaining_ops(tmp_path, monkeypatch):
    _enospc_on(monkeypatch, "results.jsonl", after=1)      # the second case cannot be kept
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["bench", "add", "softmax", "--adapter", "builtin",
                                       "--backend", "cpu", "--shapes", shapes(tmp_path),
                                       "--out", str(out), *FAST])
    assert result.exit_code == 1, result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("zlh:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert "add: disk full writing" in errors[0] and "the run is marked failed" in errors[0]
    assert errors[0].endswith("not run (disk full): softmax")
    (run_dir,) = out.iterdir()                                # softmax never started
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("failed", "disk full")
    kept = (run_dir / "results.jsonl").read_text().splitlines()
    assert [json.loads(ln)["shape_detail"] for ln in kept] == ["64"]   # measured before it
    log = (run_dir / "run.log").read_text()
    assert "status: failed (disk full)" in log and " 64 " in log
    assert leftovers(tmp_path) == []


def test_run_json_is_rewritten_in_place_when_no_space_is_left_for_a_new_one(tmp_path,
                                                                            monkeypatch):
    real = rundir_module.atomic_write_json

    def full_once_finished(path, data):
        if data.get("status") != "running":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)
    monkeypatch.setattr(rundir_module, "atomic_write_json", full_once_finished)
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", shapes(tmp_path, "add: [[64]]\n"),
                                       "--out", str(out), *FAST])
    assert result.exit_code == 0, result.output
    (run_dir,) = out.iterdir()
    text = (run_dir / "run.json").read_text()
    assert text.count("\n") == 1                           # compact: written over itself
    assert json.loads(text)["status"] == "complete"
    monkeypatch.setattr(rundir_module, "overwrite_in_place", lambda path, text: False)
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", shapes(tmp_path, "add: [[64]]\n"),
                                       "--out", str(tmp_path / "full"), *FAST])
    assert result.exit_code == 1
    assert "run.json could not be updated" in result.stderr
    assert leftovers(tmp_path) == []


def test_a_run_json_that_fits_only_without_details_marks_the_run_failed(tmp_path,
                                                                        monkeypatch):
    """A full disk at the last run.json: rewritten over itself without its largest details,
    the run reads failed (disk full), not complete without its caliber; exit 1."""
    real_atomic, real_in_place = rundir_module.atomic_write_json, rundir_module.overwrite_in_place

    def full_once_finished(path, data):
        if data.get("status") != "running":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_atomic(path, data)
    monkeypatch.setattr(rundir_module, "atomic_write_json", full_once_finished)
    monkeypatch.setattr(rundir_module, "overwrite_in_place", lambda path, text: (
        "omitted_for_space" in text and real_in_place(path, text)))
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", shapes(tmp_path, "add: [[64]]\n"),
                                       "--out", str(out), *FAST])
    assert result.exit_code == 1 and "the run is marked failed" in result.stderr
    info = json.loads(next(out.glob("*/run.json")).read_text())
    assert (info["status"], info["reason"]) == ("failed", "disk full")
    assert info["omitted_for_space"] and sum(info["counts"].values()) == 1


def test_a_detail_that_fails_as_a_run_ends_does_not_leave_it_running(tmp_path, monkeypatch):
    from harness.run import runner as runner_module

    def broken(*args, **kwargs):
        raise RuntimeError("phase figures unreadable")
    monkeypatch.setattr(runner_module.phases, "phase_fields", broken)
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", shapes(tmp_path, "add: [[64]]\n"),
                                       "--out", str(out), *FAST])
    assert result.exit_code == 0, result.output
    info = json.loads(next(out.glob("*/run.json")).read_text())
    assert info["status"] == "complete" and sum(info["counts"].values()) == 1
    assert info["cleanup_errors"] == ["phase figures unreadable"]


def _mount_tmpfs(path: Path, *options: str) -> bool:
    path.mkdir()
    opts = ",".join(("size=64k", *options))
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.mark.e2e
def test_a_real_full_disk_and_a_read_only_file_system(tmp_path):
    tiny, ro = tmp_path / "tiny", tmp_path / "ro"
    if not (_mount_tmpfs(tiny) and _mount_tmpfs(ro, "ro")):
        pytest.skip("needs root and tmpfs mounts")
    try:
        base = [sys.executable, "-m", "harness", "bench", "add", "softmax", "--adapter",
                "builtin", "--backend", "cpu", "--shapes", shapes(tmp_path), "-q", *FAST]
        proc = subprocess.run(base + ["--out", str(ro / "x")], env=ENV, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 2 and "read-only file system" in proc.stderr
        (tiny / "fill").write_bytes(b"\0" * (52 * 1024))          # about 12 KiB left
        proc = subprocess.run(base + ["--out", str(tiny)], env=ENV, capture_output=True,
                              text=True, timeout=300)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert "disk full" in lines[0] and "not run (disk full): softmax" in lines[0]
        for run_json in tiny.glob("*/run.json"):
            info = json.loads(run_json.read_text())
            assert (info["status"], info.get("reason")) == ("failed", "disk full")
        assert leftovers(tiny) == []
    finally:
        for mount in (tiny, ro):
            subprocess.run(["umount", str(mount)], capture_output=True)


# ---- signals --------------------------------------------------------------------------------
def _interrupt_after_first_case(tmp_path, sig):
    """`zlh bench mm softmax` stopped with `sig` once mm's first case is written: its two
    other cases still take 5 s, room for a slow host to deliver the signal before softmax.
    (mm: its kernel is autotuned, so the run has a record of tuned configs to keep.)"""
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "bench", "mm", "softmax",
                             "--adapter", "builtin", "--backend", "cpu", "--shapes",
                             shapes(tmp_path, "mm: [[16, 16, 16], [16, 32, 16], [32, 16, 16]]"
                                              "\nsoftmax: [[4, 64]]\n"),
                             "--out", str(out), "--min-time-ms", "2500", "--max-time-ms",
                             "2500", "--warmup-ms", "1"], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        found = list(out.glob("mm_*/results.jsonl"))
        if found and found[0].read_text().strip():
            break
        time.sleep(0.1)
    assert proc.poll() is None, f"ended (exit {proc.returncode}) before the signal was sent"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    (run_dir,) = out.glob("mm_*")
    return proc.returncode, stdout, stderr, run_dir


@pytest.mark.parametrize("sig, word", [(signal.SIGINT, "interrupted"),
                                       (signal.SIGTERM, "terminated (SIGTERM)")])
@pytest.mark.e2e
def test_a_signal_leaves_a_complete_run_log(tmp_path, sig, word):
    rc, stdout, stderr, run_dir = _interrupt_after_first_case(tmp_path, sig)
    assert rc == 128 + sig, stderr[-3000:]          # what the run said, when it fails
    assert [ln for ln in stderr.splitlines() if ln.startswith("zlh:")] == [
        next(ln for ln in stderr.splitlines() if ln.startswith("zlh:"))]
    assert f"zlh: {word}" in stderr and "Traceback" not in stderr
    info = json.loads((run_dir / "run.json").read_text())
    name = "SIGINT" if sig == signal.SIGINT else "SIGTERM"
    assert (info["status"], info["reason"]) == ("interrupted", name)
    assert info["counts"]["SUCCESS"] >= 1                           # the cases measured, kept
    assert (run_dir / "autotune" / "records.json").exists()          # and the tuned configs
    log = (run_dir / "run.log").read_text()
    assert log.startswith("zlh bench mm")                            # the header
    assert "16x16x16" in log and " ok, " in log                       # table and summary
    assert log.rstrip().endswith(f"status: interrupted ({name})")
    assert "16x16x16" in stdout                                       # what the console showed
    assert not list((tmp_path / "runs").glob("softmax_*"))            # softmax never started
    assert leftovers(tmp_path) == []


# ---- a closed pipe ----------------------------------------------------------------------------
@pytest.mark.e2e
def test_a_reader_that_goes_away_ends_a_listing_quietly(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness", "ops", "--flaggems-dir",
                             str(FAKE_FLAGGEMS)], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()                                # `| head -0`
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert stderr.strip() == "" or stderr.strip().endswith(" benchmark functions"), stderr


@pytest.mark.e2e
def test_a_bench_whose_stdout_closes_keeps_running_and_finishes_its_files(tmp_path):
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "bench", "add", "softmax",
                             "--adapter", "builtin", "--backend", "cpu", "--shapes",
                             shapes(tmp_path), "--out", str(out), *FAST], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    infos = [json.loads(p.read_text()) for p in out.glob("*/run.json")]
    assert sorted(i["op"] for i in infos) == ["add", "softmax"]
    assert all(i["status"] == "complete" for i in infos)


# ---- runs that did not finish, crashed children, nothing paired -------------------------------
def test_an_unfinished_run_is_compared_only_with_allow_partial(tmp_path):
    rec = fake_run(tmp_path, "a")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    killed = fake_run(tmp_path, "b", mode="replay", replay_from=rec, status="running",
                      pid=gone.pid)
    refused = CliRunner().invoke(main, ["ab", str(rec), str(killed)])
    assert refused.exit_code == 4 and "abandoned" in refused.stderr
    assert "--allow-partial" in refused.stderr.splitlines()[-1]
    allowed = CliRunner().invoke(main, ["ab", str(rec), str(killed), "--allow-partial"])
    assert allowed.exit_code == 0, allowed.output
    assert allowed.stderr.startswith("WARNING [status] add: side B did not complete")
    assert "summary: 1 shapes" in allowed.stdout
    shown = CliRunner().invoke(main, ["show", str(killed)])
    assert shown.exit_code == 0
    assert "WARNING: this run did not complete (status abandoned; its process is gone)" in \
        shown.stdout


def _outcomes(tmp_path, statuses):
    """A stand-in for run_side: each run directory is a fake run with the given status."""
    made = iter(statuses)

    def run_side(plan, op, number, side, replay_from):
        rc, status = next(made)
        run = fake_run(plan.root, f"{op}/r{number}_{side.label}", op=op,
                       mode="record" if replay_from is None else "replay",
                       replay_from=replay_from, status=status)
        outcome = abmod.RunOutcome(number, side.label, rc, 0.1, run, None)
        abmod.append_status(plan.root, op, outcome)
        return outcome
    return run_side


@pytest.mark.parametrize("statuses, problem", [
    ([(0, "complete"), (0, "crashed")], "round 1 side B failed (rc=0, status crashed)"),
    ([(1, "interrupted")], "round 1 side A failed (rc=1, status interrupted)"),
    ([(0, "complete"), (139, "complete")], "round 1 side B failed (rc=139)"),
])
def test_a_crashed_child_is_never_compared(tmp_path, monkeypatch, statuses, problem):
    monkeypatch.setattr(abmod, "check_plan", lambda plan: None)
    monkeypatch.setattr(abmod, "run_side", _outcomes(tmp_path, statuses))
    plan = ABPlan(ops=["add"], a=Side("A"), b=Side("B", {"X": "1"}), root=tmp_path / "ab",
                  options=BenchOptions(adapter="builtin", backend="cpu"))
    lines = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert reports == [] and code == 1
    assert any(problem in line for line in lines), lines


def test_nothing_paired_is_not_a_success(tmp_path):
    rec = fake_run(tmp_path, "a")
    other = fake_run(tmp_path, "b", mode="replay", replay_from=rec, dtype="float16")
    lines = []
    report, code = abmod.compare_existing(rec, other, False, lines.append)
    assert code == 1 and report is not None and report.rows == []
    assert lines == ["!!! add: no case paired between A and B (1 x no such case on side B; "
                     "1 x no such case on side A); nothing was compared"]


# ---- samples that deserve a second look ---------------------------------------------------------
def test_suspect_samples_rule_on_synthetic_data():
    rng = np.random.default_rng(3)
    tight = 0.0066 * (1 + 0.001 * rng.standard_normal(200))
    assert sample_stats.suspect_flags(tight) == ()
    stalled = tight.copy()
    stalled[17] = 16.0                                   # one 16 ms sample among 6.6 us ones
    assert sample_stats.suspect_flags(stalled) == ("outliers",)
    hiccup = tight.copy()
    hiccup[17] *= 1.01                                   # 1%: many spreads out, not 2x
    assert sample_stats.suspect_flags(hiccup) == ()
    two = np.concatenate([1.0 + 0.005 * rng.standard_normal(150),
                          1.3 + 0.005 * rng.standard_normal(50)])
    assert sample_stats.suspect_flags(two) == ("bimodal",)
    few = np.concatenate([1.0 + 0.005 * rng.standard_normal(190),
                          1.3 + 0.005 * rng.standard_normal(10)])
    assert "bimodal" not in sample_stats.suspect_flags(few)     # 5% of samples: not a mode
    close = np.concatenate([1.0 + 0.005 * rng.standard_normal(100),
                            1.03 + 0.005 * rng.standard_normal(100)])
    assert sample_stats.suspect_flags(close) == ()              # a 3% gap is under the 5% floor
    assert sample_stats.suspect_flags([1.0, 100.0, 1.0]) == ()  # too few samples to say
    # heavy-tailed but unimodal timings (host clock): flagged rarely, if ever
    wide = [sample_stats.suspect_flags(rng.lognormal(0.0, 0.3, 100)) for _ in range(200)]
    assert sum(1 for f in wide if f) <= 4
    uniform = [sample_stats.suspect_flags(rng.uniform(1.0, 1.5, 100)) for _ in range(200)]
    assert sum(1 for f in uniform if f) == 0


def test_undersampled_cases_are_marked_in_results_tables_and_show(tmp_path):
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", shapes(tmp_path, "add: [[64]]\n"),
                                       "--out", str(out), "--warmup-ms", "0", "--min-samples",
                                       "50", "--min-time-ms", "0", "--max-time-ms", "0"])
    assert result.exit_code == 0, result.output
    (run_dir,) = out.iterdir()
    row = json.loads((run_dir / "results.jsonl").read_text())
    assert row["gems"]["undersampled"] is True and row["gems"]["n"] < 50
    assert {"torch:undersampled", "gems:undersampled"} <= set(row["flags"])
    assert "gems:undersampled" in (run_dir / "results.csv").read_text()
    assert "BENCHMARK_SAMPLES_FLAGGED op=add" in result.stdout
    assert "flags base/test: u undersampled" in result.stdout
    shown = CliRunner().invoke(main, ["show", str(run_dir)])
    assert "flags: " in shown.stdout and "test:undersampled x1" in shown.stdout
    enough = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", shapes(tmp_path, "add: [[64]]\n"),
                                       "--out", str(tmp_path / "ok"), "--warmup-ms", "0",
                                       "--min-samples", "2", "--min-time-ms", "0",
                                       "--max-time-ms", "30000", "--target-rel-err", "1"])
    # two samples whatever the host: the cap is far off (a paused process once used up a
    # one-second cap) and a loose error target stops at the second sample
    (ok_dir,) = (tmp_path / "ok").iterdir()
    row = json.loads((ok_dir / "results.jsonl").read_text())
    assert enough.exit_code == 0 and row["gems"]["undersampled"] is False


def test_flags_reach_the_ab_notes():
    from harness.ab.pairing import annotations
    from harness.store.results import SUCCESS, Row
    tight = tuple(1.0 + 0.001 * i for i in range(20))

    def row(measurement):
        return Row(op="add", dtype="float32", shape=[1], shape_detail="1", status=SUCCESS,
                   torch=Measurement(tight, "host"), gems=measurement)
    a = row(Measurement(tight, "host", undersampled=True))
    b = row(Measurement(tight[:-1] + (50.0,), "host"))
    assert annotations([(a, b)]) == ["A: undersampled", "B: outliers"]
    assert Measurement.from_dict(a.gems.to_dict()).undersampled is True


def test_builtin_slow_switch_values():
    from adapters.builtin import slow_switch
    for value in ("", "0", "false", "No", "OFF", " 0 "):
        assert slow_switch({"ZLH_BUILTIN_SLOW": value}) is False
    for value in ("1", "true", "YES", "on"):
        assert slow_switch({"ZLH_BUILTIN_SLOW": value}) is True
    assert slow_switch({}) is False
    with pytest.raises(UsageError, match="not a switch value"):
        slow_switch({"ZLH_BUILTIN_SLOW": "banana"})


# ---- zlh ops and help ------------------------------------------------------------------------
def test_ops_fits_the_terminal_filters_and_speaks_json():
    base = ["ops", "--flaggems-dir", str(FAKE_FLAGGEMS)]
    narrow = CliRunner().invoke(main, base, env={"COLUMNS": "40"})
    assert narrow.exit_code == 0
    lines = narrow.stdout.splitlines()
    functions = int(narrow.stderr.split()[0])               # "N benchmark functions"
    assert all(len(ln) <= 40 for ln in lines)
    assert "" not in lines[:1 + functions]                  # header + one line per function
    assert any(ln.endswith("…") for ln in lines)
    wide = CliRunner().invoke(main, base, env={"COLUMNS": ""})
    assert any(len(ln) > 40 for ln in wide.stdout.splitlines())      # a pipe: whole lines
    some = CliRunner().invoke(main, [*base, "SOFTmax"], env={"COLUMNS": ""})
    rows = some.stdout.split("\n\n")[0].splitlines()[1:]   # the skip-guard table follows
    assert some.stderr.startswith(f"{len(rows)} benchmark functions")
    assert rows and all("softmax" in ln.lower() for ln in rows)
    as_json = CliRunner().invoke(main, [*base, "--json", "dup"])
    records = [json.loads(ln) for ln in as_json.stdout.splitlines()]
    assert {r["op"] for r in records} == {"dup:dup_a", "dup:dup_b"}
    assert all({"file", "function", "marks", "skip_marks"} <= set(r) for r in records)


def _commands(group):
    for name, command in group.commands.items():
        yield name, command
        if hasattr(command, "commands"):
            yield from _commands(command)


def test_every_option_has_help_and_backend_help_names_every_alias():
    import backends
    missing = [f"{name} {param.opts[0]}" for name, command in _commands(main)
               for param in command.params
               if param.param_type_name == "option" and not param.hidden
               and not (param.help or "").strip()]
    assert missing == []
    bench_help = CliRunner().invoke(main, ["bench", "--help"]).stdout
    flat = " ".join(bench_help.split())
    for backend in backends.all_backends():
        for alias in backend.aliases:
            assert f"{alias}={backend.name}" in flat


# ---- interpreters of the two sides ------------------------------------------------------------
def test_an_interpreter_is_asked_to_import_what_a_run_needs(tmp_path):
    from harness.ab.preflight import check_interpreter
    from harness.ab.sides import env_for
    from harness.common.errors import PreflightError
    assert check_interpreter(sys.executable, "--python-a", env_for(Side("A"))) == sys.executable
    lacking = tmp_path / "python"
    lacking.write_text("#!/bin/sh\necho /opt/other/bin/python\n"
                       "echo \"cannot import triton: ModuleNotFoundError: No module named "
                       "'triton'\"\nexit 3\n")
    lacking.chmod(0o755)
    with pytest.raises(PreflightError) as caught:
        check_interpreter(str(lacking), "--python-b")
    assert caught.value.message == (
        f"PREFLIGHT_FAILED check=interpreter --python-b {lacking} (python: "
        f"/opt/other/bin/python) cannot import triton: ModuleNotFoundError: No module named "
        f"'triton'")


def test_a_dry_plan_touches_no_device(monkeypatch):
    """`zlh ab` checks each side in its own process before the runs: that check must not
    create a device context (it would hold device memory while the runs measure)."""
    import backends
    from harness.run.plan import plan_bench, preserved_environ
    cpu = type(backends.get_backend("cpu"))
    monkeypatch.setattr(cpu, "activate", lambda self, index: pytest.fail("device activated"))
    options = BenchOptions(adapter="builtin", backend="cpu", dtypes=("float16",))
    with preserved_environ():
        plan = plan_bench(["add"], options, dry_run=True)
        assert plan.dtypes == {"add": ["float16"]} and plan.cache_root is None
        with pytest.raises(UsageError, match="bfloat16 not supported"):   # interpreter env
            plan_bench(["add"], options.replace(dtypes=("bfloat16",)), dry_run=True)


def test_an_output_file_that_is_a_device_or_fifo_is_refused_not_replaced(tmp_path):
    """Atomic writes rename a temporary file over the target: run as root on a device node
    such as /dev/null, that would replace the node itself. A target that exists and is not a
    regular file is refused, and a folder that takes no new file (as /proc) too."""
    from harness.common.errors import UsageError
    from harness.common.files import check_output_file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="exists and is not a regular file"):
        check_output_file(fifo, "--out")
    assert fifo.exists() and not fifo.is_file()
    with pytest.raises(UsageError, match="exists and is a directory"):
        check_output_file(tmp_path, "--out")
    if Path("/proc/self").is_dir():
        with pytest.raises(UsageError, match="cannot create a file in /proc"):
            check_output_file("/proc/zlh-test.yaml", "--out")
    assert check_output_file(tmp_path / "new" / "x.yaml", "--out") == tmp_path / "new" / "x.yaml"
    assert not (tmp_path / "new").exists()                # nothing created by the check
