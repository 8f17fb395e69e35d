"""Overlap on one device lane (`--overlap`): a warm standby worker, and several ops at a time
(`--overlap-width`, 2 by default) that take turns on the device.

A worker's life is import, input building, compilation and measurement; everything that
launches on the device needs it alone, because another process's launches during a timed
section move its numbers (tests/device/overlap_cause.py). With overlap a lane

- keeps one spare worker started and imported (torch, zlh's runner, the adapter's library:
  worker.py's warm start) while its workers measure: a replacement — after a CRASH, a
  POISONED device, memory held, a changed process state, a retry — takes the spare at once
  and a new spare starts (`WarmPool`);
- runs up to `--overlap-width` units that time nothing at once (a screen's verdict pass,
  `--no-timing`), handed out in order (`in_order`): the next ops (or the next pairs of a
  screen) import and plan while the current one works on the device. They hold the device's
  lock shared, side by side, and let it go while Triton compiles (harness/compile/aside.py);
  their autotune sweeps hold it alone while they time configs (let go while each compiles).
- runs a unit that times **alone** (`Turns.alone`: what runs ends first, nothing starts beside
  it), holding the device's lock from its first case's inputs to its last case's check
  (harness/run/phases.py; the lane sets ZLH_DEVICE_LOCK_DIR). Beside neighbours that only
  started, imported and planned while it held the device, a `--timing all` screen of 40
  quick ops on an H200 read noise floors wider than without overlap (median 1.19 against
  1.01 points, 21 of 37 ops wider; the event-timed ops, whose launches are host work, 41 % and
  55 % off) and took longer (10.2 s of wall per pair against 8.5 s): tests/device/README.md,
  twentieth set. So for timed work overlap keeps only the warm spare; run so, the same
  screen read floors as without overlap (1.195 against 1.202 points) and still took longer,
  its sides' holds each waiting for the lock's cool-down (twenty-first set).

What stays attributed to the right op (`OverlapLane`): each op has its own worker process, so
its own timeout, crash, memory-held and process-state checks (the memory a worker holds is
its own process's). What a neighbour could cause — a device made unusable, device memory
taken, a hang holding the lock — shows as a failure of the op beside it: so an attempt that
ran beside another and did not end cleanly runs again alone (the lane waits until nothing
else runs and starts nothing beside it) and that second attempt is the op's answer. A
TIMEOUT is the op's own — its op timeout does not count the time it waited for a
neighbour's device work (up to the lane's width times the op timeout: corpus/stall.py), and
waiting beats the heartbeat, so a stall is its own too — unless an attempt beside it crashed
or ended POISONED (a broken device), or ended in TIMEOUT after holding the device for a
quarter of its op timeout or more or leaving no figures saying otherwise (a hang on the
device), and its own run could have been held up by that: it held the device (in any mode)
for a quarter of its op timeout or more, or waited for it as long as the lane forgives, or
left no run.json saying so. Only then does it run again alone. A TIMEOUT that spent its
time on its own compiles and host work keeps its status, and is no hang to its neighbours:
running it again alone (the lane then runs nothing else) measured as the same TIMEOUT
costing another op timeout of the whole device (tests/device/README.md, sixteenth set), and
seven linalg_lu ops that each compiled for 159 s beside each other (holding the device 2.5–6.5
s) once sent a neighbour that timed out in its own first case to run again alone (nineteenth
set). A usage error (exit 2: bad input, decided before any device work) is never run again.

Not kept apart: a spare's start (a CUDA context, the library's import) beside a unit that
times, which measured as harmless to a neighbour's numbers (an idle context with memory held).
tests/device/check_overlap.sh measures the whole (an A/A with and without overlap); overlap
is off by default.
"""
from __future__ import annotations

import collections
import contextlib
import queue
import threading
from pathlib import Path
from typing import Callable, Iterable

from ..common.errors import EXIT_FAILED_CASES, EXIT_OK, EXIT_USAGE, UsageError
from ..measure.device_lock import LOCK_DIR_ENV, default_folder
from ..store.reader import read_info
from . import files
from .outcome import TIMEOUT_RC, Attempt
from .supervisor import Lane, Worker, WorkerStartError
from .threads import run_lanes

# --overlap-width: units a lane runs at once with overlap (a plan older than it: 2)
SPARE_LINE = "zlh spare start:"     # the worker log's line for each spare's start
DEFAULT_OVERLAP_WIDTH, MAX_OVERLAP_WIDTH = 2, 8


class WarmPool:
    """The lane's spare workers (`depth` of them, one by default): launched (and importing)
    before anyone needs them, taken oldest first.

    Every worker is launched from the pool's own thread, which lives as long as the pool: a
    worker asks for SIGTERM when the thread that started it ends (PR_SET_PDEATHSIG follows
    the thread), and the lane's slot threads end before the workers they promoted do."""

    def __init__(self, lane: Lane, log: Path, depth: int = 1):
        self.lane, self.log, self.depth = lane, log, max(1, depth)
        self.warm: dict | None = None      # the latest job: what a new spare imports for
        self.spares: collections.deque[Worker] = collections.deque()
        self.starts = 0                    # worker processes launched
        self.spare_ready = threading.Event()
        self._guard = threading.Lock()
        self._closed = False
        self._requests: queue.Queue = queue.Queue()
        threading.Thread(target=self._launcher, daemon=True,
                         name=f"launcher-{lane.label}").start()

    def _launcher(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                return
            worker, done, failed = request
            try:
                worker.launch()
            except BaseException as exc:   # noqa: BLE001 - handed to the asking thread
                failed.append(exc)
            done.set()

    @property
    def spare(self) -> Worker | None:
        """The spare taken next (the oldest), or None."""
        return self.spares[0] if self.spares else None

    def prime(self) -> None:
        """Spares launched up to the pool's depth."""
        with self._guard:
            self._top_up()

    def take(self) -> Worker:
        """The oldest spare (promoted: it may still be importing, its first job waits for it),
        and a new spare launched behind the others."""
        with self._guard:
            worker = self.spares.popleft() if self.spares else None
            if worker is None and not self._closed:
                worker = self._launch()
            self._top_up()
            if self.spare is not None and self.spare.ready:
                self.spare_ready.set()
            else:
                self.spare_ready.clear()      # set when the next one says it is ready
        return worker or Worker(self.lane, self.log)

    def _top_up(self) -> None:
        while len(self.spares) < self.depth and not self._closed:
            self.spares.append(self._launch())

    def _launch(self) -> Worker:
        worker = Worker(self.lane, self.log, warm=dict(self.warm or {}))
        done, failed = threading.Event(), []
        self._requests.put((worker, done, failed))
        done.wait()
        if failed:
            raise failed[0]
        self.starts += 1
        threading.Thread(target=self._readied, args=(worker,), daemon=True,
                         name=f"standby-{self.lane.label}").start()
        return worker

    def _readied(self, worker: Worker) -> None:
        with contextlib.suppress(WorkerStartError, OSError, ValueError, AttributeError):
            worker.await_ready()
            # when a spare started beside the lane's runs (a start is device work outside
            # any run: its CUDA context, the library's import); tests/device/check_overlap.sh
            # reads these lines against the runs' spans
            note_in_log(self.log, f"{SPARE_LINE} pid {worker.pid} from {worker.launched_at:.3f} "
                                  f"to {worker.ready_at:.3f} (imports {worker.import_s:.1f} s)")
        if self.spare is worker:
            self.spare_ready.set()

    def close(self) -> None:
        with self._guard:
            self._closed = True
            spares, self.spares = list(self.spares), collections.deque()
            self._requests.put(None)
        for spare in spares:
            spare.stop()


class _Turn:
    """One attempt on the lane: the attempts that ran beside it, and how it ended."""

    def __init__(self):
        self.beside: list[_Turn] = []
        self.rc: int | None = None
        self.held_long = True          # held the device a quarter of its op timeout or more
                                       # (`held_device_long`; not known: yes)


class Turns:
    """Who runs beside whom on a lane, and runs alone."""

    def __init__(self):
        self._cond = threading.Condition()
        self._running: set[_Turn] = set()
        self._solo = False
        self._queued = 0                   # threads waiting to run alone: nothing new starts

    def begin(self) -> _Turn:
        turn = _Turn()
        with self._cond:
            while self._solo or self._queued:
                self._cond.wait()
            for other in self._running:
                other.beside.append(turn)
                turn.beside.append(other)
            self._running.add(turn)
        return turn

    def end(self, turn: _Turn, rc: int, held_long: bool = True) -> None:
        with self._cond:
            turn.rc, turn.held_long = rc, held_long
            self._running.discard(turn)
            self._cond.notify_all()

    @contextlib.contextmanager
    def alone(self):
        """Nothing else runs on the lane for the block (it waits for what runs now)."""
        with self._cond:
            self._queued += 1
            while self._solo or self._running:
                self._cond.wait()
            self._queued -= 1
            self._solo = True
        try:
            yield
        finally:
            with self._cond:
                self._solo = False
                self._cond.notify_all()


def second_look(turn: _Turn, held_up: Callable[[], bool] = lambda: True) -> bool:
    """Whether an attempt that ran beside others runs again alone (see the module's text);
    `held_up`, asked for a TIMEOUT beside a bad end only: whether that neighbour could have
    held it up (`could_be_held_up`)."""
    if not turn.beside or turn.rc in (EXIT_OK, EXIT_USAGE):
        return False
    if turn.rc == TIMEOUT_RC:         # its own time ran out (waits for the device apart) ...
        return any(                   # ... unless beside a hang, a crash or a broken device
            _bad_neighbour(o) for o in turn.beside
        ) and held_up()               # that could have held it up
    return True


def _bad_neighbour(turn: _Turn) -> bool:
    """A crash, a broken device, or a TIMEOUT that held the device long (a hang on it)."""
    if turn.rc == TIMEOUT_RC:
        return turn.held_long
    return turn.rc not in (EXIT_OK, EXIT_USAGE, EXIT_FAILED_CASES)


def _lock_figures(attempt: Attempt) -> tuple[float, float] | None:
    """(held_s, wait_s) of the attempt's run (run.json's `device_lock`), or None where it
    left none (a run killed before writing them)."""
    try:
        lock = read_info(attempt.run_dir).get("device_lock") if attempt.run_dir else None
    except UsageError:
        lock = None
    if not isinstance(lock, dict):
        return None
    try:
        return float(lock.get("held_s") or 0), float(lock.get("wait_s") or 0)
    except (TypeError, ValueError):
        return None


def _held_long(figures: tuple[float, float] | None, timeout_s: float) -> bool:
    """Held the device for a quarter of the op timeout or more, or not known (no figures, or
    no op timeout: the stall rule's)."""
    return figures is None or not timeout_s or figures[0] >= timeout_s / 4


def held_device_long(attempt: Attempt, timeout_s: float) -> bool:
    """Whether the attempt's run held the device (in any mode) for a quarter of its op
    timeout or more, or left no figures saying otherwise."""
    return _held_long(_lock_figures(attempt), timeout_s)


def could_be_held_up(attempt: Attempt, timeout_s: float, wait_cap_s: float) -> bool:
    """Whether a TIMEOUT's run did enough on the device (or waited for it enough) for a
    neighbour's hang to have cost it its time: held the device for a quarter of its op
    timeout or more, waited as long as the lane forgives, or left no lock figures (a run
    killed before writing them: not known, so yes). Its run.json's `device_lock`."""
    figures = _lock_figures(attempt)
    return _held_long(figures, timeout_s) or figures[1] >= wait_cap_s


def in_order(items: Iterable, slots: int, run_one: Callable[[object], bool],
             stop: threading.Event) -> None:
    """`run_one(item)` for each item, started in the items' order, at most `slots` at once;
    a False answer or `stop` hands out nothing more. Errors reach the caller (run_lanes)."""
    if slots <= 1:
        for item in items:
            if stop.is_set() or not run_one(item):
                return
        return
    queue, guard, halt = iter(items), threading.Lock(), threading.Event()

    def slot() -> None:
        while not (halt.is_set() or stop.is_set()):
            with guard:
                item = next(queue, None)
            if item is None:
                return
            if not run_one(item):
                halt.set()
    run_lanes([(f"{threading.current_thread().name}-slot{k}", slot, ()) for k in range(slots)],
              halt.set)


def lock_env(lane: Lane) -> Lane:
    """The lane with its processes taking the device's measurement lock: in the folder its
    environment names already (ZLH_DEVICE_LOCK_DIR), else this machine's."""
    folder = lane.env.get(LOCK_DIR_ENV) or str(default_folder())
    return Lane(python=lane.python, label=lane.label, env={**lane.env, LOCK_DIR_ENV: folder})


def note_in_log(log: Path, line: str) -> None:
    with contextlib.suppress(OSError):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def combined(first: Attempt, second: Attempt) -> Attempt:
    """The second attempt, alone, as the op's answer; its time counts both."""
    second.elapsed_s += first.elapsed_s
    second.start_s += first.start_s
    second.import_s += first.import_s
    return second


def record_overlap(root: Path, overlap: bool, width: int) -> None:
    """batch.json of a resume that switched overlap or its width: the new values for the rest
    of the root."""
    files.update_batch_json(root, overlap=overlap, overlap_width=width)
