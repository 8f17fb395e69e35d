"""Rounds of an A/B in one persistent worker per side (`zlh ab --round-process persistent`,
and `turns`: both sides of a round at once, their samples in turns on the device), or with a
new worker for every run, launched ahead: in turns (`turns-fresh`), or a round's two sides one
after the other, twins that hold the same spacer (`twins`).

Each side gets one reused worker (`harness.corpus.worker`, started and supervised by
`supervisor.Worker` through the launcher) with that side's interpreter and environment, and
runs every round of every op in it: a round is one `zlh bench` job, written where a fresh run
would be (ROOT/<op>/r<k>_<side>/, its output in bench.log, its row in status.tsv), so the report,
the caliber guard and `zlh ab --rescore` read it alike. What a new process would change is
re-randomised per round instead:

* a settle gap (`SETTLE_S`; `--settle-ms`) before each round, the device idle as between two
  process starts (turns-fresh: none by default);
* the device allocator's cache emptied, then a random-size allocation (from the round's seed)
  held while the round builds its inputs and measures: its tensors land at new addresses;
* a new graph capture and new inputs (every job is a whole `zlh bench` run), compiled into a
  private cache; between rounds the worker's own reset empties the kernel and tuner caches.

A worker that dies, hangs or is poisoned is replaced by the supervisor (`starts` counts the
processes started per side). The round's seed is a digest of op and round, the same for both
sides: a round is a block — its two runs hold the same spacer, so their buffers take the same
addresses (not necessarily the same physical memory), and each round draws another, so the
rounds stay independent and the interval still covers where buffers lie.
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from ..ab.rounds import PERSISTENT, TURNS, TURNS_FRESH, TWINS, round_seed
from ..ab.runs import (NO_RESULT_RC, RunOutcome, append_status, ended_by, outcome_of,
                       recorded_rc)
from ..ab.sides import ABPlan, Side, env_for
from ..launch import launcher
from ..measure.device_lock import LOCK_DIR_ENV
from ..run import placement
from ..store.rundir import safe_name
from .standby import WarmPool, note_in_log
from .supervisor import Lane, Worker

SETTLE_S = 1.0                # the idle gap before each round
SHIFT_MAX_BYTES = placement.SHIFT_MAX_BYTES   # the random allocation before a round's inputs
FRESH_SPARES = 3              # turns-fresh: warm spares per side at first (then as measured)
MAX_FRESH_SPARES = 8          # … and at most
RUN_LINE = "zlh {} run:"      # the side's worker log: where each run's wall went (runner's name)


class PersistentRounds:
    """A `rounds.RoundRunner`: one worker per side, kept for the whole A/B."""

    name = PERSISTENT
    run_per_worker = False        # True: a new worker for every run (turns-fresh, twins)
    record_alone = False          # True: the record made alone first, as round 0
    default_settle_s = SETTLE_S

    def __init__(self, settle_s: float | None = None, shift_max_bytes: int = SHIFT_MAX_BYTES,
                 sleep=time.sleep):
        self.settle_s = self.default_settle_s if settle_s is None else settle_s
        self.shift_max_bytes, self.sleep = shift_max_bytes, sleep
        self.workers: dict[str, Worker] = {}
        self.starts: dict[str, int] = {}
        self.stopped = threading.Event()     # Ctrl-C or SIGTERM of the A/B: start no run

    def _lane(self, plan: ABPlan, side: Side) -> Lane:
        """Where the side's workers run: its interpreter and environment."""
        return Lane(python=side.python, env=env_for(side, plan.options.backend),
                    label=f"side{side.label}")

    def _worker(self, plan: ABPlan, side: Side, job: dict | None = None) -> Worker:
        """The side's worker for a job (`job`: its op and arguments)."""
        worker = self.workers.get(side.label)
        if worker is None:
            worker = Worker(self._lane(plan, side), Path(plan.root) / f"worker_{side.label}.log")
            self.workers[side.label] = worker
        if not worker.alive:
            self.starts[side.label] = self.starts.get(side.label, 0) + 1
        return worker

    def run(self, plan: ABPlan, op: str, number: int, side: Side,
            replay_from: Path | None) -> RunOutcome:
        self.sleep(self.settle_s)
        return self._run_job(plan, op, number, side, replay_from)

    def _run_job(self, plan: ABPlan, op: str, number: int, side: Side,
                 replay_from: Path | None, turns: dict | None = None) -> RunOutcome:
        """One side's round in its worker; `turns`: the job's turns with the other side."""
        if self.stopped.is_set():            # a side thread after the A/B was stopped
            raise RoundsStopped(f"{op} round {number} side {side.label}: the A/B was stopped")
        out = Path(plan.root) / safe_name(op) / f"r{number}_{side.label}"
        out.mkdir(parents=True, exist_ok=True)
        options = plan.round_options(op, number, out, replay_from, side)
        args = options.to_argv()
        log = out / "bench.log"
        with open(log, "w", encoding="utf-8") as handle:
            launcher.write_command(handle, [side.python, "-m", "harness", "bench", op, *args])
        worker = self._worker(plan, side, {"op": op, "args": args})
        job = {"op": op, "args": args, "log": str(log), "argv": ["zlh", "bench", op, *args],
               "round": {"seed": round_seed(op, number),
                         "shift_max_bytes": self.shift_max_bytes}}
        if turns:
            job["turns"] = turns
        if self.run_per_worker:
            job["last"] = True                # stopped after it: no reset for a next op
        started = time.time()
        try:
            attempt = worker.run(job, plan.timeout_s, log, out)
        except BaseException as exc:  # Ctrl-C or SIGTERM of zlh ab: the round stops too
            worker.stop()             # (its run directory is finalised on SIGTERM)
            with contextlib.suppress(Exception):          # status.tsv still gets its row
                append_status(plan.root, op, outcome_of(
                    out, number, side.label, ended_by(exc, self.stopped.is_set()), started))
            raise
        plan.ran(op, side, out)
        # The A/B's stop may have ended the other side's worker too: a stop, not a failure.
        # No result of its own: why, in the run's log (where a failed run's report looks).
        rc = recorded_rc(attempt.rc, self.stopped.is_set())
        if rc == NO_RESULT_RC and attempt.rc != rc:
            note_in_log(log, f"zlh: the run's process gave no result: "
                             f"{attempt.message or 'no reason given'}")
        outcome = RunOutcome(number, side.label, rc, round(attempt.elapsed_s, 3),
                             attempt.run_dir, log)
        append_status(plan.root, op, outcome)
        return outcome

    def close(self) -> None:
        for worker in list(self.workers.values()):   # side threads change it meanwhile
            worker.stop()


class TurnsRounds(PersistentRounds):
    """`--round-process turns`: persistent workers as above; the record (round 0's A) is made
    alone, then each round's two sides run at once, their samples taken in turns on the device
    (measure/baton.py), the side `side_order` puts first opening every block."""

    name = TURNS
    record_alone = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # one thread per side for the whole A/B: a worker dies with the thread that started
        # it (common/process.die_with_parent), so the thread must outlive its rounds
        self.threads: dict[str, ThreadPoolExecutor] = {}

    def _lane(self, plan: ABPlan, side: Side) -> Lane:
        lane = super()._lane(plan, side)
        lane.env.pop(LOCK_DIR_ENV, None)    # both sides time at once: a lock would keep one
        return lane                         # waiting

    def _thread(self, side: Side) -> ThreadPoolExecutor:
        if side.label not in self.threads:
            self.threads[side.label] = ThreadPoolExecutor(1, f"side{side.label}")
        return self.threads[side.label]

    def run_together(self, plan: ABPlan, op: str, number: int, sides: tuple[Side, Side],
                     replay_from: Path | None) -> list[RunOutcome]:
        """Both sides' runs of round `number` at once (`sides`: the first one first); their
        outcomes in that order. Ctrl-C or SIGTERM stops both."""
        token = uuid.uuid4().hex[:16]
        self.sleep(self.settle_s)
        futures = []
        for side, peer in (sides, sides[::-1]):
            spec = {"token": token, "side": side.label, "peer": peer.label,
                    "first": side is sides[0]}
            futures.append(self._thread(side).submit(self._run_job, plan, op, number, side,
                                                     replay_from, spec))
        try:
            wait(futures)
        except BaseException:
            self.stopped.set()                # a side that has not begun begins nothing
            for future in futures:
                future.cancel()
            for worker in list(self.workers.values()):   # (a side thread changes it)
                worker.stop()
            raise
        return [future.result() for future in futures]

    def close(self) -> None:
        super().close()
        for thread in list(self.threads.values()):
            thread.shutdown(wait=False)


class FreshAhead:
    """Every run (the record, each side of each round) in a new worker process, stopped after
    its run. Each side keeps warm spares (standby.WarmPool): launched while the runs before
    them measure, they import the op's library and plan its run then (`activate_ahead`: and
    make their device context), so a round waits for no start (a start, about 10 s with
    FlagGems on an H200, is longer than a round's run). They are FRESH_SPARES at first, then
    as many as the starts and rounds need (SpareSizer), at most host_spare_cap(); `spares`
    fixes the number. Mixed ahead of PersistentRounds or TurnsRounds."""

    run_per_worker = True
    record_alone = True           # the record made alone (round 0): every round compared
    activate_ahead = True         # a spare makes its device context while it waits
    spare_interval = staticmethod(statistics.median)   # SpareSizer: the asks a spare covers

    def __init__(self, *args, spares: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.sizer = None if spares is not None else SpareSizer(FRESH_SPARES,
                                                                interval=self.spare_interval)
        self.spares = spares if spares is not None else self.sizer.depth
        self.pools: dict[str, WarmPool] = {}

    def _pool(self, plan: ABPlan, side: Side) -> WarmPool:
        if side.label not in self.pools:
            self.pools[side.label] = WarmPool(self._lane(plan, side),
                                              Path(plan.root) / f"worker_{side.label}.log",
                                              depth=self.spares)
        return self.pools[side.label]

    def run(self, plan: ABPlan, op: str, number: int, side: Side,
            replay_from: Path | None) -> RunOutcome:
        """A run alone (the record; twins: every run): the other side's spare starts
        meanwhile, warmed as this run is (twins: a replay of the record)."""
        other = plan.b if side is plan.a else plan.a
        self._expect(plan, other, {"op": op, "args": plan.run_options(
            Path(plan.root), replay_from, other).to_argv()}).prime()
        return super().run(plan, op, number, side, replay_from)

    def _expect(self, plan: ABPlan, side: Side, job: dict) -> WarmPool:
        """The side's pool, its next spares to import what `job` needs (and make their
        device context, `activate_ahead`) ahead."""
        pool = self._pool(plan, side)
        pool.warm = {**job, "activate": self.activate_ahead}
        return pool

    def _worker(self, plan: ABPlan, side: Side, job: dict | None = None) -> Worker:
        pool = self._expect(plan, side, job or {})
        worker = self.workers[side.label] = pool.take()
        self.starts[side.label] = pool.starts
        return worker

    def _run_job(self, plan: ABPlan, op: str, number: int, side: Side,
                 replay_from: Path | None, turns: dict | None = None) -> RunOutcome:
        asked, outcome = time.time(), None
        try:
            outcome = super()._run_job(plan, op, number, side, replay_from, turns)
            return outcome
        finally:
            worker = self.workers.pop(side.label, None)
            if worker is not None:
                ended = time.time()
                worker.stop()                 # one run per process
                stopped = time.time()
                pool = self._pool(plan, side)
                if self.sizer is not None:    # both sides' pools alike
                    depth = self.sizer.ran(op, side.label, number, asked,
                                           worker.ready_at - worker.launched_at
                                           if worker.ready_at else 0.0,
                                           outcome is not None and outcome.rc == 0)
                    for each in list(self.pools.values()):
                        each.depth = depth
                note_in_log(pool.log, run_line(op, number, side.label, asked, worker.ready_at,
                                               ended, stopped, self.name)
                            + f", spares {pool.depth}")

    def close(self) -> None:
        for pool in list(self.pools.values()):
            pool.close()
        super().close()


class TurnsFreshRounds(FreshAhead, TurnsRounds):
    """`--round-process turns-fresh`: rounds in turns as above, every run in a new process
    launched ahead (FreshAhead). What a process keeps — where its kernels and buffers were
    loaded, side A's record sweep — is drawn anew every round, as in fresh rounds, and the
    rounds' interval covers it."""

    name = TURNS_FRESH
    # no gap: every run is a new process and both sides' samples alternate, so a drift of
    # the card falls on both; on an H200 the gap did not narrow the rounds (tests/device)
    default_settle_s = 0.0


class TwinsRounds(FreshAhead, PersistentRounds):
    """`--round-process twins`: every run in a new process launched ahead (FreshAhead), the
    record made alone (round 0), then each round's two sides one after the other in ABBA
    order, the device to each alone (its lock kept). A round's two runs are twins: each
    process makes no device context of its own ahead (`activate_ahead`; a library whose
    import starts the device, as FlagGems' does, still makes one), holds the round's spacer
    (one size for both) and allocates as the other does, so that — where nothing else
    allocates device memory between them — the two land their data alike, and where the
    data lies cancels in the round's delta; each round draws another size, so the rounds
    still cover it. A side that allocates otherwise lands elsewhere each round: that spreads
    its rounds (a wider interval) rather than biasing them, as far as the spacer's sizes span
    what a placement's latency varies over; later placements' spacers are the round's draw
    too (ABPlan.round_options)."""

    name = TWINS
    activate_ahead = False
    default_settle_s = 0.0
    # ABBA one side after the other asks a side twice in a row at every other round's turn
    # (…A B | B A…): its spares must cover the shortest time between two asks, not the usual
    spare_interval = staticmethod(min)


class RoundsStopped(Exception):
    """A side's run asked for after the A/B was stopped (its own thread's late start)."""


def run_line(op: str, number: int, label: str, asked: float, ready_at: float | None,
             ended: float, stopped: float, runner: str = TURNS_FRESH) -> str:
    """The worker log's line for one run of a new process (`runner`: turns-fresh or twins,
    its tag `zlh <runner> run:`): when it was asked for, how long it waited for its spare to
    be ready (`ready_at` 0 or None: it never was), when the run ended and how long its process
    took to stop (a round's wall beyond its runs: tests/device/rounds_spread.py reads these)."""
    ready = (f"spare ready {max(0.0, ready_at - asked):.2f} s later" if ready_at
             else "no spare became ready")
    return (f"{RUN_LINE.format(runner)} {op} round {number} side {label}: asked {asked:.3f}, "
            f"{ready}, run ended {ended:.3f}, stopped in {stopped - ended:.2f} s")


class SpareSizer:
    """How many warm spares each side of a turns-fresh or twins A/B keeps (spares_needed),
    from the op's last five successful runs of round 2 on: each one's process start (their
    median), and the time from its side's previous ask to its own (a round, whatever made it
    long: the other side, a settle gap; `interval` picks the one to cover: the median, or for
    twins the shortest). It grows by one spare a run, shrinks at once. One history for both
    sides; a new op starts a new one (its rounds are another length) and keeps the depth
    reached."""

    WINDOW = 5

    def __init__(self, first: int, cap: int | None = None, interval=statistics.median):
        self.cap = host_spare_cap() if cap is None else cap
        self.interval = interval          # of the rounds seen, the one a spare must cover
        self.depth = max(1, min(first, self.cap))
        self.op: str | None = None
        self.seen: list[tuple[float, float]] = []       # (start s, round s)
        self.asked: dict[str, float] = {}               # side: its last ask
        self._guard = threading.Lock()                  # both sides' threads report here

    def ran(self, op: str, label: str, number: int, asked: float, start_s: float,
            ok: bool) -> int:
        """A run of round `number` asked for at `asked` whose process took `start_s` to
        start (0: not known) and ended well (`ok`); the depth both sides keep now."""
        with self._guard:
            if op != self.op:
                self.op, self.seen, self.asked = op, [], {}
            before, self.asked[label] = self.asked.get(label), asked
            if ok and number >= 2 and before is not None and start_s > 0:
                self.seen = [*self.seen[1 - self.WINDOW:], (start_s, asked - before)]
                need = spares_needed(statistics.median(s for s, _ in self.seen),
                                     self.interval([r for _, r in self.seen]), self.cap)
                # one more at a time: spares launched together slow each other's starts,
                # which would ask for more still
                self.depth = min(need, self.depth + 1)
            return self.depth


def spares_needed(start_s: float, round_s: float, cap: int) -> int:
    """Warm spares a side keeps so that each run's process is ready when its round comes: a
    spare is launched when one is taken, so it has as many rounds to start as there are
    spares; a start of `start_s` against rounds of `round_s` needs ceil(start_s / round_s),
    and one more for the variation. At least 1, at most `cap`."""
    if round_s <= 0:
        return cap
    return max(1, min(cap, math.ceil(start_s / round_s) + 1))


def host_spare_cap(cpus: int | None = None) -> int:
    """The most spares per side this host starts beside the two sides' runs: each start is an
    interpreter importing on a CPU of its own, so half the CPUs the runs leave (16 CPUs: 7),
    at least 1, at most MAX_FRESH_SPARES."""
    cpus = cpus or usable_cpus()
    return max(1, min(MAX_FRESH_SPARES, (cpus - 2) // 2))


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the system says), else the
    host's count."""
    try:
        return len(os.sched_getaffinity(0)) or 2
    except (AttributeError, OSError):       # not on Linux
        return os.cpu_count() or 2
