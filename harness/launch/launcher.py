"""Starting and stopping every child process zlh runs: one place, one set of guarantees.

A child (`zlh bench`, `zlh ab`, a reused corpus worker, a test run) starts in a session of
its own, so that stopping it reaches everything it started: SIGTERM to its whole process
group first (a `zlh bench` then finalises its run directory), SIGKILL after a grace period,
and SIGKILL once more to what is left of the group after the child itself ended (the
processes an op started and did not end). A process that is gone already (ProcessLookupError)
or not ours to signal (PermissionError) is not an error here. A child that runs past its
timeout ends with TIMEOUT_RC; one that ended without an exit status of its own is CRASH_RC,
and so is one that exited with TIMEOUT_RC itself (an op's `os._exit(124)`): 124 always means
that zlh stopped it.

A child started here carries ZLH_PARENT_PID (child_env): a `zlh` command finds it at start
and asks for SIGTERM when the command that started it dies (SIGKILL included), so no
measurement outlives its command. (Not the reused worker, which asks for that signal itself,
nor a child that is no zlh command.) The lock descriptors a caller holds (corpus roots) are
handed down when it asks (`pass_fds`), so that the root stays held until the child ends.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence

from ..common.process import child_env

TIMEOUT_RC = 124           # the child ran past its timeout (and was stopped), as timeout(1)
CRASH_RC = -1              # the process ended without an exit status of its own
GRACE_S = 10.0             # SIGTERM to SIGKILL, when a child is stopped
INTERRUPT_GRACE_S = 5.0    # the same when the command itself is being interrupted


def own_status(rc: int, log: IO | None = None) -> int:
    """The exit status of a child that ended by itself, as zlh records it: as the child gave
    it, except TIMEOUT_RC, which zlh keeps for a child it stopped past its time. A child that
    exits 124 itself (an op's `os._exit(124)`) ended without a result: CRASH_RC, said in
    `log` (an open text handle) where given."""
    if rc != TIMEOUT_RC:
        return rc
    if log is not None:
        try:
            log.write(f"zlh: the process exited with status {TIMEOUT_RC} without a result\n")
            log.flush()
        except (OSError, ValueError):          # a full disk, a closed handle: the status says it
            pass
    return CRASH_RC


class Child:
    """One started child process (its own session unless asked otherwise)."""

    def __init__(self, proc: subprocess.Popen, own_group: bool):
        self.proc, self.own_group = proc, own_group

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stdin(self):
        return getattr(self.proc, "stdin", None)

    @property
    def stdout(self):
        return getattr(self.proc, "stdout", None)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        """The exit status (subprocess.TimeoutExpired when it has not ended in time)."""
        return self.proc.wait(timeout=timeout)

    def finish(self, timeout_s: float | None, grace_s: float = GRACE_S,
               interrupt_grace_s: float = INTERRUPT_GRACE_S, log: IO | None = None) -> int:
        """Wait for the child to end: its exit status (own_status: `log`, its open log, says
        why where it is not the child's own), then what it left of its group is killed; past
        `timeout_s` it is stopped (`grace_s`) and the status is TIMEOUT_RC. An exception while
        waiting (Ctrl-C, SIGTERM of this command) stops it (`interrupt_grace_s`) and is raised
        again."""
        try:
            rc = self.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.stop(grace_s)
            return TIMEOUT_RC
        except BaseException:
            self.stop(interrupt_grace_s)
            raise
        self.kill_leftovers()
        return own_status(rc, log)

    def signal_group(self, sig: int) -> bool:
        """`sig` to the child's process group (to the child alone when it shares this
        process's group); False when there is nothing left to signal or it is not ours."""
        try:
            if self._group_leader():
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def stop(self, grace_s: float = GRACE_S) -> None:
        """SIGTERM the child's process group, SIGKILL what is left after `grace_s`; then the
        leftovers of the group, and the pipes to the child are closed."""
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
            if not self.signal_group(sig):
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.kill_leftovers()
        self.close_pipes()

    def kill_leftovers(self) -> None:
        """SIGKILL what is left of an ended child's group (it leads its own session): the
        children an op started and did not end. A child that started a session of its own
        is out of reach."""
        if not self._group_leader():
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close_pipes(self) -> None:
        for stream in (self.stdin, self.stdout, getattr(self.proc, "stderr", None)):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass

    def _group_leader(self) -> bool:
        """Whether the child's pid names a process group of its own (never this one's)."""
        return self.own_group and self.proc.pid > 1 and self.proc.pid != os.getpgrp()


def start(cmd: Sequence[str], env: dict | None, *, stdin=None, stdout=None, stderr=None,
          text: bool = False, bufsize: int = -1, cwd: str | os.PathLike | None = None,
          pass_fds: Sequence[int] = (), end_with_parent: bool = True,
          own_group: bool = True) -> Child:
    """Start `cmd` with `env` (plus ZLH_PARENT_PID unless `end_with_parent` is False: a
    child that asks for the parent-death signal itself, or one that is no zlh command and
    whose own children, a `zlh` among them, would take the request for theirs), in a
    session of its own unless `own_group` is False (a child that must get the terminal's
    Ctrl-C with this command). `env` None: this process's environment."""
    env = dict(os.environ) if env is None else env
    proc = subprocess.Popen(list(cmd), env=child_env(env) if end_with_parent else env,
                            stdin=stdin, stdout=stdout, stderr=stderr, text=text,
                            bufsize=bufsize, cwd=cwd, start_new_session=own_group,
                            pass_fds=tuple(pass_fds))
    return Child(proc, own_group)


def write_command(handle: IO[str], cmd: Sequence[str]) -> None:
    """The command line, as the first line of the child's log."""
    handle.write(" ".join(cmd) + "\n")
    handle.flush()


@dataclass(frozen=True)
class Finished:
    """How a child run to completion ended."""
    rc: int
    elapsed_s: float
    pid: int


def run(cmd: Sequence[str], env: dict, log: Path, timeout_s: float | None, *,
        append: bool = False, command_line: bool = True,
        cwd: str | os.PathLike | None = None, pass_fds: Sequence[int] = (),
        grace_s: float = GRACE_S, interrupt_grace_s: float = INTERRUPT_GRACE_S,
        end_with_parent: bool = True, own_group: bool = True) -> Finished:
    """`cmd` to completion, its output (stdout and stderr) in `log` after its command line
    (unless `command_line` is False), `log` appended to with `append`; stopped past
    `timeout_s` (rc TIMEOUT_RC), and when this command is interrupted meanwhile."""
    started = time.time()
    with open(log, "a" if append else "w", encoding="utf-8") as handle:
        if command_line:
            write_command(handle, cmd)
        child = start(cmd, env, stdout=handle, stderr=subprocess.STDOUT, cwd=cwd,
                      pass_fds=pass_fds, end_with_parent=end_with_parent, own_group=own_group)
        rc = child.finish(timeout_s, grace_s, interrupt_grace_s, log=handle)
    return Finished(rc, time.time() - started, child.pid)


def capture(cmd: Sequence[str], env: dict | None, timeout_s: float, *,
            cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """`cmd` to completion with its stdout and stderr captured (text), as subprocess.run
    with capture_output: past `timeout_s` its group is killed and subprocess.TimeoutExpired
    raised; OSError when it cannot be started. For a probe that is no zlh command: its
    environment gets no ZLH_PARENT_PID (what it starts would take it for theirs)."""
    child = start(cmd, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                  end_with_parent=False)
    try:
        out, err = child.proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.signal_group(signal.SIGKILL)
        child.proc.wait()            # not communicate(): a process that left the group
        child.close_pipes()          # may hold the pipes open for as long as it lives
        raise subprocess.TimeoutExpired(child.proc.args, timeout_s) from None
    except BaseException:
        child.stop(INTERRUPT_GRACE_S)
        raise
    child.kill_leftovers()
    return subprocess.CompletedProcess(child.proc.args, child.proc.returncode, out, err)
