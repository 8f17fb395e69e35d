"""A unit of the corpus engine's work and who runs it: `OpWork` (one op attempt), the runner
of one device lane (`LaneRunner`: an op, a command, a fresh worker, the end), an `Executor`
(what opens a lane's runner) and the local kind of both (`LocalLane`, `LocalExecutor`: the
lane's reused worker on this machine, or a fresh `zlh bench` per op). executor.py names the
kinds; another kind (ray_executor.py) builds on these."""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from ..common.errors import EXIT_OK, EXIT_USAGE
from ..launch import launcher
from ..run.options import BenchOptions
from ..common.lock import held_fds
from .outcome import TIMEOUT_RC, Attempt
from .standby import (DEFAULT_OVERLAP_WIDTH, Turns, WarmPool, combined, could_be_held_up,
                      held_device_long, lock_env, note_in_log, second_look)
from .supervisor import Lane, Worker, run_fresh


@dataclass
class OpWork:
    """One attempt of `zlh bench OP` with `options` (their `out` is `out`), its output in
    `log`, stopped past `timeout_s`; `argv`: the command line its run records."""
    op: str
    options: BenchOptions
    log: Path
    out: Path
    timeout_s: float
    argv: list[str] = field(default_factory=list)
    stall_s: float | None = None      # the stall rule (stall.py); None: the op timeout alone
    wait_cap_s: float = 0.0           # device waits the op timeout forgives (overlap: stall.py)


class LaneRunner(ABC):
    """The units of one device lane, run one at a time (`slots` > 1: the engine may hand it
    that many at once, from as many threads; one of them works on the device at a time)."""

    slots = 1

    def __init__(self, lane: Lane):
        self.lane = lane

    def slots_for(self, timing: bool) -> int:
        """Units the engine may hand it at once: one where they time (a unit that times runs
        alone, so more at once would only start more workers), else `slots`."""
        return 1 if timing else self.slots

    @abstractmethod
    def run_op(self, work: OpWork) -> Attempt:
        """One op attempt."""

    @abstractmethod
    def run_command(self, cmd: Sequence[str], log: Path,
                    timeout_s: float | None = None) -> Attempt:
        """One command to completion, its output in `log` (no run directory of its own)."""

    def renew(self) -> None:
        """The next op starts in a fresh process (a retry must not meet what the last
        attempt left behind)."""

    def close(self) -> None:
        """The lane is done: whatever it still runs stops."""

    def __enter__(self) -> "LaneRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Executor(ABC):
    kind: str = ""

    @abstractmethod
    def open_lane(self, lane: Lane, worker_log: Path | None = None) -> LaneRunner:
        """A runner for the units of `lane` (`worker_log`: where its long-lived processes
        write what is not an op's own output)."""


class LocalLane(LaneRunner):
    """This machine: the lane's reused worker (None: each op in a fresh `zlh bench`)."""

    def __init__(self, lane: Lane, worker: Worker | None, command_group: bool = False):
        super().__init__(lane)
        self.worker = worker
        self.command_group = command_group      # a command in a process group of its own

    def run_op(self, work: OpWork) -> Attempt:
        args = work.options.to_argv()     # a fresh `zlh bench` and a worker read the same
        if self.worker is None:
            return run_fresh(self.lane, work.op, args, work.timeout_s, work.log, work.out,
                             stall_s=work.stall_s, wait_cap_s=work.wait_cap_s)
        job = {"op": work.op, "args": args, "log": str(work.log), "argv": list(work.argv)}
        return self.worker.run(job, work.timeout_s, work.log, work.out, stall_s=work.stall_s,
                               wait_cap_s=work.wait_cap_s)

    def run_command(self, cmd: Sequence[str], log: Path,
                    timeout_s: float | None = None) -> Attempt:
        # In this command's process group (unless `command_group`: where no terminal is, in
        # a Ray actor): the terminal's Ctrl-C reaches it as it reaches this command (a card's
        # `zlh ab` then stops its own runs). The corpus roots this command holds stay held
        # while it runs.
        ended = launcher.run(cmd, self.lane.env, log, timeout_s, command_line=False,
                             pass_fds=held_fds(), own_group=self.command_group)
        return Attempt(ended.rc, ended.elapsed_s, log, None, worker_pid=ended.pid)

    def renew(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()


class OverlapLane(LocalLane):
    """This machine, with overlap (standby.py): `slots` units that time nothing at once
    (--overlap-width), each thread its own worker, a warm spare behind them, the device's lock
    around each run's device work; a unit that times runs alone; an attempt that ran beside
    another and did not end cleanly runs again alone."""

    def __init__(self, lane: Lane, worker_log: Path | None, turns: Turns | None = None,
                 slots: int = DEFAULT_OVERLAP_WIDTH):
        super().__init__(lock_env(lane), None)
        self.slots = slots
        self.pool = WarmPool(self.lane, worker_log) if worker_log is not None else None
        self.turns = turns or Turns()     # shared by the lanes of one device (a screen's sides)
        self.mine = threading.local()
        self.handed: list[Worker] = []
        if self.pool is not None:
            self.pool.prime()

    def run_op(self, work: OpWork) -> Attempt:
        # waiting for neighbours' device work is not the op's time, up to what they may take
        work = replace(work, wait_cap_s=work.timeout_s * self.slots)
        if work.options.timing:           # a run that times runs with no neighbour at all
            with self.turns.alone():
                return self._once(work)
        turn = self.turns.begin()
        rc, held_long = None, True
        try:
            attempt = self._once(work)
            rc = attempt.rc
            held_long = rc != TIMEOUT_RC or held_device_long(attempt, work.timeout_s)
        finally:
            self.turns.end(turn, rc if rc is not None else -1, held_long)
        if not turn.beside or attempt.rc in (EXIT_OK, EXIT_USAGE):
            return attempt
        with self.turns.alone():          # what ran beside it has ended: judged now
            if not second_look(turn, lambda: could_be_held_up(attempt, work.timeout_s,
                                                              work.wait_cap_s)):
                return attempt
            note_in_log(work.log, f"----- this attempt ran beside another op on this device "
                                  f"and ended with exit status {attempt.rc}; it runs again "
                                  f"alone, so that its status is its own -----")
            self.renew()
            return combined(attempt, self._once(work))

    def _once(self, work: OpWork) -> Attempt:
        if self.pool is None:
            return super().run_op(work)
        args = work.options.to_argv()
        self.pool.warm = {"op": work.op, "args": args}
        worker = getattr(self.mine, "worker", None)
        if worker is None or worker.proc is None:     # none yet, or stopped: the spare
            worker = self.mine.worker = self.pool.take()
            self.handed.append(worker)
        job = {"op": work.op, "args": args, "log": str(work.log), "argv": list(work.argv)}
        return worker.run(job, work.timeout_s, work.log, work.out, stall_s=work.stall_s,
                          wait_cap_s=work.wait_cap_s)

    def renew(self) -> None:
        worker = getattr(self.mine, "worker", None)
        if worker is not None:
            worker.stop()
            self.mine.worker = None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        for worker in self.handed:
            worker.stop()


class LocalExecutor(Executor):
    kind = "local"

    def __init__(self, fresh_process: bool = False, overlap: bool = False,
                 overlap_width: int = DEFAULT_OVERLAP_WIDTH):
        self.fresh_process, self.overlap, self.width = fresh_process, overlap, overlap_width
        self.turns: dict[str, Turns] = {}      # per device: who runs beside whom

    def open_lane(self, lane: Lane, worker_log: Path | None = None) -> LocalLane:
        reuse = not self.fresh_process and worker_log is not None
        if self.overlap:
            return OverlapLane(lane, worker_log if reuse else None,
                               self.turns.setdefault(lane.label, Turns()), self.width)
        return LocalLane(lane, Worker(lane, worker_log) if reuse else None)
