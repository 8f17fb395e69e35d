"""The launcher: a child past its timeout ends with TIMEOUT_RC and takes its whole group with
it (a grandchild too); a stop is SIGTERM first, SIGKILL after the grace; a group that is not
ours to signal is no error. Each test waits on events (a line, a closed pipe), not sleeps."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest

from harness.common.process import PARENT_ENV
from harness.launch import launcher

# Starts a grandchild that holds the pipe fd (argv[1]) open, then says "ready" and waits.
FAMILY = """
import os, subprocess, sys, time
fd = int(sys.argv[1])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], pass_fds=(fd,))
print("ready", flush=True)
time.sleep(300)
"""

# Ignores SIGTERM (saying so on the pipe fd argv[1]), says "ready", waits.
STUBBORN = """
import os, signal, sys, time
fd = int(sys.argv[1])
def note(signum, frame):
    os.write(fd, b"TERM\\n")
signal.signal(signal.SIGTERM, note)
print("ready", flush=True)
while True:
    time.sleep(300)
"""


def closed_by_all(read_fd: int, limit_s: float = 30.0) -> bytes:
    """Everything written to the pipe until every holder of its write end is gone."""
    data = b""
    while True:
        ready, _, _ = select.select([read_fd], [], [], limit_s)
        assert ready, "a process still holds the pipe"
        chunk = os.read(read_fd, 4096)
        if not chunk:
            return data
        data += chunk


def started(script: str, fd: int) -> launcher.Child:
    child = launcher.start([sys.executable, "-c", script, str(fd)], dict(os.environ),
                           stdout=subprocess.PIPE, text=True, pass_fds=(fd,))
    assert child.stdout.readline().strip() == "ready"
    return child


def test_a_timeout_ends_the_whole_group_with_timeout_rc():
    read_fd, write_fd = os.pipe()
    try:
        child = started(FAMILY, write_fd)
        os.close(write_fd)
        write_fd = -1
        assert child.finish(timeout_s=0.01, grace_s=30) == launcher.TIMEOUT_RC == 124
        assert closed_by_all(read_fd) == b""        # child and grandchild both gone
        assert child.returncode == -signal.SIGTERM
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_stop_is_sigterm_then_sigkill_after_the_grace():
    read_fd, write_fd = os.pipe()
    try:
        child = started(STUBBORN, write_fd)
        os.close(write_fd)
        write_fd = -1
        child.stop(grace_s=0.5)
        assert child.returncode == -signal.SIGKILL
        assert closed_by_all(read_fd) == b"TERM\n"   # it had SIGTERM first
        assert child.stdout.closed                    # and its pipes are closed
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_run_writes_the_command_line_then_the_output(tmp_path):
    log = tmp_path / "child.log"
    cmd = [sys.executable, "-c", f"import os; print(os.environ['{PARENT_ENV}'])"]
    ended = launcher.run(cmd, dict(os.environ), log, timeout_s=60)
    assert ended.rc == 0
    assert log.read_text().splitlines() == [" ".join(cmd), str(os.getpid())]
    again = launcher.run([sys.executable, "-c", "raise SystemExit(3)"], {}, log, 60,
                         append=True, command_line=False)
    assert again.rc == 3 and log.read_text().splitlines()[0] == " ".join(cmd)


def test_a_group_not_ours_to_signal_is_no_error(monkeypatch):
    child = launcher.start([sys.executable, "-c", "import sys; sys.stdin.read()"],
                           dict(os.environ), stdin=subprocess.PIPE)
    real_killpg = os.killpg
    calls = []

    def refused(pid, sig):
        calls.append(sig)
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "killpg", refused)
    child.stop(grace_s=0.01)           # nothing raised, the pipes closed all the same
    assert calls == [signal.SIGTERM, signal.SIGKILL] and child.stdin.closed   # (leftovers)
    monkeypatch.setattr(os, "killpg", real_killpg)
    assert child.wait(timeout=30) == 0             # stdin closed: it ended by itself


def test_a_child_gone_already_is_no_error():
    child = launcher.start([sys.executable, "-c", "pass"], dict(os.environ))
    assert child.wait(timeout=30) == 0
    child.stop(grace_s=0.01)
    child.kill_leftovers()


def test_capture_times_out_as_subprocess_run_does():
    with pytest.raises(subprocess.TimeoutExpired, match="timed out after 0.2 seconds"):
        launcher.capture([sys.executable, "-c", "import time; time.sleep(300)"], None, 0.2)
    done = launcher.capture([sys.executable, "-c", "print('out')"], None, 60)
    assert (done.returncode, done.stdout) == (0, "out\n")


def test_capture_returns_at_its_timeout_though_a_process_that_left_the_group_holds_its_pipes(
        tmp_path):
    """A descendant in a session of its own keeps the probe's pipes open: the timeout must
    not wait for it (it lives 60 s here; the call returns long before)."""
    pid_file = tmp_path / "pid"
    code = ("import subprocess, sys; p = subprocess.Popen(['sleep', '60'], start_new_session=True);"
            f"open({str(pid_file)!r}, 'w').write(str(p.pid)); import time; time.sleep(300)")
    started = time.monotonic()
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            launcher.capture([sys.executable, "-c", code], None, 2.0)
        assert time.monotonic() - started < 30
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_child_that_exits_124_itself_is_no_timeout_and_its_log_says_so(tmp_path):
    """124 means zlh stopped the child past its time: a child that gives it itself (an op's
    os._exit(124)) ended without a result, CRASH_RC, after what it wrote."""
    log = tmp_path / "run.log"
    ended = launcher.run([sys.executable, "-c", "import os; print('mine', flush=True); "
                          "os._exit(124)"], dict(os.environ), log, timeout_s=60)
    assert ended.rc == launcher.CRASH_RC
    lines = log.read_text().splitlines()
    assert lines[-2:] == ["mine", "zlh: the process exited with status 124 without a result"]
    stopped = launcher.run([sys.executable, "-c", "import time; time.sleep(60)"],
                           dict(os.environ), tmp_path / "slow.log", timeout_s=0.5)
    assert stopped.rc == launcher.TIMEOUT_RC
    assert "without a result" not in (tmp_path / "slow.log").read_text()
    other = launcher.run([sys.executable, "-c", "raise SystemExit(7)"], dict(os.environ),
                         tmp_path / "seven.log", timeout_s=60)
    assert other.rc == 7
