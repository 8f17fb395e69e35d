"""`zlh batch`: many ops, each in its own run directory, isolated, resumable, over devices.

One lane per device runs its ops one after another (never two measurements on one device
at once); lanes run side by side. An op runs in the lane's reused worker (or, with
`--fresh-process`, in its own `zlh bench` process); a failed or crashed op is retried in a
fresh worker at most `retries` times, two identical outcomes in a row stopping the retries; a
timeout is not retried. An op the requested dtypes leave nothing to run, or that FAILed
with no successful case at them, runs once more with its own (`dtype_fallback`,
`dtype_rescue`); one that kills its process under graph timing, once more with event
timing. Each finished op writes `.complete`; `--resume` runs the others, and `--retry
STATUSES` the finished ops with those statuses too (in their folders: attempts count on).
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import (EXIT_FAILED_CASES, EXIT_OK, EXIT_USAGE, PreflightError,
                             RunFailedError, write_failure)
from ..common.log import Echo
from ..run.plan import options_backend
from ..store.reader import load_run_or_none
from . import files
from .outcome import (CRASH, FAIL, POISONED, SKIP, TIMEOUT, Outcome, Settled, dtype_problem,
                      dtype_rescue, judge, left_running)
from .progress import bar, final_summary
from .check import graph_timed
from .selection import Item
from .sharding import device_for
from .executor import Executor, LaneRunner, OpWork, make_executor
from .lanes import lane_for, watch_devices
from .batch_plan import BatchPlan
from .standby import in_order
from .supervisor import Lane
from .threads import run_lanes


@dataclass
@dataclass
class BatchResult:
    outcomes: dict[str, Outcome]
    exit_code: int
    wall_s: float


class Batch:
    """The state of one batch: finished outcomes, the tables, progress."""

    def __init__(self, plan: BatchPlan, echo: Echo, progress: Echo | None, resume: bool,
                 warn: Echo | None = None, executor: Executor | None = None,
                 retry: tuple[str, ...] = ()):
        self.plan, self.echo, self.progress, self.resume = plan, echo, progress, resume
        self.retry = frozenset(retry) if resume else frozenset()
        self.executor = executor or make_executor(plan.executor, **plan.executor_options())
        self.warn = warn or _stderr
        self.lock = threading.Lock()
        self.outcomes: dict[str, Outcome] = {}
        self.devices: dict[str, int] = {}
        self.summary_lines: dict[str, str] = {}     # each op's summary.csv lines
        self.timers: dict[str, str] = {}          # op -> the timer its run actually used
        self._resumed: set[str] = set()            # (carry_over fills these on a resume)
        self._retried: dict[str, str] = {}
        self.stop = threading.Event()
        self.preflight: str | None = None
        self.started = time.time()
        self.done = 0
        self.resume_command = f"zlh batch --resume {plan.root}"
        backend = options_backend(plan.options)
        self.backend_name = backend.name
        # (a batch that times nothing has no timer to fall back from: a CRASH stays one)
        self.graph_timed = plan.options.timing and graph_timed(plan.options.timer, backend)

    # ---- lanes --------------------------------------------------------------------------
    def run(self) -> BatchResult:
        try:
            with watch_devices(self.plan.root, self.plan):
                return self._run()
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            raise self.cannot_write(exc.filename or self.plan.root, write_failure(exc)) \
                from None

    def cannot_write(self, where, reason: str) -> RunFailedError:
        """A write that failed (disk full, read-only file system) ends the command: the op it
        cut short is not recorded as finished, so a resume runs it again."""
        return RunFailedError(f"{where}: {reason}; finished ops are kept under "
                              f"{self.plan.root}: free space (or make it writable), then "
                              f"{self.resume_command}", reason)

    def _run(self) -> BatchResult:
        todo = self.carry_over()
        lanes = {d: [i for i in todo if device_for(i.op, self.plan.devices) == d]
                 for d in self.plan.devices}
        run_lanes([(f"lane-{d}", self._lane, (d, items)) for d, items in lanes.items()
                   if items], self.stop.set)
        if self.preflight:
            raise PreflightError("batch", self.preflight)
        return self._finish()

    def _lane(self, device: int, items: list[Item]) -> None:
        lane = lane_for(self.plan, device)
        with self.open_lane(lane, device) as runner:
            def one(item: Item) -> bool:
                outcome = self.run_item(item, lane, runner)
                if outcome is not None:
                    self.record(item.op, outcome, device)
                return outcome is not None
            # with overlap: several at once where they time nothing
            in_order(items, runner.slots_for(self.plan.options.timing), one, self.stop)

    def open_lane(self, lane: Lane, device: int) -> LaneRunner:
        """What runs this batch's ops on `device` (its reused worker logs to
        .workers/dev<device>.log)."""
        return self.executor.open_lane(lane, self.plan.root / ".workers" / f"dev{device}.log")

    def run_item(self, item: Item, lane: Lane, runner: LaneRunner, replay: Path | None = None,
                 compile_cache: str | None = None,
                 settled: Settled | None = None) -> Outcome | None:
        """One op with its retries, dtype fallback and timer fallback; None when a
        machine-wide preflight failure stops the batch. `compile_cache`: a kept Triton cache
        every attempt loads from (a screen's timed run, on its side's untimed one).
        `settled`: where an earlier step of the op ended up (outcome.Settled): the op's own
        dtypes and event timing from the first attempt (event timing only where this batch
        would fall back to it: `--timer auto` on a device that captures graphs)."""
        dtypes = item.dtypes if item.dtypes else self.plan.options.dtypes
        settled = Settled(settled.own_dtypes, settled.timer if self.graph_timed else None) \
            if settled is not None else Settled()
        if replay is None and self.plan.replay_root is not None:
            replay = files.replay_source(self.plan.replay_root, item.op, self.backend_name)
            if isinstance(replay, str):          # nothing recorded: not measured unpinned
                return Outcome(SKIP, 0, 0.0, reason=replay, notes=["no_record"])
        if settled.own_dtypes:
            dtypes = None
        outcome = self._attempts(item.op, dtypes, lane, runner,
                                 files.next_attempt(self.plan.root, item.op), replay,
                                 timer=settled.timer, compile_cache=compile_cache)
        if settled.note():
            outcome.notes.append(settled.note())
        again = dtypes and ("dtype_fallback" if dtype_problem(outcome) else
                            "dtype_rescue" if dtype_rescue(outcome) else None)
        if again:                    # the op's own dtypes, after the asked ones failed it
            dtypes = None
            outcome = self._attempts(item.op, None, lane, runner, outcome.attempt + 1, replay,
                                     compile_cache=compile_cache)
            outcome.notes.append(again)
        if outcome.status == CRASH and self.graph_timed and settled.timer is None:
            crashed = outcome
            outcome = self._attempts(item.op, dtypes, lane, runner, crashed.attempt + 1,
                                     replay, timer="event", compile_cache=compile_cache)
            outcome.notes += [n for n in crashed.notes
                              if not n.startswith("retry_rc=") and n not in outcome.notes]
            outcome.notes += ["timer_fallback=event",
                              "graph_rc=" + "->".join(str(rc) for rc in crashed.rcs)]
        if outcome.preflight_check:
            self.preflight = outcome.reason
            self.stop.set()
            return None
        outcome.notes += (["resumed"] if item.op in self._resumed else []) + \
            ([f"retried={self._retried[item.op]}"] if item.op in self._retried else [])
        return outcome

    def _attempts(self, op: str, dtypes, lane: Lane, runner: LaneRunner, first: int,
                  replay: Path | None, timer: str | None = None,
                  compile_cache: str | None = None) -> Outcome:
        """Retries of FAIL and CRASH in a fresh worker; two identical outcomes stop them."""
        outcomes: list[Outcome] = []
        for k in range(first, first + 1 + self.plan.retries):
            if outcomes:
                runner.renew()                     # a retry runs in a fresh worker
            attempt = self._attempt(op, dtypes, lane, runner, k, replay, timer, compile_cache)
            if attempt.write_failure:
                self.stop.set()
                raise self.cannot_write(f"op {op}", attempt.write_failure)
            outcome = judge(attempt, self.plan.op_timeout_s)
            outcome.attempt = k
            outcomes.append(outcome)
            if outcome.status not in (FAIL, CRASH) or outcome.preflight_check or \
                    (dtypes and dtype_problem(outcome)):   # the dtype fallback comes next
                break
            if outcome.rc == EXIT_USAGE and not left_running(load_run_or_none(outcome.run_dir)):
                break       # bad input: the same again, never a retry (an op's own exit 2,
                            # its run left running, is a CRASH, retried)
            if len(outcomes) > 1 and outcome.same_as(outcomes[-2]):
                break
        final = outcomes[-1]
        final.rcs = [o.rc for o in outcomes]
        if len(outcomes) > 1:
            final.notes.append("retry_rc=" + "->".join(str(rc) for rc in final.rcs))
        return final

    def _attempt(self, op: str, dtypes, lane: Lane, runner: LaneRunner, k: int,
                 replay: Path | None = None, timer: str | None = None,
                 compile_cache: str | None = None):
        out = files.op_dir(self.plan.root, op)
        out.mkdir(parents=True, exist_ok=True)
        log = out / f"run.attempt{k}.log"
        # The batch samples its devices itself (telemetry.tsv at its root): not each op.
        options = self.plan.options.replace(dtypes=dtypes, out=str(out),
                                            replay=str(replay) if replay else None,
                                            compile_cache=compile_cache,
                                            telemetry_interval=0.0,
                                            timer=timer or self.plan.options.timer)
        return runner.run_op(OpWork(op, options, log, out, self.plan.op_timeout_s,
                                    [*self.plan.argv, f"[{op}]"],
                                    stall_s=self.plan.stall_timeout_s or None))

    # ---- bookkeeping --------------------------------------------------------------------
    def carry_over(self) -> list[Item]:
        """On resume: finished ops are kept (but those whose status `retry` names run again,
        in the same folder), unfinished ones set aside and run again."""
        self._resumed: set[str] = set()
        self._retried: dict[str, str] = {}
        todo = []
        for item in self.plan.items:
            done = files.read_complete(self.plan.root, item.op) if self.resume else None
            problem = done and files.run_problem(item.op, done[0])
            if problem:
                self.warn(f"WARNING: {files.op_dir(self.plan.root, item.op) / files.COMPLETE} "
                          f"names run {files.relative_run_dir(self.plan.root, done[0].run_dir)},"
                          f" which {problem}; {item.op} runs again (its folder is kept under "
                          f"{self.plan.root / '.abandoned'})")
                done = None
            if done is not None and self.plan.replay_root is not None and \
                    "no_record" in done[0].notes:
                done = None                # the recorded batch may have finished it since
            if done is not None and done[0].status in self.retry:
                self._retried[item.op] = done[0].status
                todo.append(item)          # its folder stays: the attempts count on
                continue
            if done is not None:
                outcome, device = done
                self.outcomes[item.op], self.devices[item.op] = outcome, device
                self._note_rows(item.op, outcome, device)
                continue
            if self.resume and files.set_aside(self.plan.root, item.op) is not None:
                self._resumed.add(item.op)
            todo.append(item)
        if self.outcomes:
            self._write_tables()
        return todo

    def forget(self, op: str) -> None:
        """A carried-over op runs again after all (a screen's B, whose A is retried)."""
        done = self.outcomes.pop(op, None)
        if done is not None:
            files.drop_complete(self.plan.root, op)
            self._retried.setdefault(op, done.status)
            for table in (self.summary_lines, self.timers, self.devices):
                table.pop(op, None)

    def record(self, op: str, outcome: Outcome, device: int) -> None:
        files.write_complete(self.plan.root, op, outcome, device)
        with self.lock:
            self._note_caliber(outcome)
            self.outcomes[op], self.devices[op] = outcome, device
            self._note_rows(op, outcome, device)
            self.done += 1
            self._write_tables()
            self._progress_line(op, outcome, device)

    def _note_caliber(self, outcome: Outcome) -> None:
        """batch.json gets the caliber of the first run that has one (the options decide
        it; the timer actually used may differ per op and stays in each run.json)."""
        if getattr(self, "_caliber_noted", False) or outcome.run_dir is None:
            return
        run = load_run_or_none(outcome.run_dir)
        caliber = run.info.get("caliber") if run is not None else None
        if caliber:
            files.update_batch_json(self.plan.root, caliber=caliber)
            self._caliber_noted = True

    def _note_rows(self, op: str, outcome: Outcome, device: int) -> None:
        self.timers[op], rows = files.op_summary_rows(op, outcome, self.backend_name, device)
        self.summary_lines[op] = files.summary_lines(rows)

    def _write_tables(self) -> None:
        rows = [files.status_row(self.plan.root, item.op, self.outcomes[item.op],
                                 self.plan.inventory.get(item.op, {}), self.backend_name,
                                 self.devices[item.op], self.timers.get(item.op, "-"))
                for item in self.plan.items if item.op in self.outcomes]
        files.write_tables(self.plan.root, rows, "".join(self.summary_lines.values()))

    def _progress_line(self, op: str, outcome: Outcome, device: int) -> None:
        total = len(self.plan.items)
        finished = len(self.outcomes)
        self.echo(f"[{finished:>{len(str(total))}}/{total}] {outcome.status:<8} "
                  f"{outcome.elapsed_s:6.1f}s rows={outcome.rows_success}/{outcome.rows_total} "
                  f"{op} [{self.plan.options.backend or 'dev'}:{device}]"
                  + (f" {' '.join(outcome.notes)}" if outcome.notes else ""))
        if self.progress is not None:
            elapsed = time.time() - self.started
            eta = elapsed / max(self.done, 1) * (total - finished)
            self.progress(bar(finished, total, elapsed, eta))

    def _finish(self) -> BatchResult:
        wall = time.time() - self.started
        for line in final_summary(self.outcomes, self.plan.left_out, wall):
            self.echo(line)
        bad = {FAIL, TIMEOUT, CRASH, POISONED}
        code = EXIT_FAILED_CASES if any(o.status in bad for o in self.outcomes.values()) \
            else EXIT_OK
        return BatchResult(dict(self.outcomes), code, wall)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_batch(plan: BatchPlan, echo: Echo = print, progress: Echo | None = None,
              resume: bool = False, warn: Echo | None = None,
              retry: tuple[str, ...] = ()) -> BatchResult:
    plan.root.mkdir(parents=True, exist_ok=True)
    if not resume:
        files.write_batch_json(plan.root, plan.to_dict())
    return Batch(plan, echo, progress, resume, warn, retry=retry).run()
