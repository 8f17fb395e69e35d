"""The stall rule: an op that finishes no case and compiles nothing for `--stall-timeout`
seconds is hung, and ends as TIMEOUT now rather than at `--op-timeout` (the hard cap, with
the device waits below).

Progress is read from the op's run directory: its `heartbeat` file (run/heartbeat.py), touched
when the run starts, when a case ends and when Triton compiles a kernel (IR capture on). The
last time its mtime was seen to change (on this machine's clock: a file server's clock may
differ), or the moment the op was handed over when there is none yet (a worker importing,
an adapter planning), is the op's last sign of life. The supervisor asks
`StallWatch.stalled` while it waits for the op (about once a second); an op it ends for
this keeps what it measured (its finished cases in results.jsonl), and its run.json says
why (`reason`, `stalled_s`).

Under overlap the op timeout counts the op's own time: the seconds its runs spent waiting for
their device's lock (a neighbour's device work; each run's `lock-wait` file) extend it, up to
`wait_cap_s` (the lane's width times the op timeout: each neighbour's run is bounded by its
own), so the hard cap stays finite whoever holds the device (`device_wait_s`).
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

from ..common.files import atomic_write_json, read_json_object
from ..common.errors import UsageError
from ..launch import launcher
from ..run.heartbeat import HEARTBEAT, LOCK_WAIT

DEFAULT_STALL_S = 300.0
POLL_S = 1.0


def stall_reason(stall_s: float) -> str:
    return f"stalled: no case finished and no compile for {stall_s:g} s"


class StallWatch:
    """Whether the op writing its run directory under `out` (not one of `before`) has shown
    no progress for `stall_s` seconds (None or 0: never)."""

    def __init__(self, out: Path, before: set[Path], stall_s: float | None,
                 clock: Callable[[], float] = time.time, wait_cap_s: float = 0.0):
        self.out, self.before, self.stall_s, self.clock = Path(out), before, stall_s, clock
        self.wait_cap_s = wait_cap_s       # the most device waiting the op timeout forgives
        self.last_change = clock()         # when the op began, then when a heartbeat moved
        self.seen: tuple = ()
        self.fired = False

    def runs(self) -> list[Path]:
        """The run directories the op started (none where `out` cannot be read)."""
        try:
            return sorted(p for p in self.out.iterdir() if p.is_dir() and p not in self.before)
        except OSError:
            return []

    def heartbeats(self) -> tuple:
        """(run, mtime) of the heartbeat of every run the op started."""
        beats = []
        for run in self.runs():
            try:
                beats.append((run.name, (run / HEARTBEAT).stat().st_mtime_ns))
            except OSError:
                continue
        return tuple(beats)

    def device_wait_s(self) -> float:
        """Seconds the op's runs have waited for their device's lock (their `lock-wait`
        files: a neighbour's device work, not the op's own time), at most `wait_cap_s`."""
        if not self.wait_cap_s:
            return 0.0
        total = 0.0
        for run in self.runs():
            try:
                total += max(0.0, float((run / LOCK_WAIT).read_text()))
            except (OSError, ValueError):
                continue
        return min(total, self.wait_cap_s)

    def stalled(self) -> bool:
        if not self.stall_s:
            return False
        now, beats = self.clock(), self.heartbeats()
        if beats != self.seen:
            self.seen, self.last_change = beats, now
        self.fired = now - self.last_change >= self.stall_s
        return self.fired

    def mark(self, run_dir: Path | None) -> None:
        """The run directory of a stalled op says why it ended (run.json `reason`,
        `stalled_s`); its status stays what the run wrote as it was stopped."""
        if run_dir is None or not self.stall_s:
            return
        path = Path(run_dir) / "run.json"
        try:
            info = read_json_object(path, f"{path}")
            info.update(reason=stall_reason(self.stall_s), stalled_s=self.stall_s)
            atomic_write_json(path, info)
        except (UsageError, OSError):
            pass                      # the outcome's reason says it all the same


def run_watched(cmd: Sequence[str], env: dict, log: Path, timeout_s: float,
                watch: StallWatch, pass_fds: Sequence[int] = ()) -> launcher.Finished:
    """launcher.run with the stall rule: `cmd` to completion, stopped (TIMEOUT_RC) past
    `timeout_s` or once `watch` says it stalled."""
    started = time.time()
    with open(log, "a", encoding="utf-8") as handle:
        launcher.write_command(handle, cmd)
        child = launcher.start(cmd, env, stdout=handle, stderr=subprocess.STDOUT,
                               pass_fds=pass_fds)
        try:
            while True:
                left = timeout_s + watch.device_wait_s() - (time.time() - started)
                try:
                    rc = launcher.own_status(child.wait(max(0.0, min(POLL_S, left))), handle)
                    break
                except subprocess.TimeoutExpired:
                    if left <= POLL_S or watch.stalled():
                        child.stop(launcher.GRACE_S)
                        rc = launcher.TIMEOUT_RC
                        break
        except BaseException:
            child.stop(launcher.INTERRUPT_GRACE_S)
            raise
        child.kill_leftovers()
    return launcher.Finished(rc, time.time() - started, child.pid)
