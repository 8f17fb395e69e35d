"""zlh batch: selection, sharding, statuses from the fault ops, retries, dtype fallback,
resume after SIGKILL, worker reuse, the batch files."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FAKE_FLAGGEMS, FAST, FAULT_OP_TIMEOUT, ROOT
from harness.run.options import BenchOptions
from harness.cli import main
from harness.common.errors import UsageError
from harness.corpus import batch as batchmod
from harness.corpus.outcome import CRASH, FAIL, PASS, TIMEOUT, Attempt
from harness.corpus.selection import Item, parse_dismiss, parse_ops_file, select
from harness.corpus.sharding import device_for, shard

FAKE = FAKE_FLAGGEMS


def shapes_file(tmp_path) -> Path:
    path = tmp_path / "shapes.yaml"
    path.write_text("add: [[64]]\nsoftmax: [[4, 64]]\nmm: [[16, 16, 16]]\n")
    return path


def zlh_batch(tmp_path, *args, out="batch"):
    return CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                     "--shapes", str(shapes_file(tmp_path)), *FAST,
                                     "--out", str(tmp_path / out), *args])


def status_rows(root: Path) -> dict[str, dict]:
    with open(root / "ops_status.csv", newline="") as handle:
        return {r["op"]: r for r in csv.DictReader(handle)}


# ---- selection --------------------------------------------------------------------------
def test_ops_file_lines_comments_and_per_op_dtypes(tmp_path):
    path = tmp_path / "ops.txt"
    path.write_text("# corpus subset\nsoftmax\n\nperf_sort:sort\nmm::bfloat16,float16  # dtypes\n"
                    "add:add:\n")
    assert parse_ops_file(str(path)) == [
        Item("softmax"), Item("perf_sort:sort"), Item("mm", ("bfloat16", "float16")),
        Item("add:add")]
    path.write_text("a:b:c:d\n")
    with pytest.raises(UsageError, match=r"ops.txt:1: expected \[vllm:\]op\[:op_file\[:dtypes\]\]"):
        parse_ops_file(str(path))
    # the repository prefix belongs to the op: a vllm op takes a file and dtypes too
    path.write_text("vllm:softmax\nvllm:perf_sort:sort:bfloat16\nvllm:gelu::float16\n")
    assert parse_ops_file(str(path)) == [
        Item("vllm:softmax"), Item("vllm:perf_sort:sort", ("bfloat16",)),
        Item("vllm:gelu", ("float16",))]
    path.write_text("softmax:bfloat16\n")       # a dtype where the file goes: said so
    result = zlh_batch(tmp_path, "--ops-file", str(path))
    assert result.exit_code == 2 and "'bfloat16' stands where the op's file goes" in \
        result.output and "write softmax::bfloat16" in result.output
    result = zlh_batch(tmp_path, "--ops", "softmax:bfloat16")
    assert result.exit_code == 2 and "'bfloat16' is a dtype" in result.output and \
        "--dtypes bfloat16" in result.output


def test_all_leaves_out_unconditional_skips_and_dismissed_ops():
    import adapters
    adapter = adapters.get_adapter("flaggems", flaggems_dir=str(FAKE))
    items, left = select(adapter, True, None, None)
    names = {i.op for i in items}
    assert "always_skipped:skipped" not in names and "sometimes_skipped:skipped" in names
    assert ("always_skipped:skipped", "unconditional skip mark") in left
    items, _ = select(adapter, True, None, None, include_skipped=True)
    assert "always_skipped:skipped" in {i.op for i in items}
    items, left = select(adapter, True, None, None,
                         dismiss={"flaggems:softmax": "no GPU, 2026-11-29", "dup": "x"})
    assert "softmax" not in {i.op for i in items}
    assert ("softmax", "dismissed: no GPU, 2026-11-29") in left


def test_dismiss_file_format(tmp_path):
    path = tmp_path / "dismiss.txt"
    path.write_text("# header\nvllm:flash_mla  # needs SM100, 2026-11-29\nsoftmax\n")
    assert parse_dismiss(path) == {"vllm:flash_mla": "needs SM100, 2026-11-29",
                                   "softmax": "dismissed"}


def test_selection_errors():
    import adapters
    adapter = adapters.get_adapter("builtin")
    with pytest.raises(UsageError, match="exactly one of --all"):
        select(adapter, True, ["add"], None)
    with pytest.raises(UsageError, match="unknown op 'ad'"):
        select(adapter, False, ["add", "ad"], None)
    with pytest.raises(UsageError, match="selection is empty"):
        select(adapter, True, None, None, dismiss={"add": "x", "mm": "x", "softmax": "x"})
    items, _ = select(adapter, False, ["add", "add", "mm"], None)
    assert [i.op for i in items] == ["add", "mm"]            # duplicates run once


def test_an_op_named_a_thousand_times_gives_one_warning_line(tmp_path):
    import adapters
    adapter = adapters.get_adapter("builtin")
    warned = []
    items, _ = select(adapter, False, ["mm"] + ["add"] * 1000 + ["mm", "softmax", "mm"], None,
                      warn=warned.append)
    assert [i.op for i in items] == ["mm", "add", "softmax"]       # first occurrence kept
    assert warned == ["WARNING: ops named more than once run once each (first occurrence "
                      "kept): mm (3 times), add (1000 times)"]
    ops_file = tmp_path / "ops.txt"
    ops_file.write_text("add\n" * 1000)
    warned.clear()
    items, _ = select(adapter, False, None, str(ops_file), warn=warned.append)
    assert [i.op for i in items] == ["add"] and len(warned) == 1
    assert warned[0].endswith(": add (1000 times)")


def test_fault_ops_are_hidden_from_the_inventory_unless_asked_for():
    import adapters
    adapter = adapters.get_adapter("builtin")
    assert [r["op"] for r in adapter.describe_ops()] == ["add", "mm", "softmax"]
    assert "fault_hang" in [r["op"] for r in adapter.describe_ops(include_hidden=True)]
    items, _ = select(adapter, True, None, None)
    assert [i.op for i in items] == ["add", "mm", "softmax"]


# ---- sharding ---------------------------------------------------------------------------
def test_sharding_is_stable_under_reordering_and_spreads_ops():
    ops = [f"op{i}" for i in range(200)]
    first = shard(ops, [0, 1, 2, 3])
    second = shard(list(reversed(ops)), [0, 1, 2, 3])
    assert {d: sorted(v) for d, v in first.items()} == {d: sorted(v) for d, v in second.items()}
    assert all(30 <= len(v) <= 70 for v in first.values()), {d: len(v) for d, v in first.items()}
    assert device_for("softmax", [0, 1]) == device_for("softmax", [0, 1])


# ---- statuses, retries, reuse ----------------------------------------------------------
OP_TIMEOUT = FAULT_OP_TIMEOUT             # conftest says why 15 s


@pytest.mark.e2e
def test_fault_ops_give_every_status_and_workers_are_reused(tmp_path):
    result = zlh_batch(tmp_path, "--ops", "add,fault_raise,fault_abort,fault_hang,softmax",
                       "--op-timeout", OP_TIMEOUT)
    assert result.exit_code == 1, result.output
    rows = status_rows(tmp_path / "batch")
    assert {op: r["status"] for op, r in rows.items()} == {
        "add": PASS, "fault_raise": FAIL, "fault_abort": CRASH, "fault_hang": TIMEOUT,
        "softmax": PASS}
    assert list(rows) == ["add", "fault_raise", "fault_abort", "fault_hang", "softmax"]
    assert rows["fault_raise"]["notes"] == "retry_rc=1->1"         # identical twice: stop
    assert rows["fault_abort"]["notes"] == "retry_rc=-6->-6"
    assert rows["fault_hang"]["notes"] == ""                          # a timeout is not retried
    assert "planted failure" in rows["fault_raise"]["reason"]
    assert "SIGABRT" in rows["fault_abort"]["reason"]
    assert (tmp_path / "batch/fault_raise/run.attempt1.log").exists()
    assert (tmp_path / "batch/fault_raise/run.attempt2.log").exists()

    def pid(op):
        return json.loads((tmp_path / "batch" / rows[op]["run_dir"] / "run.json").read_text()
                          )["pid"]
    first_raise = sorted((tmp_path / "batch/fault_raise").glob("fault_raise_*"))[0]
    assert pid("add") == json.loads((first_raise / "run.json").read_text())["pid"]
    assert pid("softmax") != pid("add")             # the crash and the hang replaced it
    assert "[5/5] PASS" in result.output and "FAIL 1" in result.output


def scripted(monkeypatch, script: list[tuple]):
    """Batch._attempt returns these (rc, message[, run.json's status]) in turn; judge() does
    the rest."""
    calls = []

    def attempt(self, op, dtypes, lane, worker, k, replay=None, timer=None,
                compile_cache=None):
        rc, message, *left = script[len(calls)]
        calls.append((op, dtypes, k))
        log = self.plan.root / f"{k}.log"
        run = None
        if left:                   # a run directory its process left, run.json saying so
            run = self.plan.root / f"{op}_{k}"
            run.mkdir()
            (run / "run.json").write_text(json.dumps({"op": op, "status": left[0]}))
        return Attempt(rc, 0.1, log, run, message)
    monkeypatch.setattr(batchmod.Batch, "_attempt", attempt)
    return calls


@pytest.mark.parametrize("script, status, attempts, note", [
    ([(1, "zlh: boom"), (1, "zlh: boom")], FAIL, 2, "retry_rc=1->1"),
    ([(1, "zlh: boom"), (1, "zlh: other"), (1, "zlh: other")], FAIL, 3, "retry_rc=1->1->1"),
    ([(-11, ""), (-11, "")], CRASH, 2, "retry_rc=-11->-11"),
    ([(-6, ""), (2, "zlh: a"), (2, "zlh: b")], FAIL, 2, "retry_rc=-6->2"),   # bad input
    # the op's own exit 2 (run.json still running): a crash, retried; bad input is not
    ([(2, "", "running"), (2, "", "running")], CRASH, 2, "retry_rc=2->2"),
    # zlh's own exit 2 inside the run (run.json crashed): bad input, never retried
    ([(2, "zlh: bad", "crashed"), (2, "zlh: bad", "crashed")], CRASH, 1, None),
    ([(1, "zlh: a"), (1, "zlh: b"), (1, "zlh: b")], FAIL, 3, "retry_rc=1->1->1"),
    ([(124, "")], TIMEOUT, 1, None),
])
def test_retry_rule(tmp_path, monkeypatch, script, status, attempts, note):
    calls = scripted(monkeypatch, script)
    plan = batchmod.BatchPlan(root=tmp_path, items=[Item("op")], devices=[0],
                              options=BenchOptions(backend="cpu"), fresh_process=True)
    result = batchmod.run_batch(plan, echo=lambda _: None)
    outcome = result.outcomes["op"]
    assert (outcome.status, len(calls)) == (status, attempts)
    assert (note in outcome.notes) if note else not any("retry" in n for n in outcome.notes)
    assert result.exit_code == 1


@pytest.mark.e2e
def test_dtype_fallback_runs_the_op_with_its_own_dtypes(tmp_path):
    result = zlh_batch(tmp_path, "--ops", "add", "--dtypes", "bfloat16")
    assert result.exit_code == 0, result.output
    row = status_rows(tmp_path / "batch")["add"]
    assert row["status"] == PASS and "dtype_fallback" in row["notes"]
    info = json.loads((tmp_path / "batch" / row["run_dir"] / "run.json").read_text())
    assert info["dtypes"] == ["float32"]


@pytest.mark.e2e
def test_batch_files_and_their_columns(corpus_batch):
    root = corpus_batch                  # `zlh batch --ops add,softmax`, FAST, made by conftest
    with open(root / "ops_status.csv", newline="") as handle:
        header = next(csv.reader(handle))
    assert header == ["repo", "op", "op_file", "backend", "device", "timer", "status",
                      "attempts", "rc", "elapsed_s", "rows_total", "rows_success", "notes",
                      "run_dir", "reason"]
    with open(root / "summary.csv", newline="") as handle:
        summary = list(csv.DictReader(handle))
    assert [r["op"] for r in summary] == ["add", "softmax"]
    assert set(summary[0]) == {"op", "backend", "device", "timer", "dtype", "shape",
                               "torch_ms", "gems_ms", "speedup", "status", "op_status"}
    assert (summary[0]["backend"], summary[0]["device"]) == ("cpu", "0")
    assert float(summary[0]["gems_ms"]) > 0 and summary[0]["op_status"] == PASS
    doc = json.loads((root / "batch.json").read_text())
    assert doc["schema_version"] == 1 and [o["op"] for o in doc["ops"]] == ["add", "softmax"]
    assert doc["caliber"]["backend"] == "cpu" and doc["options"]["min_samples"] == 3
    for op in ("add", "softmax"):
        assert json.loads((root / op / ".complete").read_text())["status"] == PASS


@pytest.mark.e2e
def test_bad_batch_inputs(tmp_path):
    assert zlh_batch(tmp_path, "--ops", "nope").exit_code == 2
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = zlh_batch(tmp_path, "--ops", "add", out="full")
    assert result.exit_code == 2 and "exists and is not empty" in result.output
    result = zlh_batch(tmp_path, "--ops", "add", "--devices", "0,0")
    assert result.exit_code == 2 and "distinct" in result.output
    result = zlh_batch(tmp_path, "--ops", "add", "--devices", "3")
    assert result.exit_code == 3 and "PREFLIGHT_FAILED check=device" in result.output
    result = CliRunner().invoke(main, ["batch", "--resume", str(tmp_path / "none")])
    assert result.exit_code == 2 and "not a batch root" in result.output


# ---- resume -----------------------------------------------------------------------------
@pytest.mark.e2e
def test_a_moved_batch_resumes_from_anywhere_with_its_rows(tmp_path, monkeypatch):
    """Run directories are named relative to the batch root: a root made with a relative
    --out, moved (or copied to another machine) and resumed from another directory keeps the
    finished ops' rows in summary.csv. Options beside --resume are refused, not ignored."""
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir(), later.mkdir()
    monkeypatch.chdir(first)
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                       "--shapes", str(shapes_file(tmp_path)), *FAST,
                                       "--ops", "add,softmax", "--out", "b"])
    assert result.exit_code == 0, result.output
    import shutil
    shutil.rmtree(first / "b" / "softmax")                  # as if killed before softmax ran
    (first / "b").rename(tmp_path / "moved")
    monkeypatch.chdir(later)
    root = tmp_path / "moved"
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "--op-timeout", "5"])
    assert result.exit_code == 2 and "leave out --op-timeout" in result.output
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
    assert result.exit_code == 0, result.output
    rows = status_rows(root)
    assert {op: r["status"] for op, r in rows.items()} == {"add": PASS, "softmax": PASS}
    for op, row in rows.items():
        assert not Path(row["run_dir"]).is_absolute() and (root / row["run_dir"]).is_dir()
    with open(root / "summary.csv", newline="") as handle:
        measured = [r["op"] for r in csv.DictReader(handle)]
    assert measured.count("add") == 1 and measured.count("softmax") == 1


@pytest.mark.e2e
def test_resume_after_sigkill_loses_and_repeats_nothing(tmp_path):
    shapes = shapes_file(tmp_path)
    root = tmp_path / "b"
    cmd = [sys.executable, "-m", "harness", "batch", "--adapter", "builtin", "--backend", "cpu",
           "--shapes", str(shapes), *FAST, "--ops", "add,fault_hang,softmax", "--op-timeout",
           OP_TIMEOUT, "--out", str(root)]     # add and softmax each start a fresh worker
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((root / "fault_hang").glob("fault_hang_*/run.json")):
        time.sleep(0.2)
    assert (root / "add" / ".complete").exists()
    hung = next((root / "fault_hang").glob("fault_hang_*/run.json")).parent
    worker = json.loads((hung / "run.json").read_text())["pid"]
    os.killpg(proc.pid, signal.SIGKILL)                 # the supervisor ...
    os.kill(worker, signal.SIGKILL)                     # ... and its worker: everything
    proc.wait()
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 1, result.output         # fault_hang times out this time
    rows = status_rows(root)
    assert {op: r["status"] for op, r in rows.items()} == {
        "add": PASS, "fault_hang": TIMEOUT, "softmax": PASS}
    assert len(list((root / "add").glob("add_*"))) == 1             # not run again
    assert "resumed" in rows["fault_hang"]["notes"]
    assert len(list((root / ".abandoned").glob("fault_hang-*"))) == 1   # kept, set aside
    assert len(list((root / "softmax").glob("softmax_*"))) == 1


@pytest.mark.e2e
def test_a_root_in_use_is_refused_and_freed_when_its_holder_is_killed(tmp_path):
    """A --resume (or a rescore, or a second screen) of a root whose command still runs is one
    line naming the holder, not a second writer; SIGKILL of the holder frees the root at once."""
    root = tmp_path / "busy"
    cmd = [sys.executable, "-m", "harness", "batch", "--adapter", "builtin", "--backend", "cpu",
           "--shapes", str(shapes_file(tmp_path)), *FAST, "--ops", "fault_hang",
           "--op-timeout", "4", "--retries", "0", "-q", "--out", str(root)]
    holder = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (root / "fault_hang").exists():
            time.sleep(0.2)
        assert (root / "fault_hang").exists(), "the batch never started its op"
        result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
        assert result.exit_code == 2, result.output
        line = result.output.strip()
        assert line.count("\n") == 0 and f"is in use by zlh batch, pid {holder.pid}" in line
        assert "Traceback" not in result.output
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
    assert result.exit_code == 1, result.output                # ran again: TIMEOUT, no refusal
    assert status_rows(root)["fault_hang"]["status"] == TIMEOUT
    # the root is free again once that command has ended, in this same process too
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
    assert "in use" not in result.output
