"""One process at a time works on a device, across processes.

Two processes may share a device while only one of them works on it: the other imports or
plans (a corpus command's overlap). Whoever launches on the device holds its lock: a run that
times holds it from its first case's inputs to its last case's check (harness/run/phases.py);
the timing core holds it around each timed section as well (re-entrant: within a run's hold
that costs nothing), so a timer used on its own is covered too. Device work of another
process is not harmless even between timed sections: on an H200, kernels of a few
microseconds read up to 16 % faster while a neighbour launches small kernels, during the
timed sections or only between them (tests/device/overlap_cause.py, `gpu` and `between`),
while host load, a neighbour's idle context with memory held, process starts and NVML polling
change nothing. A second process that needs the device waits for the first to let it go. Work
that times nothing may hold the lock shared, beside other such work (see DeviceLock) and let
it go while it compiles (`stepped_aside`); before a process lets the lock go, its queued
device work finishes (`settle`). A run's hold taken alone right after another process's
exclusive hold first leaves the device idle until `COOL_S` have passed since that hold ended
(`cooled_s`): a long GEMM timed straight after a neighbour's timed section inherited its heat
(on an H200, addmm 4096³ read 229.9 µs under overlap against 213.0–213.7 µs in three runs
without it, the card starting at 1,860 MHz under its power cap instead of idle at 1,980 MHz),
while one op after another in a worker never starts sooner than its hand-over allows.

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
import uuid
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
COOL_S = 2.0                     # idle device before a hold alone after another's (see above)
COOL_ENV = "ZLH_DEVICE_COOL_S"   # another value of it, in seconds (0: none)
MARK_BYTES = 64                  # the lock file's content: "<holder> <epoch end>" of the last
                                 # exclusive hold, written before it was let go


def lock_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder the environment names for device locks, or None (no lock)."""
    value = (os.environ if environ is None else environ).get(LOCK_DIR_ENV, "").strip()
    return Path(value) if value and fcntl is not None else None


def folder_refusal(folder: Path, exc: OSError) -> str:
    """The one line that refuses a lock folder the lock files cannot be made in."""
    return (f"{LOCK_DIR_ENV}={folder}: cannot create the device's measurement lock there "
            f"({exc.strerror or exc}); name a writable folder or unset it")


def check_folder(environ: Mapping[str, str] | None = None) -> str | None:
    """Before a run: why the named lock folder cannot hold the lock files (folder_refusal),
    or None (it can, or none is named). Makes it where missing, as the run's lock would."""
    folder = lock_folder(environ)
    try:
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            if not os.access(folder, os.W_OK | os.X_OK):
                raise PermissionError(13, "Permission denied")
    except OSError as exc:
        return folder_refusal(folder, exc)
    return None


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
    cooled_s: float = 0.0


def cool_seconds(environ: Mapping[str, str] | None = None) -> float:
    """COOL_S, or the seconds `ZLH_DEVICE_COOL_S` names (a bad value: COOL_S)."""
    value = (os.environ if environ is None else environ).get(COOL_ENV, "").strip()
    try:
        return max(0.0, float(value)) if value else COOL_S
    except ValueError:
        return COOL_S


def lock_file_name(key: str) -> str:
    """`device-<key>.lock`, the key kept to file-name characters."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key.strip())[:120] or "unknown"
    return f"device-{safe}.lock"


class DeviceLock:
    """The lock of one device in this process: re-entrant (a timed section inside a run's hold
    does not wait for itself), shared by this process's threads.

    A hold is exclusive, or shared (`acquire(shared=True)`): device work that times nothing —
    a run that only calls each case once for its code and output — may run beside other such
    work, never beside an exclusive holder. An exclusive block inside a shared hold (a timed
    section, an autotune sweep) converts the hold for its block: it lets go and waits like
    any exclusive acquire. Exclusive acquires go first: a waiting one holds the gate file
    (`device-<key>.gate`), so no new shared holder slips in ahead of it."""

    def __init__(self, path: Path, key: str = ""):
        self.path, self.key = Path(path), key
        self.gate_path = self.path.with_suffix(".gate")
        self._fd: int | None = None
        self._gate_fd: int | None = None
        self._levels: list[bool] = []     # per depth: whether that block asked for exclusive
        self._exclusive: bool | None = None   # how the file is held now (None: not held)
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
        self.cool_s = cool_seconds()   # idle time owed after another process's exclusive hold
        self.cooled_s = 0.0            # time spent so, holding the lock
        self.sleep: Callable[[float], None] = time.sleep
        self._holder = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"   # this object, in the mark
        self.sections: list[tuple[float, float]] = []   # (enter, exit), epoch seconds
        self.shared_sections: list[tuple[float, float]] = []   # those held shared
        self.opened_at = time.time()   # (for run.json: the run's span beside its sections)
        self.while_waiting: Callable[[], None] | None = None   # e.g. the run's heartbeat
        self._wait_started: float | None = None   # perf_counter of a wait in progress
        # called before each letting go (the backend's synchronize): this process's queued
        # device work ends before another process may time
        self.settle: Callable[[], None] | None = None

    @property
    def _depth(self) -> int:
        return len(self._levels)

    def open(self) -> None:
        """The lock and gate files, created where missing (OSError when their folder cannot
        hold them)."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        if self._gate_fd is None:
            self._gate_fd = os.open(self.gate_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)

    def acquire(self, counted: bool = True, shared: bool = False) -> None:
        """Take the lock (re-entrant); `shared`: see the class. `counted` False: taking it
        back after stepping aside, not a new hold (`acquires` and `contended` stay as they
        are)."""
        self._guard.acquire()          # another thread of this process waits here
        try:
            if not self._levels:
                self._take(not shared, "hold" if counted else "aside")
                self._owner = threading.get_ident()
            elif self._exclusive is None or (not shared and not self._exclusive):
                self._let_go()         # a shared hold converted (or one lost to an interrupt)
                self._take(not shared or any(self._levels), "convert")
        except BaseException:
            self._guard.release()
            raise
        self._levels.append(not shared)

    def _take(self, exclusive: bool, why: str) -> None:
        """The file locked in the mode asked, through the gate (exclusive waiters first)."""
        self.open()
        started = self._wait_started = time.perf_counter()    # (the gate's wait counts too)
        try:
            waited = self._flock(self._gate_fd, fcntl.LOCK_EX)
            try:
                waited = self._flock(self._fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) \
                    or waited
                self._exclusive = exclusive        # held from here, whatever comes next
                self._entered, self._entered_at = time.perf_counter(), time.time()
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(self._gate_fd, fcntl.LOCK_UN)
        finally:
            self._wait_started = None
        if waited:
            self.waited_s += self._entered - started
            self.contended += why == "hold"
            if self.while_waiting is not None:     # once more, with the wait complete
                with contextlib.suppress(Exception):
                    self.while_waiting()
        self.acquires += why == "hold"
        self.asides += why == "aside"
        if exclusive and why == "hold":
            self._cool_down()

    def _cool_down(self) -> None:
        """Taken alone for a new hold: the device left idle until `cool_s` have passed since
        another holder's exclusive hold ended (the lock file's mark), so what this hold times
        does not start on a card still hot from a neighbour's timed section."""
        try:
            holder, end = os.pread(self._fd, MARK_BYTES, 0).decode().split()
            owed = self.cool_s - (time.time() - float(end))
        except (OSError, ValueError, UnicodeDecodeError):
            return                     # no mark yet (a new file), or an unreadable one
        if holder != self._holder and 0 < owed <= self.cool_s:
            self.sleep(owed)
            self.cooled_s += owed

    def _mark_end(self) -> None:
        """This exclusive hold's end in the lock file, for the next holder's `_cool_down`."""
        with contextlib.suppress(OSError):
            os.pwrite(self._fd, f"{self._holder} {time.time():.6f}".ljust(MARK_BYTES).encode(), 0)

    def _flock(self, fd: int, operation: int) -> bool:
        """flock(fd, operation): True when it had to wait. Taken after a wait and then
        interrupted (e.g. leaving the wait's heartbeat): let go again before raising."""
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            pass
        taken = False
        try:
            with self._telling_while_waiting():
                fcntl.flock(fd, operation)     # a signal's handler may raise here
                taken = True
        except BaseException:
            if taken:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
            raise
        return True

    def waiting_s(self) -> float:
        """Seconds of the wait in progress (0 when this process is not waiting)."""
        started = self._wait_started
        return 0.0 if started is None else time.perf_counter() - started

    @contextlib.contextmanager
    def _telling_while_waiting(self):
        """`while_waiting` (if set) called about once a second while this process waits for
        another's section: the run's heartbeat, so a wait is not taken for a hang."""
        if self.while_waiting is None:
            yield
            return
        with every(1.0, self.while_waiting, "zlh-lock-wait"):
            yield

    def _let_go(self) -> None:
        if self._exclusive is None:
            return
        try:
            if self.settle is not None:
                with contextlib.suppress(Exception):    # a broken device says so at its next use
                    self.settle()
        finally:
            now = time.time()
            self.held_s += time.perf_counter() - self._entered
            if len(self.sections) < MAX_SECTIONS:
                self.sections.append((self._entered_at, now))
                if not self._exclusive:
                    self.shared_sections.append((self._entered_at, now))
            if self._exclusive:
                self._mark_end()
            self._exclusive = None
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def release(self) -> None:
        if not self._levels:
            return
        try:
            self._levels.pop()
            if not self._levels:
                self._owner = None
                self._let_go()
            elif self._exclusive and not any(self._levels):   # back to the shared hold
                self._let_go()
                self._take(False, "convert")
        finally:
            self._guard.release()

    @contextlib.contextmanager
    def section(self, shared: bool = False):
        self.acquire(shared=shared)
        try:
            yield self
        finally:
            self.release()

    @contextlib.contextmanager
    def stepped_aside(self):
        """This thread's hold let go for the block — another process may work on the device
        meanwhile — and taken back after it, as it was (waiting, if need be, like any
        acquire); nothing when this thread does not hold the lock. Triton compiles so."""
        if self._owner != threading.get_ident() or not self._levels:
            yield
            return
        levels = list(self._levels)
        with self._guard:
            self._let_go()
            self._levels, self._owner = [], None
            for _ in levels:
                self._guard.release()
        let_go = time.perf_counter()
        try:
            yield
        finally:
            self.aside_s += time.perf_counter() - let_go
            self.acquire(counted=False, shared=not any(levels))
            self._levels = levels          # the same depth, each block as it asked
            for _ in levels[1:]:
                self._guard.acquire()

    def close(self) -> None:
        with self._guard:
            if not self._levels:
                for name in ("_fd", "_gate_fd"):
                    if getattr(self, name) is not None:
                        os.close(getattr(self, name))
                        setattr(self, name, None)

    def mark(self) -> Mark:
        """The counters now (`run_fields(since=...)` reports what came after). The stretches
        before it were an earlier run's: they are let go, so each run keeps its own (up to
        MAX_SECTIONS) however many runs the process serves."""
        self.sections.clear()
        self.shared_sections.clear()
        return Mark(time.time(), self.waited_s, self.held_s, self.acquires, self.contended,
                    self.asides, self.aside_s, self.cooled_s)

    def run_fields(self, since: Mark | None = None) -> dict:
        """What run.json records of the lock since `since` (default: since it was made): its
        key, the wait, the stretches held — the one still held now (by an enclosing hold, a
        worker's job) up to now — each clipped to the mark; `shared_s`, the part of the held
        time held shared."""
        since = since or Mark(self.opened_at)
        now = time.time()
        holding = self._exclusive is not None

        def clipped(stretches) -> list[tuple[float, float]]:
            return [(max(a, since.at), b) for a, b in stretches if b > since.at]
        stretches = clipped([*self.sections, *([(self._entered_at, now)] if holding else [])])
        shared = clipped([*self.shared_sections,
                          *([(self._entered_at, now)] if self._exclusive is False else [])])
        held = sum(b - a for a, b in stretches)
        if len(self.sections) >= MAX_SECTIONS:     # some not kept: the counter says it all
            held = self.held_s - since.held_s + (now - self._entered_at if holding else 0)
        shared_s = min(held, sum(b - a for a, b in shared))    # (of the stretches kept)
        return {"key": self.key, "wait_s": round(self.waited_s - since.waited_s, 3),
                "held_s": round(held, 3),
                "shared_s": round(shared_s, 3),
                "acquires": self.acquires - since.acquires,
                "contended": self.contended - since.contended,
                "asides": self.asides - since.asides,
                "aside_s": round(self.aside_s - since.aside_s, 3),
                "cooled_s": round(self.cooled_s - since.cooled_s, 3),
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
