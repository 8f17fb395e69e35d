"""A unit of the corpus engine's work and who runs it: `OpWork` (one op attempt), the runner
of one device lane (`LaneRunner`: an op, a command, a fresh worker, the end), an `Executor`
(what opens a lane's runner) and the local kind of both (`LocalLane`, `LocalExecutor`: the
lane's reused worker on this machine, or a fresh `zlh bench` per op). executor.py names the
kinds; another kind (ray_executor.py) builds on these."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..launch import launcher
from ..run.options import BenchOptions
from ..common.lock import held_fds
from .outcome import Attempt
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


class LaneRunner(ABC):
    """The units of one device lane, run one at a time."""

    def __init__(self, lane: Lane):
        self.lane = lane

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
            return run_fresh(self.lane, work.op, args, work.timeout_s, work.log, work.out)
        job = {"op": work.op, "args": args, "log": str(work.log), "argv": list(work.argv)}
        return self.worker.run(job, work.timeout_s, work.log, work.out)

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


class LocalExecutor(Executor):
    kind = "local"

    def __init__(self, fresh_process: bool = False):
        self.fresh_process = fresh_process

    def open_lane(self, lane: Lane, worker_log: Path | None = None) -> LocalLane:
        reuse = not self.fresh_process and worker_log is not None
        return LocalLane(lane, Worker(lane, worker_log) if reuse else None)
