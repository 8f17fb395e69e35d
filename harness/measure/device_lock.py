"""One process at a time works on a device, across processes.

Two processes may share a device while only one of them works on it: the other imports or
compiles (a corpus command's overlap). Whoever launches on the device holds its lock: a run
holds it from its first case's inputs to its last case's check (harness/run/phases.py) and
steps aside while Triton compiles (host work); the timing core holds it around each timed
section as well (re-entrant: within a run's hold that costs nothing), so a timer used on its
own is covered too. Device work of another process during a timed section is not harmless:
on an H200, kernels of a few microseconds read up to 16 % faster while a neighbour launches
small kernels (tests/device/overlap_cause.py), while host load and a neighbour's idle context
with memory held change nothing. A second process that needs the device waits for the first
to let it go.

The lock is a file lock (flock) on `<folder>/device-<key>.lock`, `key` the device's identity
as the backend gives it (its UUID where there is one), so every process that names the same
folder — whatever its device index or visibility variables — meets on the same file. It is on
where the environment names a folder (`ZLH_DEVICE_LOCK_DIR`, set by a corpus command that
overlaps its ops); elsewhere `for_device` gives None and nothing is taken. The kernel drops a
flock when its process dies, however it dies: a killed holder never blocks the device.

Uncontended, an acquire is one non-blocking flock call (microseconds). What a run waited
and how long it held the lock are counted (`waited_s`, `held_s`, `sections`) for run.json.
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ..common.periodic import every

try:
    import fcntl
except ImportError:              # no flock on this platform: no lock, as with no folder
    fcntl = None

LOCK_DIR_ENV = "ZLH_DEVICE_LOCK_DIR"
MAX_SECTIONS = 10_000            # held stretches kept per run (enter, exit) for run.json


def lock_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder the environment names for device locks, or None (no lock)."""
    value = (os.environ if environ is None else environ).get(LOCK_DIR_ENV, "").strip()
    return Path(value) if value and fcntl is not None else None


@dataclass(frozen=True)
class Mark:
    """The lock's counters at a moment: what a run (or a worker's job) reports is what
    happened since its mark."""
    at: float = 0.0              # epoch seconds
    waited_s: float = 0.0
    held_s: float = 0.0
    acquires: int = 0
    contended: int = 0
    asides: int = 0
    aside_s: float = 0.0


def lock_file_name(key: str) -> str:
    """`device-<key>.lock`, the key kept to file-name characters."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key.strip())[:120] or "unknown"
    return f"device-{safe}.lock"


class DeviceLock:
    """The lock of one device in this process: re-entrant (a timed section inside a run's hold
    does not wait for itself), shared by this process's threads."""

    def __init__(self, path: Path, key: str = ""):
        self.path, self.key = Path(path), key
        self._fd: int | None = None
        self._depth = 0
        self._owner: int | None = None
        self._guard = threading.RLock()
        self._entered = 0.0
        self._entered_at = 0.0
        self.waited_s = 0.0            # time spent waiting for another process's section
        self.held_s = 0.0
        self.acquires = 0
        self.contended = 0             # acquires that had to wait
        self.asides = 0                # times it was let go for a compile (stepped_aside)
        self.aside_s = 0.0             # time let go for them (their waits to take it back apart)
        self.sections: list[tuple[float, float]] = []   # (enter, exit), epoch seconds
        self.opened_at = time.time()   # (for run.json: the run's span beside its sections)
        self.while_waiting: Callable[[], None] | None = None   # e.g. the run's heartbeat

    def open(self) -> None:
        """The lock file, created where missing (OSError when its folder cannot hold it)."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)

    def acquire(self, counted: bool = True) -> None:
        """Take the lock (re-entrant); `counted` False: taking it back after stepping aside,
        not a new hold (`acquires` and `contended` stay as they are)."""
        self._guard.acquire()          # another thread of this process waits here
        if self._depth:
            self._depth += 1
            return
        locked = False
        try:
            self.open()
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
            except BlockingIOError:
                started = time.perf_counter()
                with self._telling_while_waiting():
                    fcntl.flock(self._fd, fcntl.LOCK_EX)     # a signal's handler may raise here
                    locked = True
                self.waited_s += time.perf_counter() - started
                if counted:
                    self.contended += 1
        except BaseException:
            if locked:         # taken, then interrupted (e.g. leaving the wait's heartbeat)
                with contextlib.suppress(OSError):
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._guard.release()
            raise
        self._depth, self._owner = 1, threading.get_ident()
        if counted:
            self.acquires += 1
        else:
            self.asides += 1
        self._entered, self._entered_at = time.perf_counter(), time.time()

    @contextlib.contextmanager
    def _telling_while_waiting(self):
        """`while_waiting` (if set) called about once a second while this process waits for
        another's section: the run's heartbeat, so a wait is not taken for a hang."""
        if self.while_waiting is None:
            yield
            return
        with every(1.0, self.while_waiting, "zlh-lock-wait"):
            yield

    def release(self) -> None:
        if self._depth > 1:
            self._depth -= 1
            self._guard.release()
            return
        if self._depth == 1:
            self._depth, self._owner = 0, None
            self.held_s += time.perf_counter() - self._entered
            if len(self.sections) < MAX_SECTIONS:
                self.sections.append((self._entered_at, time.time()))
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                self._guard.release()

    @contextlib.contextmanager
    def section(self):
        self.acquire()
        try:
            yield self
        finally:
            self.release()

    @contextlib.contextmanager
    def stepped_aside(self):
        """This thread's hold let go for the block — another process may work on the device
        meanwhile — and taken back after it at the same depth (waiting, if need be, like any
        acquire); nothing when this thread does not hold the lock. Triton compiles so."""
        depth = self._depth if self._owner == threading.get_ident() else 0
        for _ in range(depth):
            self.release()
        let_go = time.perf_counter()
        try:
            yield
        finally:
            if depth:
                self.aside_s += time.perf_counter() - let_go
            for _ in range(depth):
                self.acquire(counted=False)

    def close(self) -> None:
        with self._guard:
            if self._fd is not None and not self._depth:
                os.close(self._fd)
                self._fd = None

    def mark(self) -> Mark:
        """The counters now (`run_fields(since=...)` reports what came after). The stretches
        before it were an earlier run's: they are let go, so each run keeps its own (up to
        MAX_SECTIONS) however many runs the process serves."""
        self.sections.clear()
        return Mark(time.time(), self.waited_s, self.held_s, self.acquires, self.contended,
                    self.asides, self.aside_s)

    def run_fields(self, since: Mark | None = None) -> dict:
        """What run.json records of the lock since `since` (default: since it was made): its
        key, the wait, the stretches held — the one still held now (by an enclosing hold, a
        worker's job) up to now — each clipped to the mark."""
        since = since or Mark(self.opened_at)
        now = time.time()
        stretches = list(self.sections)
        if self._depth:
            stretches.append((self._entered_at, now))
        stretches = [(max(a, since.at), b) for a, b in stretches if b > since.at]
        held = sum(b - a for a, b in stretches)
        if len(self.sections) >= MAX_SECTIONS:     # some not kept: the counter says it all
            held = self.held_s - since.held_s + (now - self._entered_at if self._depth else 0)
        return {"key": self.key, "wait_s": round(self.waited_s - since.waited_s, 3),
                "held_s": round(held, 3),
                "acquires": self.acquires - since.acquires,
                "contended": self.contended - since.contended,
                "asides": self.asides - since.asides,
                "aside_s": round(self.aside_s - since.aside_s, 3),
                "run_span": [round(since.at, 6), round(now, 6)],
                "sections": [[round(a, 6), round(b, 6)] for a, b in stretches]}


_SHARED: dict[Path, DeviceLock] = {}
_SHARED_GUARD = threading.Lock()


def for_device(key: str, environ: Mapping[str, str] | None = None) -> DeviceLock | None:
    """The lock of the device `key` names (the backend's identity of it), or None where the
    environment names no lock folder. One object per lock file in a process: a worker's
    job and the run inside it hold the same lock (two open files would block each other)."""
    folder = lock_folder(environ)
    if folder is None:
        return None
    path = (folder / lock_file_name(key)).resolve()    # one object whatever the cwd
    with _SHARED_GUARD:
        lock = _SHARED.get(path)
        if lock is None:
            lock = _SHARED[path] = DeviceLock(path, key)
    return lock


def default_folder() -> Path:
    """This machine's folder for device locks of this user (a corpus command's default)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"zlh-device-locks-{uid}"
