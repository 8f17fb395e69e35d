"""An op's log in a corpus run is capped after its attempt: head and tail kept, one line saying
how much was dropped, the op's last error line intact (the outcome's reason quotes it)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from harness.corpus.outcome import CRASH, judge
from harness.corpus.supervisor import (LOG_KEEP_BYTES, LOG_LIMIT_BYTES, Lane, Worker, cap_log,
                                       last_line, run_fresh)
from harness.run.options import BenchOptions
from conftest import ROOT

LIMIT = 64 << 10

CHATTY = '''
import sys
import torch
import harness

def chatty(x):
    print("x" * 4000, flush=True)                 # a few MiB over the measured calls
    return x + 1

def chatty_then_exit(x):
    print("y" * 4000, flush=True)
    sys.exit(3)

cases = {"chatty": [
    harness.Case(fn=chatty, baseline=lambda x: x + 1, inputs=lambda: torch.ones(8),
                 dtype="float32", shape=[8], name="chatty"),
    harness.Case(fn=chatty_then_exit, baseline=lambda x: x + 1, inputs=lambda: torch.ones(16),
                 dtype="float32", shape=[16], name="chatty")]}
'''


def test_the_limits_are_what_the_readme_says():
    assert LOG_LIMIT_BYTES == 64 << 20 and LOG_KEEP_BYTES == 1 << 20


def test_a_small_log_is_left_as_it_is(tmp_path):
    log = tmp_path / "run.attempt1.log"
    log.write_text("line\n" * 100)
    before = log.read_bytes()
    assert cap_log(log, limit=1000) == 0
    assert log.read_bytes() == before
    assert cap_log(tmp_path / "missing.log", limit=10) == 0


def test_a_large_log_keeps_whole_lines_at_both_ends_and_says_what_was_dropped(tmp_path):
    log = tmp_path / "run.attempt1.log"
    lines = [f"line {i:06d} " + "z" * 50 for i in range(20000)]
    lines[-1] = "zlh: add: the op called sys.exit(3); the run is marked crashed"
    log.write_text("\n".join(lines) + "\n")
    size = log.stat().st_size
    log.chmod(0o640)
    dropped = cap_log(log, limit=40000, keep=5000)
    text = log.read_text()
    kept = text.splitlines()
    marker = [ln for ln in kept if ln.startswith("-----")]
    assert marker == [f"----- {dropped} bytes of this log dropped here: it had {size} bytes, "
                      f"more than 40000; its first and last lines are kept -----"]
    assert dropped > 0 and len(text.encode()) == size - dropped + len(marker[0]) + 1
    assert all(ln in lines for ln in kept if not ln.startswith("-----"))   # no line cut
    assert kept[0] == lines[0] and kept[-1] == lines[-1]
    assert len(text.encode()) < 2 * 5000 + 200
    assert last_line(log) == lines[-1]
    assert (log.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == [log.name]         # no temp file left


def test_a_first_line_longer_than_the_kept_head_is_cut_and_the_marker_on_its_own_line(tmp_path):
    log = tmp_path / "op.log"
    log.write_bytes(b"a" * 100000 + b"\nlast\n")
    cap_log(log, limit=1000, keep=100)
    lines = log.read_bytes().split(b"\n")
    assert lines[0] == b"a" * 100 and lines[1].startswith(b"----- ") and lines[-2] == b"last"


def write_cases(tmp_path: Path) -> dict:
    (tmp_path / "chatty_cases.py").write_text(CHATTY)
    return {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}


def options(tmp_path: Path, out: Path) -> BenchOptions:
    return BenchOptions.from_flat(cases="chatty_cases:cases", backend="cpu", out=str(out),
                                  warmup_ms=1.0, min_samples=3, min_time_ms=0.0,
                                  max_time_ms=20.0, telemetry_interval=0.0)


def check_capped(log: Path, attempt) -> None:
    text = log.read_text()
    assert len(text.encode()) < LIMIT
    assert sum(ln.startswith("----- ") and "bytes of this log dropped here" in ln
               for ln in text.splitlines()) == 1
    assert "the op called sys.exit(3)" in attempt.message
    assert last_line(log) == attempt.message           # the error line survived the cut
    outcome = judge(attempt, 60)
    assert outcome.status == CRASH and "sys.exit(3)" in outcome.reason


@pytest.mark.e2e
def test_a_worker_op_that_prints_a_lot_has_its_log_capped(tmp_path, monkeypatch):
    env = write_cases(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "chatty"
    log = out / "run.attempt1.log"
    worker = Worker(Lane(python=sys.executable, env=env), tmp_path / "worker.log")
    try:
        job = {"op": "chatty", "args": options(tmp_path, out).to_argv(), "log": str(log)}
        attempt = worker.run(job, 120, log, out, log_limit=LIMIT)
    finally:
        worker.stop()
    check_capped(log, attempt)


def run_chatty_fresh(tmp_path, monkeypatch, log_limit: int):
    """The chatty op in a `--fresh-process` attempt: (its attempt, its log)."""
    env = write_cases(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "chatty"
    out.mkdir()
    log = out / "run.attempt1.log"
    attempt = run_fresh(Lane(python=sys.executable, env=env), "chatty",
                        options(tmp_path, out).to_argv(), 120, log, out, log_limit=log_limit)
    return attempt, log


@pytest.mark.e2e
def test_a_fresh_process_op_that_prints_a_lot_has_its_log_capped(tmp_path, monkeypatch):
    attempt, log = run_chatty_fresh(tmp_path, monkeypatch, LIMIT)
    check_capped(log, attempt)


@pytest.mark.e2e
def test_without_a_cap_the_chatty_op_would_exceed_the_limit(tmp_path, monkeypatch):
    """The cap is what keeps the logs above small: the op prints far more than the limit."""
    _, log = run_chatty_fresh(tmp_path, monkeypatch, 1 << 40)
    assert log.stat().st_size > 4 * LIMIT
