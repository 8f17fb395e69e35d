"""`zlh bench`: plan (validate everything), then run each op into its own run directory. `run_op`
is one run, top to bottom; `OpRun` holds its state (directory, run.json, rows), a call a step."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import itertools
import os
import shutil
import time
from typing import Sequence

import adapters

from .. import telemetry
from ..common import log, markers, style
from ..common.errors import (DevicePoisonedError, OpExitError, RunFailedError, Terminated,
                             UsageError, one_line, op_exit_reason, write_failure)
from ..common.log import Echo
from ..common.process import HeldTermination, signal_name
from ..compile import autotune
from ..compile.caches import remove_private
from ..compile.ir.capture import IRCapture
from ..measure.case_timer import CaseTimer
from ..store.caliber import UNTIMED, Caliber
from ..store.results import Row
from ..store.rundir import RunDir
from ..store.compiler import describe as describe_compiler, short as short_compiler
from ..telemetry.kernel_split import KernelSplit
from .heartbeat import Heartbeat
from .case import InputClock, case_count, measure_case, next_case, seed_everything
from .library_log import LibraryLog
from .process_state import InheritedState
from .run_info import device_identity, iso_time, run_info, telemetry_sample
from .options import BenchOptions
from .plan import BenchPlan, plan_bench
from .pinned_calls import calls_from_record
from .plant import Plant
from .result import RunResult, effective_timer, graph_fallbacks, status_counts
from .table import case_line, summary_line, write_table
from . import phases, turns

def run_bench(ops: Sequence[str], options: BenchOptions, echo: Echo | None = None,
              progress: Echo | None = None,
              adapter: adapters.Adapter | None = None) -> list[RunResult]:
    """Plan every op, then run them one after the other; the process environment (cache
    locations, backend switches) is restored afterwards, private caches removed unless kept.
    `echo`: the header, marker and table lines (None: only run.log has them); `progress`: a
    line per case; `adapter`: an adapter object instead of the one the options name. A run
    failing outside its cases (disk full) or whose op called sys.exit ends the invocation."""
    for name, value in (("echo", echo), ("progress", progress)):
        if value is not None and not callable(value):
            raise UsageError(f"{name} must be a function taking one line (e.g. print) or None, "
                             f"got {type(value).__name__}")
    saved_env = dict(os.environ)
    plan = None
    try:
        plan = plan_bench(ops, options, adapter)
        results, inherited = [], InheritedState()    # the state the first op is compared with
        log.debug(f"compiler under test: {describe_compiler(plan.compiler)}")
        for number, op in enumerate(plan.ops):
            try:
                results.append(run_op(plan, op, echo, progress))
            except (RunFailedError, OpExitError) as exc:
                rest = plan.ops[number + 1:]
                if rest:
                    exc.message += f"; not run ({exc.reason}): {', '.join(rest)}"
                raise
            warning = inherited.after(op, plan.ops[number + 1:])
            if warning:
                log.warning(warning)
        return results
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        if plan is not None and not options.keep_cache:
            remove_private(plan.caches, plan.cache_root)


def run_op(plan: BenchPlan, op: str, echo: Echo | None = None,
           progress: Echo | None = None) -> RunResult:
    """One op, top to bottom: run directory and identity, hooks, cases, files, table. (long:
    every way a run can end, and the status each gives, stays in view in this one function.)"""
    held = HeldTermination().hold()  # a SIGTERM while run.json is first written lands below
    try:
        run = OpRun.open(plan, op, echo, progress)
    except BaseException:
        held.release()
        raise
    status, reason, write_error = "complete", "", None
    try:
        held.release()
        run.announce()               # header line, warnings
        run.install_hooks()          # autotune record or replay; IR capture
        # other libraries' log lines: to run.log, once each; the device's lock, where named
        with run.library_log, phases.holding_device(run.device_lock,
                                                    phases.times_nothing(plan.options)):
            run.measure_cases()      # per case: seed, build, check, time; files rewritten
    except DevicePoisonedError as exc:
        status = "poisoned"
        run.note(exc.message)
        raise
    except (adapters.MissingShapes, adapters.UnsupportedDtype) as exc:
        status = "usage_error"
        raise UsageError(str(exc)) from None
    except BrokenPipeError:
        status, reason = "crashed", "output closed"
        raise
    except OSError as exc:           # disk full, read-only file system: the run cannot go on
        if exc.errno == errno.EBADF:     # the op closed this process's stdout/stderr
            status, reason = "crashed", "output closed"
            raise
        status, reason, write_error = "failed", write_failure(exc), exc
        if not plan.options.keep_cache:    # room for run.json: the run ends here anyway
            remove_private(plan.caches)
    except (KeyboardInterrupt, Terminated) as exc:
        status = "interrupted"
        reason = "SIGINT" if isinstance(exc, KeyboardInterrupt) else signal_name(exc.signum)
        raise
    except SystemExit as exc:        # the op's code called sys.exit: its status is not zlh's
        status, reason = "crashed", op_exit_reason(exc.code)
        raise OpExitError(f"{op}: {reason}; the run is marked crashed; cases measured before "
                          f"it are in {run.dir.path}", exc.code) from None
    except BaseException as exc:    # AdapterFailure (the adapter broke midway) says why
        status, reason = "crashed", getattr(exc, "reason", "")
        raise
    finally:
        # a dying parent's second SIGTERM (one per thread it had) must not cut the files short
        closing = HeldTermination().hold()
        try:
            # records, IR, results, shapes, final run.json: `failed` when results.jsonl
            # could not take every measured case
            status = run.finish(status, reason)
            reason = run.info.get("reason") or reason
            if status != "complete":
                run.print_table(f"status: {status}" + (f" ({reason})" if reason else ""))
        finally:
            closing.release(deliver=status != "interrupted")
    if status == "complete":
        run.print_table()
    write_error = write_error or run.final_write_error or run.details_lost or run.results_error
    if write_error is not None:
        raise run.failure(write_error, write_failure(write_error))
    return RunResult(op, run.dir.path, run.rows, run.caliber, status, plan.compiler)


class OpRun:
    """The state of one op's run, and its steps."""

    def __init__(self, plan: BenchPlan, op: str, run_dir: RunDir, info: dict,
                 caliber: Caliber, echo: Echo, progress: Echo | None, device_lock=None):
        self.plan, self.op, self.dir, self.info = plan, op, run_dir, info
        self.caliber, self.echo, self.progress = caliber, echo, progress
        self.rows: list[Row] = []
        self.started = self.case_clock = time.time()
        self.inputs = InputClock(nested=phases.elsewhere(self))   # sweeps, lock waits
        self.tuner_hook, self.ir = None, None
        # run.json unwritten; results.jsonl lacks cases; run.json without some details
        self.final_write_error = self.results_error = self.details_lost = None
        self.watcher = telemetry.watch(run_dir.path, plan.backend, plan.device_index,
                                       plan.options.telemetry_interval)
        self.plant: Plant | None = None
        self.library_log = LibraryLog(self.dir.log)
        self.heartbeat = Heartbeat(run_dir.path)      # beats now, at each case end, compile
        self.case_timer, self.device_lock, self.lock_mark = None, device_lock, None
        if device_lock is not None:    # waiting for a neighbour's device work: no hang, no time
            device_lock.while_waiting = self.heartbeat.waiting_on(device_lock)
            self.lock_mark = device_lock.mark()      # what this run did with it comes after

    @classmethod
    def open(cls, plan: BenchPlan, op: str, echo: Echo, progress: Echo | None) -> "OpRun":
        """The run directory with its first run.json (status running); nothing is left
        behind when that cannot be written."""
        options, backend, index = plan.options, plan.backend, plan.device_index
        started = time.time()
        try:
            run_dir = RunDir.create(options.out, op, started)
        except OSError as exc:
            raise RunFailedError(f"{op}: cannot create a run directory under {options.out}: "
                                 f"{write_failure(exc)}", write_failure(exc)) from None
        try:
            device = device_identity(backend, index)
            caliber = Caliber(
                backend=backend.name, device=device.name, timer=plan.timer if options.timing
                else UNTIMED,
                shape_mode=(f"file:{plan.shape_file.sha256[:16]}" if plan.shape_file
                            else plan.adapter.default_shape_mode()),
                tuner_cache=plan.caches.tuner_cache,
                autotune_mode=("uncontrolled" if not options.autotune_hooks else
                               "replay" if op in plan.replay_dirs else "record"),
                tuning_space=plan.adapter.tuning_space(os.environ), card=device.card,
                **options.caliber_values())
            info = run_info(plan, op, run_dir, device, caliber, started)
            run_dir.write_run_json(info)
            lock = phases.lock_for(backend, caliber.card, index)
        except BaseException as exc:
            shutil.rmtree(run_dir.path, ignore_errors=True)
            if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
                raise RunFailedError(f"{op}: cannot write {exc.filename or run_dir.path}: "
                                     f"{write_failure(exc)}", write_failure(exc)) from None
            raise
        return cls(plan, op, run_dir, info, caliber, echo, progress, lock)

    def announce(self) -> None:
        plan, op, caliber = self.plan, self.op, self.caliber
        self.watcher.start()         # telemetry.tsv (or telemetry.err) in the run directory
        self.say(f"zlh bench {op} · adapter={plan.adapter.name} · "
                 f"compiler={short_compiler(plan.compiler)} · "
                 f"{plan.backend.name}:{plan.device_index} {caliber.device} · "
                 f"timer={caliber.timer} · {self.dir.path}")
        if caliber.tuner_cache.startswith("shared") and op not in plan.replay_dirs:
            self.say(f"WARNING [caliber] {op}: recording on a shared tuner cache "
                     f"{caliber.tuner_cache}: configs may come from earlier runs without "
                     f"being measured (--isolate-tuner-cache gives this run its own)")

    def say(self, text: str) -> None:
        """A line for the user (when there is one to tell) and for run.log."""
        if self.echo is not None:
            self.echo(text)
        self.dir.log(text)

    def note(self, text: str) -> None:
        """`say` where a failure to print or log must not replace the error being handled."""
        with contextlib.suppress(Exception):
            self.say(text)

    def failure(self, exc: OSError, reason: str) -> RunFailedError:
        where = exc.filename or self.dir.path
        marked = ("run.json could not be updated (it reads `running` until its process is "
                  "gone, then `abandoned`)" if self.final_write_error is not None
                  else "the run is marked failed")
        return RunFailedError(f"{self.op}: {reason} writing {where}; {marked}; cases measured "
                              f"before it are in {self.dir.path}", reason)

    def install_hooks(self) -> None:
        plan, op = self.plan, self.op
        if not plan.options.autotune_hooks:           # --no-autotune-hooks
            self.tuner_hook = autotune.Unhooked()
        elif op in plan.replay_dirs:
            self.tuner_hook = autotune.AutotuneReplayer(plan.replay_dirs[op], plan.backend.name)
        else:
            self.tuner_hook = autotune.AutotuneRecorder(self.dir.path, {
                "backend": plan.backend.name, "provider": plan.adapter.name, "op": op,
                "versions": self.info["versions"]})
        self.tuner_hook.install(plan.adapter.tuner_support())
        self.tuner_hook.while_sweeping = phases.sweep_hold(self.device_lock)   # (exclusive)
        self.tuner_hook.sweep_ms = plan.options.sweep_ms
        if plan.options.ir:
            stage = plan.options.ir_stage
            self.ir = IRCapture(self.dir.path / "ttgir",
                                extra_stages=() if stage == "ttgir" else (stage,))
            self.info["ir_hooks"] = self.ir.install()
            self.heartbeat.attach()

    def measure_cases(self) -> None:
        plan, options = self.plan, self.plan.options
        case_timer = self.case_timer = CaseTimer(
            plan.backend, plan.device_index, plan.timer, options.rule, options.budget,
            options.repeat, flush_l2=options.l2 == "flush", lock=self.device_lock,
            turns=turns.current())      # a round's samples in turns with its peer, or None
        cases = plan.adapter.cases(self.op, plan.dtypes[self.op], plan.shape_file,
                                   options.level, plan.backend,
                                   plan.backend.torch_device(plan.device_index))
        seen: dict = collections.defaultdict(itertools.count)   # occurrences (all shards')
        shard, shards = options.shard()
        self.plant = Plant.for_run(options.plant_pct, plan.backend, plan.device_index,
                                   replayed := plan.replay_dirs.get(self.op),
                                   options.plant_landing_pct)
        split = KernelSplit.for_run(options.kernel_split, plan.backend, self.dir.path, self.say)
        self.info["pinned_calls"] = len((pins := calls_from_record(replayed)) or {})
        with contextlib.closing(iter(cases)) as cases:   # closes the adapter's contexts
            for index in itertools.count():
                seed_everything(options.seed)   # adapters that build inputs while yielding
                with self.inputs.counting():
                    case = next_case(cases, self.op, index, self.dir.path)
                if case is None:
                    break
                occurrence = next(seen[(case.variant or case.op, case.dtype, case.shape_detail)])
                if index % shards != shard:     # another shard's case (parallel sweep)
                    continue
                case = dataclasses.replace(case, build=self.inputs.timed(case.build))
                self.tuner_hook.begin_case()
                try:
                    row = measure_case(case, case_timer, plan.backend, options,
                                       occurrence=occurrence, ir=self.ir,
                                       plant=self.plant, split=split, pins=pins)
                finally:
                    tuned_markers = self.tuner_hook.take_markers()
                row.markers = tuned_markers + row.markers
                row.extra.update(self.inputs.take())    # this case's input building
                self._keep(row)

    def _keep(self, row: Row) -> None:
        """A measured case goes to disk before the next one starts."""
        self.rows.append(row)
        self.dir.write_results(self.rows)
        self.heartbeat.beat()
        self.info["counts"] = status_counts(self.rows)
        self.dir.write_run_json(self.info)
        for line in row.markers:
            self.say(line)
        if self.progress is not None:
            took, self.case_clock = (now := time.time()) - self.case_clock, now
            self.progress(case_line(self.op, row, len(self.rows), case_count(
                self.plan.adapter, self.op, self.plan.options), took, now - self.started))

    def finish(self, status: str, reason: str = "") -> str:
        """Records, IR, results and shapes, then the final run.json; each step on its own, so
        one failing clean-up cannot skip the others or run.json (a failure to write run.json
        is kept in `final_write_error`). run.json counts the rows results.jsonl holds: when
        it lacks measured cases, the run is `failed`. Returns the final status."""
        problems: list[str] = []

        def safely(step):
            try:
                step()
            except Exception as exc:  # noqa: BLE001
                problems.append(one_line(exc))

        safely(self.watcher.stop)
        safely(self.heartbeat.detach)
        hook = self.tuner_hook
        if hook is not None:
            safely(hook.uninstall)
            if isinstance(hook, autotune.AutotuneReplayer):
                safely(lambda: hook.write_meta(self.dir.path))
            safely(lambda: self.info.update(hook.run_fields()))
        if self.ir is not None:
            safely(lambda: self.info.__setitem__("ir", self.ir.dump()))
            safely(self.ir.uninstall)
        try:
            self.dir.write_results(self.rows, fresh=True)
        except Exception as exc:  # noqa: BLE001
            problems.append(one_line(exc))
            if isinstance(exc, OSError) and self.dir.rows_written < len(self.rows):
                self.results_error = exc
        lost = len(self.rows) - self.dir.rows_written
        if lost > 0:
            why = (f"{lost} measured case(s) could not be written to results.jsonl"
                   + (f" ({write_failure(self.results_error)})" if self.results_error else ""))
            if status == "complete":
                status, reason = "failed", why
            self.info["unwritten_rows"] = lost
            self.note(f"WARNING: {why}; run.json counts the {self.dir.rows_written} row(s) "
                      f"it holds")
        safely(lambda: self.dir.write_shapes(self.plan.adapter.shapes_used(self.op)))
        lines: list[str] = []                 # the adapter's markers, each said on its own
        safely(lambda: lines.extend(self.plan.adapter.run_markers(self.op)))
        for line in lines:
            self.note(line)
        safely(lambda: self.library_log.close_into(self.info, self.op))
        safely(lambda: self.info.__setitem__("inputs", self.plan.adapter.inputs_record(self.op)))
        safely(lambda: self._finish_info(status, reason))
        if problems:
            self.info["cleanup_errors"] = problems
        written, exc = self.dir.write_final_run_json(self.info)
        if written is None:
            self.final_write_error = exc
        elif "omitted_for_space" in written:     # the disk was full: a failed run
            self.details_lost, status = exc, written["status"]
        return status

    def _finish_info(self, status: str, reason: str) -> None:
        # how the run ended comes first: a detail below that fails must not leave it
        # `running`; counts are what results.jsonl holds; max(): a clock stepped back
        finished = time.time()
        self.info.update({"status": status, "finished_at": iso_time(finished),
                          "wall_s": round(max(0.0, finished - self.started), 3),
                          "counts": status_counts(self.rows[:self.dir.rows_written]),
                          **({"reason": reason} if reason else {})})
        effective = effective_timer(self.plan.timer, self.rows, self.plan.options.timing)
        if effective not in (self.plan.timer, UNTIMED):
            self.note(markers.marker(markers.ALL_EVENT_TIMED, op=self.op,
                                     requested=self.plan.timer,
                                     detail="every measured case fell back: this is an "
                                            "event-timed run"))
        self.caliber = self.caliber.with_timer(effective)
        self.info.update({
            "caliber": self.caliber.to_dict(), "timer_requested": self.plan.timer,
            "graph_fallbacks": graph_fallbacks(self.rows),
            **self.inputs.totals(),
            **phases.phase_fields(self.case_timer, self.tuner_hook, self.device_lock,
                                 self.lock_mark)})
        after = telemetry_sample(self.plan.backend, self.plan.device_index)
        self.info["telemetry"].update(self.watcher.summary(), after=after)
        self.info["throttled_cases"] = sum(1 for r in self.rows if r.throttled)
        if self.plant is not None:
            self.info["plant"] = self.plant.run_fields()

    def print_table(self, status_line: str | None = None) -> None:
        """The table and summary (and an unfinished run's status line) on the console and in
        run.log; for an unfinished run nothing here raises (its error is on its way out)."""
        wall = self.info.get("wall_s", time.time() - self.started)
        tail = (summary_line(status_counts(self.rows), graph_fallbacks(self.rows), wall,
                             self.inputs.total_s), status_line)
        write_table(self.rows, tail, ((self.echo, style.colour(), style.tablefmt()),
                                      (self.dir.log, False, "simple")),
                    interpreted=self.plan.backend.name == "cpu", quiet_errors=bool(status_line))
