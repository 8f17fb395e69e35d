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
from dataclasses import dataclass, field
from pathlib import Path

from ..common import spelling
from ..common.fields import Fields
from ..common.errors import (EXIT_FAILED_CASES, EXIT_OK, PreflightError, RunFailedError,
                             UsageError, write_failure)
from ..common.log import Echo
from ..run.options import BenchOptions
from ..run.plan import options_backend
from ..store.reader import load_run_or_none
from . import files
from .outcome import (CRASH, FAIL, POISONED, SKIP, TIMEOUT, Outcome, dtype_problem,
                      dtype_rescue, judge)
from .progress import bar, final_summary
from .check import MAX_RETRIES, graph_timed
from .selection import Item
from .sharding import device_for
from .executor import Executor, LaneRunner, OpWork, executor_fields, make_executor
from .lanes import lane_for, watch_devices
from .supervisor import Lane
from .threads import run_lanes


@dataclass
class BatchPlan:
    root: Path
    items: list[Item]
    devices: list[int]
    options: BenchOptions                  # every op's bench options (out set per op)
    op_timeout_s: float = 1800.0
    fresh_process: bool = False
    retries: int = 2
    python: str = sys.executable
    argv: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    inventory: dict = field(default_factory=dict)      # op -> {"repo", "file"}
    replay_root: Path | None = None     # a recorded batch: each op replays its record there
    # The environment switches the batch started under (environment_switches); None: an
    # older root that recorded none (its resume is not checked).
    env: dict | None = None
    env_change: dict | None = None      # a resume allowed under other switches (not stored)
    executor: str = "local"             # who runs the ops (executor.py): local, ray
    ray_address: str | None = None      # --ray-address of the ray executor (None: auto)

    def executor_options(self) -> dict:
        """The options of make_executor for this plan's executor."""
        ray = {"address": self.ray_address, "backend": self.options.backend}
        return {"fresh_process": self.fresh_process, **(ray if self.executor == "ray" else {})}

    def to_dict(self) -> dict:
        return {"ops": [{"op": i.op, "dtypes": list(i.dtypes) if i.dtypes else None,
                         "device": device_for(i.op, self.devices)} for i in self.items],
                "devices": self.devices, "options": self.options.to_dict(),
                "op_timeout_s": self.op_timeout_s, "fresh_process": self.fresh_process,
                "retries": self.retries, "python": self.python, "command": self.argv,
                "left_out": [{"op": o, "why": w} for o, w in self.left_out],
                "inventory": self.inventory,
                "replay_root": str(self.replay_root) if self.replay_root else None,
                "env": self.env, "executor": self.executor, "ray_address": self.ray_address}

    @classmethod
    def from_dict(cls, root: Path, doc: dict, where: str | None = None) -> "BatchPlan":
        """The plan batch.json holds; a field of the wrong type (an edited or damaged file)
        is one UsageError line naming the field and what it should hold."""
        f = Fields(doc, where or f"{root}/{files.BATCH_JSON}")
        f.objects("ops")
        items = [_item(f.at("ops", n)) for n in range(len(doc["ops"]))]
        left_out = f.objects("left_out", [])
        lf = [Fields(d, f"{f.where}: left_out[{n}]") for n, d in enumerate(left_out)]
        inventory, replay = f.object("inventory", {}), doc.get("replay_root")
        if not all(isinstance(v, dict) for v in inventory.values()):
            raise f.error("inventory", "an object of op: {repo, file}", inventory)
        retries = f.int("retries", low=0)
        if retries > MAX_RETRIES:
            raise f.error("retries", f"an integer from 0 to {MAX_RETRIES}", retries)
        env = doc.get("env")
        if env is not None and not (isinstance(env, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise f.error("env", "null or an object of NAME: value strings", env)
        kind, address = executor_fields(f)
        return cls(root=Path(root), items=items, devices=device_list(f, "devices"),
                   options=options_field(f, "options"),
                   op_timeout_s=f.number("op_timeout_s", low=1),
                   fresh_process=f.bool("fresh_process"), retries=retries,
                   python=f.str("python", "") or sys.executable, argv=f.strs("command"),
                   left_out=[(d.str("op"), d.str("why")) for d in lf], inventory=inventory,
                   replay_root=Path(f.str("replay_root", empty=False)) if replay is not None
                   else None, env=env, executor=kind, ray_address=address)



def device_list(f: Fields, name: str) -> list[int]:
    """A stored list of devices: non-empty, distinct, non-negative indices."""
    devices = f.get(name)
    if not isinstance(devices, list) or not devices or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in devices) \
            or len(set(devices)) != len(devices):
        raise f.error(name, "a non-empty list of distinct device indices", devices)
    return list(devices)


def options_field(f: Fields, name: str) -> BenchOptions:
    """Stored bench options (without `out`); a bad one names the file and the field."""
    stored = f.object(name)
    try:
        with spelling.as_keywords():         # the file's keys are the keywords
            return BenchOptions.from_flat(**{k: v for k, v in stored.items() if k != "out"})
    except UsageError as exc:
        raise UsageError(f"{f.where}: field {name}: {exc.message}") from None


def _item(f: Fields) -> Item:
    dtypes = f.get("dtypes", None)
    if dtypes is not None and not (isinstance(dtypes, list) and dtypes and
                                   all(isinstance(d, str) and d for d in dtypes)):
        raise f.error("dtypes", "null or a non-empty list of dtype names", dtypes)
    return Item(f.str("op", empty=False), tuple(dtypes) if dtypes else None)


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
        self.summary_rows: dict[str, list[dict]] = {}
        self.timers: dict[str, str] = {}          # op -> the timer its run actually used
        self.stop = threading.Event()
        self.preflight: str | None = None
        self.started = time.time()
        self.done = 0
        self.resume_command = f"zlh batch --resume {plan.root}"
        backend = options_backend(plan.options)
        self.backend_name = backend.name
        self.graph_timed = graph_timed(plan.options.timer, backend)

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
            for item in items:
                if self.stop.is_set():
                    break
                outcome = self.run_item(item, lane, runner)
                if outcome is None:
                    break
                self.record(item.op, outcome, device)

    def open_lane(self, lane: Lane, device: int) -> LaneRunner:
        """What runs this batch's ops on `device` (its reused worker logs to
        .workers/dev<device>.log)."""
        return self.executor.open_lane(lane, self.plan.root / ".workers" / f"dev{device}.log")

    def run_item(self, item: Item, lane: Lane, runner: LaneRunner,
                 replay: Path | None = None) -> Outcome | None:
        """One op with its retries, dtype fallback and timer fallback; None when a
        machine-wide preflight failure stops the batch."""
        dtypes = item.dtypes if item.dtypes else self.plan.options.dtypes
        if replay is None and self.plan.replay_root is not None:
            replay = files.replay_source(self.plan.replay_root, item.op, self.backend_name)
            if isinstance(replay, str):          # nothing recorded: not measured unpinned
                return Outcome(SKIP, 0, 0.0, reason=replay, notes=["no_record"])
        outcome = self._attempts(item.op, dtypes, lane, runner,
                                 files.next_attempt(self.plan.root, item.op), replay)
        if dtypes and dtype_problem(outcome):
            dtypes = None
            fallback = self._attempts(item.op, None, lane, runner, outcome.attempt + 1, replay)
            fallback.notes.append("dtype_fallback")
            outcome = fallback
        elif dtypes and dtype_rescue(outcome):
            dtypes = None
            rescue = self._attempts(item.op, None, lane, runner, outcome.attempt + 1, replay)
            rescue.notes.append("dtype_rescue")
            outcome = rescue
        if outcome.status == CRASH and self.graph_timed:
            crashed = outcome
            outcome = self._attempts(item.op, dtypes, lane, runner, crashed.attempt + 1,
                                     replay, timer="event")
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

    def _attempts(self, op: str, dtypes, lane: Lane, runner: LaneRunner,
                  first: int, replay: Path | None, timer: str | None = None) -> Outcome:
        """Retries of FAIL and CRASH in a fresh worker; two identical outcomes stop them."""
        outcomes: list[Outcome] = []
        for k in range(first, first + 1 + self.plan.retries):
            if outcomes:
                runner.renew()                     # a retry runs in a fresh worker
            attempt = self._attempt(op, dtypes, lane, runner, k, replay, timer)
            if attempt.write_failure:
                self.stop.set()
                raise self.cannot_write(f"op {op}", attempt.write_failure)
            outcome = judge(attempt, self.plan.op_timeout_s)
            outcome.attempt = k
            outcomes.append(outcome)
            if outcome.status not in (FAIL, CRASH) or outcome.preflight_check:
                break
            if len(outcomes) > 1 and outcome.same_as(outcomes[-2]):
                break
        final = outcomes[-1]
        final.rcs = [o.rc for o in outcomes]
        if len(outcomes) > 1:
            final.notes.append("retry_rc=" + "->".join(str(rc) for rc in final.rcs))
        return final

    def _attempt(self, op: str, dtypes, lane: Lane, runner: LaneRunner, k: int,
                 replay: Path | None = None, timer: str | None = None):
        out = files.op_dir(self.plan.root, op)
        out.mkdir(parents=True, exist_ok=True)
        log = out / f"run.attempt{k}.log"
        # The batch samples its devices itself (telemetry.tsv at its root): not each op.
        options = self.plan.options.replace(dtypes=dtypes, out=str(out),
                                            replay=str(replay) if replay else None,
                                            telemetry_interval=0.0,
                                            timer=timer or self.plan.options.timer)
        return runner.run_op(OpWork(op, options, log, out, self.plan.op_timeout_s,
                                    [*self.plan.argv, f"[{op}]"]))

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
            for table in (self.summary_rows, self.timers, self.devices):
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
            doc = files.read_batch_json(self.plan.root)
            doc.pop("schema_version", None)
            files.write_batch_json(self.plan.root, {**doc, "caliber": caliber})
            self._caliber_noted = True

    def _note_rows(self, op: str, outcome: Outcome, device: int) -> None:
        self.timers[op], self.summary_rows[op] = files.op_summary_rows(
            op, outcome, self.backend_name, device)

    def _write_tables(self) -> None:
        rows = [files.status_row(self.plan.root, item.op, self.outcomes[item.op],
                                 self.plan.inventory.get(item.op, {}), self.backend_name,
                                 self.devices[item.op], self.timers.get(item.op, "-"))
                for item in self.plan.items if item.op in self.outcomes]
        files.write_tables(self.plan.root, rows,
                           [r for op in self.summary_rows for r in self.summary_rows[op]])

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
