"""Faults around a corpus command: a kill of the supervisor or of a worker, a disk that fills or
a root that becomes unwritable mid-batch, a second command on a root whose killed holder's
children still run. What was measured stays, what was cut short runs again on --resume."""
from __future__ import annotations

import csv
import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.run.options import BenchOptions
from harness.cli import main
from harness.common.errors import EXIT_FAILED_CASES, RunFailedError, Terminated, UsageError
from harness.common.process import PARENT_ENV
from harness.corpus import batch as batchmod
from harness.common import lock
from harness.corpus import supervisor, worker
from harness.corpus.outcome import Attempt
from harness.corpus.selection import Item
from procs import alive
from conftest import FAST, ROOT



def batch_cmd(tmp_path: Path, root: Path, *args: str) -> list[str]:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\nmm: [[16, 16, 16]]\n")
    return [sys.executable, "-m", "harness", "batch", "--adapter", "builtin", "--backend",
            "cpu", "--shapes", str(shapes), *FAST, "-q", "--out", str(root), *args]


def wait_for(pattern: str, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and not glob.glob(pattern):
        time.sleep(0.02)
    assert glob.glob(pattern), f"never appeared: {pattern}"


def statuses(root: Path) -> dict[str, str]:
    with open(root / "ops_status.csv", newline="") as handle:
        return {r["op"]: r["status"] for r in csv.DictReader(handle)}


def test_a_write_failure_ends_the_batch_and_leaves_the_op_for_resume(tmp_path, monkeypatch):
    """An op cut short because its files could not be written (disk full) is not the op's
    failure: no .complete, the batch stops with one line saying how to go on."""
    calls = []

    def attempt(self, op, dtypes, lane, worker, k, replay=None, timer=None,
                compile_cache=None):
        calls.append(op)
        return Attempt(1, 0.1, self.plan.root / "x.log", None, "", write_failure="disk full")
    monkeypatch.setattr(batchmod.Batch, "_attempt", attempt)
    plan = batchmod.BatchPlan(root=tmp_path, items=[Item("a"), Item("b")], devices=[0],
                              options=BenchOptions(backend="cpu"), fresh_process=True)
    with pytest.raises(RunFailedError) as info:
        batchmod.run_batch(plan, echo=lambda _: None)
    assert calls == ["a"]                                  # not retried, b not started
    assert info.value.exit_code == EXIT_FAILED_CASES
    assert info.value.message.startswith("op a: disk full; finished ops are kept under")
    assert f"zlh batch --resume {tmp_path}" in info.value.message
    assert not (tmp_path / "a" / ".complete").exists()


def test_a_run_that_failed_to_write_is_seen_from_its_run_json(tmp_path):
    run = tmp_path / "op_1"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "failed", "reason": "disk full"}))
    assert supervisor.failed_write(run) == "disk full"
    (run / "run.json").write_text(json.dumps({"status": "complete", "reason": ""}))
    assert supervisor.failed_write(run) == ""
    assert supervisor.failed_write(None) == ""


def test_a_worker_ended_by_sigterm_records_sigterm():
    with pytest.raises(Terminated) as info:
        worker._raise_terminated(signal.SIGTERM)
    assert info.value.code == 128 + signal.SIGTERM


HOLDER = """
import os, subprocess, sys, time
from harness.common import lock
lock.claim_root(sys.argv[1], "batch")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         pass_fds=lock.held_fds(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
os._exit(0)          # the holder dies without a word; its child lives on
"""


@pytest.mark.e2e
def test_the_children_of_a_killed_holder_keep_the_root_until_they_end(tmp_path, monkeypatch):
    root = tmp_path / "r"
    root.mkdir()
    out = subprocess.run([sys.executable, "-c", HOLDER, str(root)], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
    child = int(out.stdout.split()[0])
    try:
        monkeypatch.setattr(lock, "LEFTOVER_WAIT_S", 0.5)
        with pytest.raises(UsageError) as info:
            lock.claim_root(root, "batch")
        assert "(ended; processes it started still run)" in info.value.message
    finally:
        os.kill(child, signal.SIGKILL)
    deadline = time.time() + 10
    while alive(child) and time.time() < deadline:
        time.sleep(0.05)
    lock.claim_root(root, "batch")                         # free once the last one is gone
    lock.release_root(root)


@pytest.mark.e2e
def test_a_fresh_process_ends_with_a_killed_batch(tmp_path):
    """--fresh-process: SIGKILL of the batch ends its `zlh bench` child too (SIGTERM: the
    child's run directory is finalised), instead of leaving it hung beside a resume."""
    root = tmp_path / "b"
    proc = subprocess.Popen(batch_cmd(tmp_path, root, "--fresh-process", "--ops", "fault_hang",
                                      "--op-timeout", "60", "--retries", "0"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_for(f"{root}/fault_hang/fault_hang_*/run.json")
    run_json = Path(glob.glob(f"{root}/fault_hang/fault_hang_*/run.json")[0])
    child = json.loads(run_json.read_text())["pid"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 20
    while alive(child) and time.time() < deadline:
        time.sleep(0.05)
    if alive(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the bench child outlived its batch")
    info = json.loads(run_json.read_text())
    assert (info["status"], info["reason"]) == ("interrupted", "SIGTERM")


def test_run_fresh_asks_its_child_to_end_with_it(tmp_path, monkeypatch):
    seen = {}

    class Popen:
        def __init__(self, cmd, env, **kwargs):
            seen["env"], seen["pass_fds"] = env, kwargs.get("pass_fds")
            self.pid = 1

        def wait(self, timeout=None):
            return 0
    monkeypatch.setattr(supervisor.subprocess, "Popen", Popen)
    supervisor.run_fresh(supervisor.Lane(env={}), "add", [], 5, tmp_path / "log", tmp_path)
    assert seen["env"][PARENT_ENV] == str(os.getpid())


def _root_mount_ok() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and sys.platform.startswith("linux")


@pytest.mark.skipif(not _root_mount_ok(), reason="mounting a small tmpfs needs root on Linux")
@pytest.mark.e2e
def test_a_disk_that_fills_mid_batch_keeps_what_was_measured(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    # 8 MiB: a fast host keeps up to 5,000 samples a side in each op's results (about
    # 0.2 MiB an op, twice while a file is replaced); only the filler may fill this disk
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("no tmpfs mount possible here")
    proc = filler = None
    try:
        root = small / "b"
        filler = open(small / "filler", "wb", buffering=0)   # made while there is room
        # each case measures for 1.5 s: the disk fills while softmax runs even when this
        # process gets the CPU late (FAST's softmax is over in about 0.4 s)
        proc = subprocess.Popen(batch_cmd(tmp_path, root, "--ops", "add,softmax",
                                          "--min-time-ms", "1500", "--max-time-ms", "1500"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(f"{root}/softmax/softmax_*/run.json")
        with filler:                                         # fill the disk mid-op
            try:
                while True:
                    filler.write(b"\0" * 65536)
            except OSError:
                pass
        err = proc.communicate(timeout=120)[1]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert proc.returncode == EXIT_FAILED_CASES, err
        assert len(lines) == 1 and lines[0].startswith("zlh: ") and "disk full" in lines[0]
        assert f"zlh batch --resume {root}" in lines[0]
        assert (root / "add" / ".complete").exists()          # measured before: kept
        assert not (root / "softmax" / ".complete").exists()  # cut short: not finished
        (small / "filler").unlink()
        result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
        assert result.exit_code == 0, result.output
        assert statuses(root) == {"add": "PASS", "softmax": "PASS"}
        assert len(list((root / "add").glob("add_*"))) == 1    # not run again
    finally:
        if proc is not None and proc.poll() is None:          # a failed wait: no batch left
            proc.kill()
            proc.wait()
        if filler is not None:
            filler.close()
        subprocess.run(["umount", "-l", str(small)], check=False)
