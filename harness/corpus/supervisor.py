"""Running one op attempt: in a reused worker, or in a fresh `zlh bench` process.

The supervisor owns its worker processes: it starts one per device lane, hands it an op,
waits at most the op timeout for the answer, and replaces the worker when the op crashed
it, hung (the worker's whole process group gets SIGTERM, then SIGKILL), left the device
unusable, or kept device memory alive past its reset. Either way the attempt ends as an
`Attempt` (exit status, log, run directory).
"""
from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import EXIT_POISONED, UsageError
from ..common.files import atomic_write_bytes
from ..common.parent_pipe import WriteFailurePipe
from ..launch import launcher
from ..store.reader import read_info
from ..common.lock import held_fds
from .outcome import CRASH_RC, TIMEOUT_RC, Attempt, held_over_limit
from .stall import StallWatch, run_watched

GRACE_S = launcher.GRACE_S
# SIGTERM to SIGKILL for a worker between jobs: it exits at once on SIGTERM (worker.main),
# having nothing to finalise; one whose op left SIGTERM ignored is killed after this.
IDLE_GRACE_S = 2.0
START_TIMEOUT_S = 300.0
SIGNAL_EXIT_LOW, SIGNAL_EXIT_HIGH = 128, 128 + 64    # an exit status of 128 + a signal
LOG_TAIL_BYTES = 1 << 20      # where an op's last error line is looked for
# An op's log (run.attempt<k>.log) larger than this after its attempt keeps only its first and
# last LOG_KEEP_BYTES, with one line in between saying how much was dropped.
LOG_LIMIT_BYTES = 64 << 20
LOG_KEEP_BYTES = 1 << 20


@dataclass
class Lane:
    """How the processes of one device lane start: interpreter and environment."""
    python: str = sys.executable
    env: dict = field(default_factory=lambda: dict(os.environ))
    label: str = "dev0"


def worker_death(status: int) -> tuple[int, str]:
    """(the attempt's rc, what to say) for a worker process that ended under an op without
    a reply, from its exit status: a signal (negative), or 128 + one from its own handlers
    (a stop), stays as it is; any other exit — 0, or a code the op's os._exit / a library
    gave — is no `zlh bench` exit code (not bad input, a timeout or a poisoned device): the
    process ended without a result (CRASH_RC), its status said."""
    if status < 0 or SIGNAL_EXIT_LOW < status <= SIGNAL_EXIT_HIGH:
        return status, ""
    return CRASH_RC, f"the worker process exited with status {status} without a result"


def last_line(log: Path) -> str:
    """The op's last one-line error (`zlh: ...`, a PREFLIGHT_FAILED line, or the last line of
    a traceback) in the log's last MiB, or "" when it printed none."""
    try:
        with open(log, "rb") as handle:       # its end only: an op may print gigabytes
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("zlh:") or "PREFLIGHT_FAILED" in ln]
    if errors:
        return errors[-1]
    if any(ln.startswith("Traceback") for ln in lines):
        return lines[-1]
    return ""


def cap_log(log: Path, limit: int = LOG_LIMIT_BYTES, keep: int = LOG_KEEP_BYTES) -> int:
    """An op's log over `limit` bytes is replaced (atomically) by its first and last `keep`
    bytes (at most a quarter of `limit` each), cut at line boundaries so that its last lines
    — the op's error — stay whole, with one line in between saying how many bytes were
    dropped. Returns that number (0: the log was left as it was, also when it could not be
    rewritten)."""
    try:
        size = log.stat().st_size
    except OSError:
        return 0
    if size <= limit:
        return 0
    keep = max(1, min(keep, limit // 4))
    try:
        with open(log, "rb") as handle:
            head = handle.read(keep)
            handle.seek(size - keep)
            tail = handle.read(keep)
        cut = head.rfind(b"\n") + 1
        head = head[:cut] if cut else head          # a first line longer than `keep`: cut it
        start = tail.find(b"\n") + 1
        tail = tail[start:] if 0 < start < len(tail) else tail
        dropped = size - len(head) - len(tail)
        marker = (f"----- {dropped} bytes of this log dropped here: it had {size} bytes, more "
                  f"than {limit}; its first and last lines are kept -----\n").encode()
        if head and not head.endswith(b"\n"):
            marker = b"\n" + marker
        atomic_write_bytes(log, head + marker + tail, stat.S_IMODE(log.stat().st_mode))
        return dropped
    except OSError:                  # no room for the copy: the log stays whole
        return 0


def newest_run_dir(out: Path, before: set[Path]) -> Path | None:
    runs = sorted(p for p in out.iterdir() if p.is_dir() and (p / "run.json").exists()
                  and p not in before) if out.is_dir() else []
    return runs[-1] if runs else None


def held_too_much(reply: dict) -> int:
    """The device memory a worker's answer says it still held after the op's reset, when that
    is over the limit (else 0)."""
    return held_over_limit(reply.get("held_bytes"))


def state_names(changed) -> tuple[str, ...]:
    """The names of the process switches a worker's answer says the op changed."""
    if not isinstance(changed, list):
        return ()
    return tuple(str(c).split(":", 1)[0] for c in changed)


def run_dirs(out: Path) -> set[Path]:
    return {p for p in out.iterdir() if p.is_dir()} if out.is_dir() else set()


class WorkerStartError(RuntimeError):
    """A worker process exited, or said something else, before it was ready."""


class Worker:
    """A reused worker process (harness.corpus.worker). `warm`: what it imports before it
    says it is ready (a standby's: {"op", "args"} of the lane's latest job), None: nothing."""

    def __init__(self, lane: Lane, log: Path, warm: dict | None = None):
        self.lane, self.log, self.warm = lane, log, warm
        self.proc: launcher.Child | None = None
        self.pid: int | None = None
        self.ready = False
        self.busy = False             # a job handed over and not answered
        self.import_s = 0.0           # what its start imported, in seconds (its ready line)
        self.launched_at = self.ready_at = 0.0     # epoch seconds
        self._readying = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def launch(self) -> None:
        """The process, started; its ready line is read by `await_ready`."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        warm = ["--warm", json.dumps(self.warm)] if self.warm is not None else []
        with open(self.log, "a", encoding="utf-8") as err:
            # The worker asks for the parent-death signal itself, at its start: its
            # environment stays the lane's (an op it runs must not inherit the request).
            self.proc = launcher.start(
                [self.lane.python, "-m", "harness.corpus.worker", *warm], self.lane.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                bufsize=1, pass_fds=held_fds(), end_with_parent=False)
        self.ready, self.launched_at = False, time.time()

    def await_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Its ready line (once, whoever asks first); WorkerStartError when it never came."""
        with self._readying:
            if self.ready:
                return
            proc = self.proc
            ready, _ = self._read(timeout_s) if proc is not None else (None, "eof")
            if not ready or not ready.get("ready"):
                self.stop()
                said = last_line(self.log)
                raise WorkerStartError(f"worker did not start (see {self.log})"
                                       f"{': ' + said if said else ''}")
            self.pid, self.ready, self.ready_at = ready["pid"], True, time.time()
            self.import_s = float(ready.get("import_s") or 0.0)

    def start(self) -> None:
        self.launch()
        self.await_ready()

    def run(self, job: dict, timeout_s: float, log: Path, out: Path,
            log_limit: int = LOG_LIMIT_BYTES, stall_s: float | None = None,
            wait_cap_s: float = 0.0) -> Attempt:
        waiting = time.time()
        try:
            if not self.alive:
                self.start()
            elif not self.ready:            # a standby still importing
                self.await_ready()
        except WorkerStartError as exc:   # the op crashed before it began: retried in
            return Attempt(CRASH_RC, 0.0, log, None, str(exc))   # a fresh worker
        start_s = time.time() - waiting
        before = run_dirs(out)
        started = time.time()
        watch = StallWatch(out, before, stall_s, wait_cap_s=wait_cap_s)   # (stall.py)
        self.busy = True
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            reply, ended = self._read(timeout_s, watch.stalled, watch.device_wait_s)
        except (BrokenPipeError, OSError):
            reply, ended = None, "eof"
        elapsed = time.time() - started
        if reply is None and ended in ("timeout", "stalled"):    # a hang
            self.stop()                              # (mid-job: its run is finalised)
            rc = TIMEOUT_RC
        elif reply is None:                          # the worker died under the op
            rc, died = worker_death(self.proc.wait())
            self.proc.kill_leftovers()               # what the op started must not outlive it
            self.proc.close_pipes()
            self.proc, self.ready, self.busy = None, False, False
        else:
            self.busy = False
            rc = int(reply["rc"])
            if rc == EXIT_POISONED or held_too_much(reply) or reply.get("state_changed"):
                self.stop()                          # the next op gets a fresh worker
        run_dir = newest_run_dir(out, before)
        if reply is None and ended == "stalled":
            watch.mark(run_dir)
        message = last_line(log)
        if reply is None and ended == "eof" and died:
            message = died + (f": {message}" if message else "")
        cap_log(log, log_limit)
        return Attempt(rc, elapsed, log, run_dir, message, self.pid,
                       (reply or {}).get("write_failure") or failed_write(run_dir),
                       held_too_much(reply or {}),
                       state_names((reply or {}).get("state_changed")),
                       stalled_s=stall_s if reply is None and ended == "stalled" else None,
                       start_s=round(start_s, 3),
                       import_s=float((reply or {}).get("job_import_s") or 0.0))

    def _read(self, timeout_s: float, stalled=None, waited=None) -> tuple[dict | None, str]:
        """(the next protocol line, "ok"), or (None, "eof") when the worker is gone, or
        (None, "timeout") past `timeout_s` plus what `waited()` says the op waited for its
        device, or (None, "stalled") once `stalled()` says so."""
        deadline = time.time() + timeout_s
        stream = self.proc.stdout
        while True:
            remaining = deadline + (waited() if waited is not None else 0.0) - time.time()
            if remaining <= 0:
                return None, "timeout"
            ready, _, _ = select.select([stream], [], [], min(remaining, 1.0))
            if ready:
                line = stream.readline()
                if not line:
                    return None, "eof"
                try:
                    return json.loads(line), "ok"
                except ValueError:
                    continue
            elif self.proc.poll() is not None:
                return None, "eof"
            elif stalled is not None and stalled():
                return None, "stalled"

    def stop(self, grace_s: float | None = None) -> None:
        """SIGTERM the worker's process group (mid-job it finalises the op's run directory),
        then SIGKILL what is left after `grace_s` (default: GRACE_S mid-job, IDLE_GRACE_S
        between jobs)."""
        if self.proc is None:
            return
        if grace_s is None:
            grace_s = GRACE_S if self.busy else IDLE_GRACE_S
        self.proc.stop(grace_s)
        self.proc, self.ready, self.busy = None, False, False


def run_fresh(lane: Lane, op: str, argv: list[str], timeout_s: float, log: Path,
              out: Path, log_limit: int = LOG_LIMIT_BYTES,
              stall_s: float | None = None, wait_cap_s: float = 0.0) -> Attempt:
    """One op in its own `zlh bench` process (the comparison mode, --fresh-process)."""
    out.mkdir(parents=True, exist_ok=True)
    before = run_dirs(out)
    cmd = [lane.python, "-m", "harness", "bench", op, *argv]
    started = time.time()
    watch = StallWatch(out, before, stall_s, wait_cap_s=wait_cap_s)     # (stall.py)
    with WriteFailurePipe() as told:        # why its run could not write, where it says
        ended = run_watched(cmd, {**lane.env, **told.env}, log, timeout_s, watch,
                            pass_fds=(*held_fds(), *told.fds))
        write_failure = told.reason()
    run_dir = newest_run_dir(out, before)
    if watch.fired:
        watch.mark(run_dir)
    message = last_line(log)
    cap_log(log, log_limit)
    return Attempt(ended.rc, time.time() - started, log, run_dir, message, ended.pid,
                   write_failure or failed_write(run_dir),
                   stalled_s=stall_s if watch.fired else None)


def failed_write(run_dir: Path | None) -> str:
    """The reason a run ended because it could not write its files (`status: failed` in its
    run.json: disk full, read-only file system), or ""."""
    if run_dir is None:
        return ""
    try:
        info = read_info(run_dir)
    except UsageError:
        return ""
    return str(info.get("reason") or "write failed") if info.get("status") == "failed" else ""
