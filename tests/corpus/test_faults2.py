"""Ops that misbehave inside a corpus batch: exit without a result, close the process's
output or input, leave children behind, fork a copy of their worker. Each gets a truthful
status, the batch goes on, and nothing the op started is left running."""
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
from harness.corpus.outcome import CRASH, CRASH_RC, Attempt, judge
from harness.corpus.supervisor import GRACE_S
from harness.report.sources import epoch
from procs import alive
from conftest import FAST, ROOT


CASES = '''
import os, subprocess, sys, time
import torch
import harness

PIDS = os.environ["FAULT_PIDS"]

def _case(name, fn):
    return [harness.Case(fn=fn, baseline=lambda x: x + 1, inputs=lambda: torch.ones(8),
                         dtype="float32", shape=[8], name=name)]

def ok(x):
    return x + 1

def exit0(x):
    os._exit(0)

def sysexit3(x):
    sys.exit(3)

def _exits(code):                 # the process ends with a code zlh gives meaning to
    def op(x):
        os._exit(code)
    return op

def close_out(x):
    os.close(1)
    os.close(2)
    return x + 1

def close_in(x):
    try:
        os.close(0)
    except OSError:
        pass
    return x + 1

_done = []

def child_then_exit(x):
    child = subprocess.Popen(["sleep", "300"])
    with open(PIDS, "a") as handle:
        handle.write(f"{child.pid}\\n")
    os._exit(0)

def fork_copy(x):
    if not _done:
        _done.append(1)
        pid = os.fork()
        if pid == 0:
            time.sleep(300)
            os._exit(0)
        with open(PIDS, "a") as handle:
            handle.write(f"{pid}\\n")
    return x + 1

def warn_error(x):
    import warnings
    warnings.simplefilter("error")
    return x + 1

def umask_all(x):
    os.umask(0o077)
    return x + 1

def spin_thread(x):
    import threading
    threading.Thread(target=lambda: time.sleep(300), daemon=True).start()
    return x + 1

def ignore_term(x):
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return x + 1

def stdout_closed(x):
    sys.stdout.close()
    return x + 1

def leak_all(x):                  # each leak above at once: one worker to replace, not five
    for leak in (warn_error, umask_all, spin_thread, ignore_term, stdout_closed):
        leak(x)
    return x + 1

def stdout_swapped(x):
    import io
    sys.stdout = sys.stderr = io.StringIO()
    return x + 1

def keyboard(x):                  # no SIGINT came: the op's own failure, not Ctrl-C
    raise KeyboardInterrupt

def warns(x):
    import warnings
    warnings.warn("a warning a warnings filter would make an error")
    print("said in the log")
    return x + 1

cases = {name: _case(name, fn) for name, fn in [
    ("warn_error", warn_error), ("umask_all", umask_all), ("spin_thread", spin_thread),
    ("ignore_term", ignore_term), ("stdout_closed", stdout_closed),
    ("stdout_swapped", stdout_swapped), ("warns", warns), ("warns2", warns),
    ("warns3", warns), ("warns4", warns), ("warns5", warns), ("warns6", warns),
    ("leak_all", leak_all),
    ("ok", ok), ("exit0", exit0), ("sysexit3", sysexit3), ("close_out", close_out),
    ("close_in", close_in), ("child_then_exit", child_then_exit), ("fork_copy", fork_copy),
    ("ok2", ok), ("keyboard", keyboard)] + [(f"exit{code}", _exits(code)) for code in (2, 5, 124)]}
'''


def run_batch(tmp_path: Path, ops: str, *args: str,
              expect_rc: int = 1) -> tuple[Path, dict, list[int]]:
    (tmp_path / "fault_cases.py").write_text(CASES)
    pids = tmp_path / "pids.txt"
    root = tmp_path / "batch"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
           "FAULT_PIDS": str(pids)}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "batch", "--cases", "fault_cases:cases", "--ops", ops,
         "--backend", "cpu", *FAST, "-q", "--retries", "0", "--op-timeout", "60",
         "--out", str(root), *args], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == expect_rc, proc.stderr
    with open(root / "ops_status.csv", newline="") as handle:
        rows = {r["op"]: r for r in csv.DictReader(handle)}
    left = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    return root, rows, left


def wait_gone(pids: list[int], seconds: float = 5) -> list[int]:
    deadline = time.time() + seconds
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


# The ops of the two tests below, in one batch: `ok` first (a worker's first op may start
# threads, an import does, as in a fresh process, so threads are compared from its second op
# on), then what an op leaves in its interpreter, then the ops that end their worker.
LEAKS = ["ok", "leak_all", "warns", "stdout_swapped", "warns2"]
ENDINGS = ["exit0", "sysexit3", "close_out", "close_in", "child_then_exit", "fork_copy",
           "exit2", "exit5", "exit124", "keyboard", "ok2"]


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory):
    """One batch of LEAKS then ENDINGS, made once: (root, rows, the pids its ops left)."""
    return run_batch(tmp_path_factory.mktemp("misbehaving"), ",".join(LEAKS + ENDINGS))


@pytest.mark.e2e
def test_misbehaving_ops_get_a_truthful_status_and_the_batch_goes_on(misbehaving):
    root, rows, left = misbehaving
    status = {op: r["status"] for op, r in rows.items() if op not in LEAKS[1:]}
    assert status == {"ok": "PASS", "exit0": "CRASH", "sysexit3": "CRASH",
                      "close_out": "FAIL", "close_in": "PASS", "child_then_exit": "CRASH",
                      "fork_copy": "PASS", "exit2": "CRASH", "exit5": "CRASH",
                      "exit124": "CRASH", "keyboard": "FAIL", "ok2": "PASS"}
    # an op that raises KeyboardInterrupt itself fails its case; no SIGINT came
    assert "KeyboardInterrupt" in rows["keyboard"]["reason"], rows["keyboard"]
    assert "SIGHUP" not in rows["exit0"]["reason"]
    # a worker's own exit status is no zlh exit code: not bad input, a poisoned device or
    # a timeout, but a process that ended without a result, its status said
    for code in (2, 5, 124):
        assert f"exited with status {code} without a result" in rows[f"exit{code}"]["reason"]
    assert "sys.exit(3)" in rows["sysexit3"]["reason"]
    # zlh's own lines go through the worker's handle on the op's log, not the descriptors
    # the op closed: the run goes on, and the op's second call fails on what it did first
    assert "Bad file descriptor" in rows["close_out"]["reason"]
    assert len(left) == 2
    assert wait_gone(left) == [], "a process an op started outlived the batch"
    # the forked copy of the worker was ended without touching the op's finished run
    run_json = next((root / "fork_copy").glob("fork_copy_*/run.json"))
    assert json.loads(run_json.read_text())["status"] == "complete"
    assert (run_json.parent / "results.jsonl").read_text().strip()


@pytest.mark.e2e
def test_what_an_op_leaves_in_its_interpreter_does_not_reach_the_next_op(misbehaving):
    """Warnings made errors, a file mode mask, a thread left running, a stop signal ignored,
    a stream of the worker's closed (all five left by one op, each named in its note): the
    worker is replaced; Python's streams swapped: given back, the next op's output still
    reaches its own log. Each op after one of them runs as in a fresh process (`warns` would
    fail under the error filter, write its run.json unreadable to others under the mask, and
    say nothing in a swapped log)."""
    switches = ("warnings_as_errors", "umask", "python_threads", "signal_handlers",
                "python_streams")      # what else holds it would fail later
    root, rows, _ = misbehaving
    order = LEAKS
    assert {op: rows[op]["status"] for op in order} == {op: "PASS" for op in order}
    noted = rows["leak_all"]["notes"].split("process_state=")[1].split(";")[0].split(",")
    assert sorted(noted) == sorted(switches), rows["leak_all"]
    assert "process_state" not in rows["stdout_swapped"]["notes"], rows["stdout_swapped"]
    pid = {op: json.loads((root / rows[op]["run_dir"] / "run.json").read_text())["pid"]
           for op in order}
    assert pid["ok"] == pid["leak_all"]
    # the replaced worker was idle (nothing to finalise) and ignored SIGTERM: killed after
    # IDLE_GRACE_S, so the next op did not wait out the grace a finalising run gets
    times = {op: json.loads((root / rows[op]["run_dir"] / "run.json").read_text())
             for op in ("leak_all", "warns")}
    gap = epoch(times["warns"]["started_at"]) - epoch(times["leak_all"]["finished_at"])
    assert gap < GRACE_S, gap
    for leaky, after in (("leak_all", "warns"), ("stdout_swapped", "warns2")):
        assert (pid[leaky] != pid[after]) is (leaky == "leak_all"), (leaky, after)
        log = (root / after / "run.attempt1.log").read_text()
        assert "said in the log" in log, (after, log[-300:])
        mode = (root / rows[after]["run_dir"] / "run.json").stat().st_mode
        assert mode & 0o044, oct(mode)                          # readable, as umask 022 made


@pytest.mark.e2e
def test_fresh_processes_that_exit_without_a_result_are_not_pass(tmp_path):
    root, rows, left = run_batch(tmp_path, "ok,exit0,sysexit3,child_then_exit,exit2,exit5,"
                                 "exit124", "--fresh-process")
    status = {op: r["status"] for op, r in rows.items()}
    # 124: not a timeout; 5: not a poisoned device; 2: not bad input (zlh bench gives those
    # codes, but its run.json then says so; here it still says `running`)
    assert status == {"ok": "PASS", "exit0": "CRASH", "sysexit3": "CRASH",
                      "child_then_exit": "CRASH", "exit2": "CRASH", "exit5": "CRASH",
                      "exit124": "CRASH"}
    assert all(r["reason"] for op, r in rows.items() if op != "ok")
    assert "exited with status 124 without a result" in rows["exit124"]["reason"]
    assert "rc=5" in rows["exit5"]["reason"] and "running" in rows["exit2"]["reason"]
    assert wait_gone(left) == []


def test_a_worker_ending_without_an_exit_status_is_not_said_to_have_had_sighup(tmp_path):
    log = tmp_path / "run.attempt1.log"
    log.write_text("")
    outcome = judge(Attempt(CRASH_RC, 0.1, log, None), 60)
    assert outcome.status == CRASH
    assert "SIGHUP" not in outcome.reason and "without a result" in outcome.reason


@pytest.mark.e2e
def test_a_forked_copy_ends_on_sigterm_without_unwinding(tmp_path):
    """The copy must not run the handler meant for the process that installed it (that one
    finalises the run directory)."""
    marker = tmp_path / "unwound"
    script = f'''
import os, signal, sys, time
sys.path.insert(0, {str(ROOT)!r})
from harness.common.process import terminate_handler
def raise_it(signum):
    raise SystemExit(99)
signal.signal(signal.SIGTERM, terminate_handler(raise_it))
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.write(ready_w, b"r")
        time.sleep(20)
    finally:
        open({str(marker)!r}, "w").write("unwound")
        os._exit(0)
os.read(ready_r, 1)
os.kill(pid, signal.SIGTERM)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
'''
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=40)
    assert out.stdout.strip() == str(128 + signal.SIGTERM), out.stderr
    assert not marker.exists()
    from harness.common.process import terminate_handler
    calls = []
    handler = terminate_handler(calls.append)
    handler(signal.SIGTERM, None)
    assert calls == [signal.SIGTERM]


def test_the_error_line_of_a_huge_log_is_read_from_its_end(tmp_path, monkeypatch):
    from harness.corpus import supervisor
    log = tmp_path / "run.attempt1.log"
    with open(log, "w") as handle:
        handle.write("zlh: an early line\n" + "x" * 4096 + "\n")
        handle.write("y" * 100 + "\nzlh: the last error\n")
    monkeypatch.setattr(supervisor, "LOG_TAIL_BYTES", 200)
    assert supervisor.last_line(log) == "zlh: the last error"
    log.write_text("zlh: only an early line\n" + "x" * 4096 + "\n")
    assert supervisor.last_line(log) == ""       # beyond the tail: not read
