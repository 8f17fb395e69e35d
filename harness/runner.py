"""`zlh bench`: plan (validate everything), then run each op into its own run directory.

`run_op` is the whole of what one benchmark run does, top to bottom.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import adapters
import backends

from . import autotune, identity, markers, outputs
from .case_timer import CaseTimer
from .ir_capture import IRCapture
from .errors import (EXIT_FAILED_CASES, EXIT_OK, CaseFailure, CaseSkipped, DevicePoisonedError,
                     PreflightError, UsageError, failure_detail, one_line)
from .results import FAILED, SKIPPED, SUCCESS, Row
from .rundir import RunDir, safe_name
from .shapes import ShapeFile, ShapeFileError, load_shape_file
from .stopping import StoppingRule
from .table import render_rows
from .timers import Budget, resolve_timer_name

LEVELS = ("core", "comprehensive")
L2_POLICIES = ("warm", "flush")
DEFAULT_SEED = 0


@dataclass
class BenchOptions:
    adapter: str | None = None          # None: flaggems when importable, else builtin
    backend: str | None = None          # None: detected
    device: int | None = None           # logical index; None: first visible device
    dtypes: Sequence[str] | None = None  # None: the op's defaults
    shapes: str | None = None           # shape file; None: the adapter's defaults
    level: str = "core"
    timer: str = "auto"
    repeat: int = 1
    l2: str = "warm"
    out: str = "runs"
    seed: int = DEFAULT_SEED
    check: bool = True                  # compare the function under test with the baseline
    rule: StoppingRule = field(default_factory=StoppingRule)
    budget: Budget = field(default_factory=Budget)
    flaggems_dir: str | None = None     # FlagGems checkout (else $FLAGGEMS_DIR)
    replay: str | None = None           # record run (or a root holding <op>_* record runs)
    isolate_tuner_cache: bool = False   # private FlagGems tuner DB for this invocation
    keep_cache: bool = False            # keep the private Triton (and tuner) caches
    ir: bool = True                     # capture TTGIR of the variants measured cases launch
    argv: Sequence[str] | None = None


@dataclass
class RunResult:
    op: str
    run_dir: Path
    rows: list[Row]
    caliber: dict
    status: str

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED_CASES if any(r.status == FAILED for r in self.rows) else EXIT_OK

    def ok(self) -> list[Row]:
        return [r for r in self.rows if r.status == SUCCESS]


@dataclass
class BenchPlan:
    ops: list[str]
    options: BenchOptions
    backend: object
    device_index: int
    adapter: adapters.Adapter
    timer: str
    dtypes: dict                        # op -> list of dtype names
    shape_file: ShapeFile | None
    caches: dict = field(default_factory=dict)      # autotune.cache_env(...) result
    replay_dirs: dict = field(default_factory=dict)  # op -> record run directory


def find_runs(root: Path, op: str, mode: str | None = None) -> list[Path]:
    """Run directories of `op` directly under `root`, oldest first (by start time);
    with `mode`, only those whose autotune mode is that ("record", "replay")."""
    found = []
    for path in Path(root).glob(f"{safe_name(op)}_*") if Path(root).is_dir() else []:
        try:
            info = json.loads((path / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if info.get("op") != op or (mode and info.get("autotune_mode",
                                                      info.get("caliber", {}).get(
                                                          "autotune_mode")) != mode):
            continue
        found.append((info.get("started_at", ""), path.stat().st_mtime, path))
    return [p for _, _, p in sorted(found)]


def seed_everything(seed: int) -> None:
    import torch
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)   # seeds every device generator too


def plan_bench(ops: Sequence[str], options: BenchOptions) -> BenchPlan:
    """Check every input before any device work; raise UsageError / PreflightError."""
    if not ops:
        raise UsageError("no op given; name at least one op (see `zlh ops` or the README)")
    if options.level not in LEVELS:
        raise UsageError(f"unknown level {options.level!r}; known: {', '.join(LEVELS)}")
    if options.l2 not in L2_POLICIES:
        raise UsageError(f"unknown L2 policy {options.l2!r}; known: {', '.join(L2_POLICIES)}")
    if options.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    try:
        backend = (backends.get_backend(options.backend) if options.backend
                   else backends.detect_backend())
    except backends.UnknownBackend as exc:
        raise UsageError(str(exc)) from None
    try:
        adapter = adapters.get_adapter(options.adapter or
                                       adapters.default_adapter_name(options.flaggems_dir),
                                       flaggems_dir=options.flaggems_dir)
    except adapters.UnknownAdapter as exc:
        raise UsageError(str(exc)) from None
    try:
        resolved = list(dict.fromkeys(adapter.resolve(op) for op in ops))
    except adapters.UnknownOp as exc:
        raise UsageError(str(exc)) from None
    shape_file = None
    if options.shapes:
        try:
            shape_file = load_shape_file(options.shapes)
        except ShapeFileError as exc:
            raise UsageError(str(exc)) from None
    try:
        timer = resolve_timer_name(options.timer, backend)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if options.l2 == "flush" and timer != "event":
        raise UsageError("--l2 flush needs --timer event (a graph replays with a warm L2)")

    if not backend.is_available():
        raise PreflightError("backend", f"backend {backend.name} has no usable device here "
                                        f"(python: {sys.executable})")
    usable, why = adapter.available()
    if not usable:
        raise PreflightError("import", why)
    visible = backend.enumerate_devices()
    if not visible:
        raise PreflightError("device", f"backend {backend.name} sees no device")
    if options.device is not None and options.device not in visible:
        raise PreflightError("device", f"--device {options.device}: backend {backend.name} "
                                       f"sees devices {', '.join(map(str, visible))}")
    device_index = options.device if options.device is not None else visible[0]
    # Activate before asking the adapter for dtypes: on the cpu backend this switches Triton
    # to its interpreter, which narrows what the kernels support.
    backend.activate(device_index)
    dtypes = {}
    for op in resolved:
        try:
            dtypes[op] = (adapter.check_dtypes(op, backend, options.dtypes) if options.dtypes
                          else adapter.default_dtypes(op, backend))
        except adapters.UnsupportedDtype as exc:
            raise UsageError(str(exc)) from None
        try:
            adapter.check_shapes(op, shape_file, options.level)
        except adapters.MissingShapes as exc:
            raise UsageError(str(exc)) from None
    replay_dirs = {op: find_record_run(options.replay, op, backend.name) for op in resolved} \
        if options.replay else {}
    # Private compile cache (and, if asked, tuner DB) before anything compiles or imports.
    cache_root = Path(options.out) / f".cache-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    caches = autotune.cache_env(cache_root, options.isolate_tuner_cache)
    if not adapter.uses_tuner_db:
        caches["tuner_cache"] = "none"
    autotune.apply_env(caches["env"])
    adapter.prepare(resolved, backend, options.level, shape_file)
    return BenchPlan(resolved, options, backend, device_index, adapter, timer, dtypes, shape_file,
                     caches, replay_dirs)


def find_record_run(path: str, op: str, backend: str) -> Path:
    """`--replay DIR`: a record run of this op, or a root holding `<op>_*` record runs (the
    newest is taken). Validated here, so a bad directory fails before anything runs."""
    root = Path(path)
    if (root / "run.json").exists() or (root / autotune.META_FILE).exists():
        candidate = root
    else:
        runs = find_runs(root, op, mode="record")
        candidate = runs[-1] if runs else root
    autotune.load_record_dir(candidate, backend)
    try:
        recorded_op = json.loads((candidate / "run.json").read_text()).get("op")
    except (OSError, ValueError):
        recorded_op = None
    if recorded_op not in (None, op):
        raise UsageError(f"--replay {candidate}: recorded op {recorded_op!r}, not {op!r}")
    return candidate


def run_op(plan: BenchPlan, op: str, echo: Callable[[str], None] = print) -> RunResult:
    """One op, top to bottom: run dir, identity, cases (seed, build, check, time), files."""
    options, backend, index = plan.options, plan.backend, plan.device_index
    started = time.time()
    run_dir = RunDir.create(options.out, op, started)
    device = backend.identity(index)
    adapter_id = plan.adapter.identity(op)
    shape_mode = (f"file:{plan.shape_file.sha256[:16]}" if plan.shape_file
                  else plan.adapter.default_shape_mode())
    run_info = {
        "run_id": run_dir.path.name,
        "op": op,
        "status": "running",
        "command": list(options.argv) if options.argv is not None else list(sys.argv),
        "cwd": str(Path.cwd()),
        "adapter": adapter_id,
        "caliber": identity.caliber(
            backend=backend.name, device=device.name, timer=plan.timer,
            bench_level=options.level, shape_mode=shape_mode,
            tuner_cache=plan.caches.get("tuner_cache", "none"), repeat=options.repeat,
            l2_policy=options.l2, warmup_ms=options.budget.warmup_ms,
            stopping=options.rule.to_dict(),
            autotune_mode="replay" if op in plan.replay_dirs else "record",
            ir_capture=options.ir),
        "dtypes": plan.dtypes[op],
        "shape_file": plan.shape_file.path if plan.shape_file else None,
        "seed": options.seed,
        "output_check": ("against the baseline" if options.check and plan.adapter.checks_outputs
                         else "none"),
        "budget": options.budget.to_dict(),
        "device": {**device.to_dict(), "backend": backend.name,
                   "l2_bytes": backend.l2_cache_bytes(index)},
        "versions": identity.versions(),
        "host": identity.host(),
        "env": identity.recorded_env(),
        "started_at": _iso(started),
        "telemetry": {"before": _telemetry(backend)},
        "caches": {"env": caches_env(plan.caches), "kept": options.keep_cache},
    }
    run_dir.write_run_json(run_info)
    header = (f"zlh bench {op} · adapter={plan.adapter.name} · {backend.name}:{index} "
              f"{device.name} · timer={plan.timer} · {run_dir.path}")
    echo(header)
    run_dir.log(header)
    if plan.caches.get("tuner_cache", "none").startswith("shared") and op not in plan.replay_dirs:
        warning = (f"WARNING [caliber] {op}: recording on a shared tuner cache "
                   f"{plan.caches['tuner_cache']}: configs may come from earlier runs without "
                   f"being measured (--isolate-tuner-cache gives this run its own)")
        echo(warning)
        run_dir.log(warning)
    rows: list[Row] = []
    seen: dict[tuple, int] = {}
    status = "complete"
    tuner_hook = ir = None
    try:
        if op in plan.replay_dirs:
            tuner_hook = autotune.AutotuneReplayer(plan.replay_dirs[op], backend.name)
        else:
            tuner_hook = autotune.AutotuneRecorder(run_dir.path, {
                "backend": backend.name, "provider": plan.adapter.name, "op": op,
                "versions": run_info["versions"]})
        tuner_hook.install(import_flag_gems=plan.adapter.uses_tuner_db)
        if options.ir:
            ir = IRCapture(run_dir.path / "ttgir")
            run_info["ir_hooks"] = ir.install()
        case_timer = CaseTimer(backend, index, plan.timer, options.rule, options.budget,
                               options.repeat, flush_l2=options.l2 == "flush")
        cases = plan.adapter.cases(op, plan.dtypes[op], plan.shape_file, options.level,
                                   backend, backend.torch_device(index))
        with contextlib.closing(iter(cases)) as cases:   # closes the adapter's contexts
            while True:
                seed_everything(options.seed)   # adapters that build inputs while yielding
                case = next(cases, None)
                if case is None:
                    break
                key = (case.variant or case.op, case.dtype, case.shape_detail)
                tuner_hook.begin_case()
                try:
                    row = measure_case(case, case_timer, backend, options.seed, options.check,
                                       occurrence=seen.get(key, 0), ir=ir)
                finally:
                    tuned_markers = tuner_hook.take_markers()
                row.markers = tuned_markers + row.markers
                seen[key] = seen.get(key, 0) + 1
                rows.append(row)
                run_dir.write_results(rows)
                run_info["counts"] = _counts(rows)
                run_dir.write_run_json(run_info)
                for line in row.markers:
                    echo(line)
                    run_dir.log(line)
                progress = (f"[{len(rows)}] {row.dtype} {row.shape_detail} {row.status}"
                            f"{' ' + row.reason if row.reason else ''}")
                print(progress, file=sys.stderr, flush=True)
    except DevicePoisonedError as exc:
        status = "poisoned"
        echo(exc.message)
        run_dir.log(exc.message)
        raise
    except (adapters.MissingShapes, adapters.UnsupportedDtype) as exc:
        status = "usage_error"
        raise UsageError(str(exc)) from None
    except (KeyboardInterrupt, SystemExit):
        status = "interrupted"
        raise
    except BaseException:
        status = "crashed"
        raise
    finally:
        # Each step on its own: one failing clean-up must not skip the others or run.json.
        problems: list[str] = []

        def safely(step):
            try:
                step()
            except Exception as exc:  # noqa: BLE001
                problems.append(one_line(exc))

        if tuner_hook is not None:
            safely(tuner_hook.uninstall)
            if isinstance(tuner_hook, autotune.AutotuneReplayer):
                safely(lambda: tuner_hook.write_meta(run_dir.path))
            run_info.update(tuner_hook.run_fields())
        if ir is not None:
            safely(lambda: run_info.__setitem__("ir", ir.dump()))
            safely(ir.uninstall)
        safely(lambda: run_dir.write_results(rows))
        safely(lambda: run_dir.write_shapes(plan.adapter.shapes_used(op)))
        for line in plan.adapter.run_markers(op):
            echo(line)
            run_dir.log(line)
        fallbacks = sum(1 for r in rows for m in r.markers
                        if markers.marker_name(m) == markers.NO_GRAPH)
        effective = _effective_timer(plan.timer, rows)
        if effective != plan.timer:
            line = markers.marker(markers.ALL_EVENT_TIMED, op=op, requested=plan.timer,
                                  detail="every measured case fell back: this is an "
                                         "event-timed run")
            echo(line)
            run_dir.log(line)
        run_info["caliber"]["timer"] = effective
        finished = time.time()
        run_info.update({
            "status": status,
            "timer_requested": plan.timer,
            "graph_fallbacks": fallbacks,
            "counts": _counts(rows),
            "finished_at": _iso(finished),
            "wall_s": round(finished - started, 3),
        })
        if problems:
            run_info["cleanup_errors"] = problems
        run_info["telemetry"]["after"] = _telemetry(backend)
        run_dir.write_run_json(run_info)

    legend, table = render_rows(rows, colour=sys.stdout.isatty())
    summary = (f"{run_info['counts'][SUCCESS]} ok, {run_info['counts'][FAILED]} failed, "
               f"{run_info['counts'][SKIPPED]} skipped; {fallbacks} graph fallbacks; "
               f"wall {run_info['wall_s']:.1f} s")
    plain_legend, plain_table = render_rows(rows, colour=False)
    for text in (legend, table, summary):
        if text:
            echo(text)
    for text in (plain_legend, plain_table, summary):
        if text:
            run_dir.log(text)
    return RunResult(op, run_dir.path, rows, run_info["caliber"], status)


def measure_case(case, case_timer: CaseTimer, backend, seed: int, check: bool,
                 occurrence: int = 0, ir: IRCapture | None = None) -> Row:
    """Seed, build inputs, check the result against the baseline, time both with one timer.

    IR capture (when given) counts the launches between the built inputs and the end of
    timing as this case's; autotune sweeps inside that window are told apart by the capture.
    """
    row = Row(op=case.op, dtype=case.dtype, shape=case.shape, shape_detail=case.shape_detail,
              status=SUCCESS, occurrence=occurrence, extra=dict(case.info),
              variant=case.variant or "")
    if case.skip_reason:
        row.status, row.reason = SKIPPED, case.skip_reason
        return row
    try:
        seed_everything(seed)
        inputs = case.build()
        args, kwargs = inputs.args, inputs.kwargs
        baseline = lambda: case.baseline(*args, **kwargs)      # noqa: E731
        under_test = lambda: case.under_test(*args, **kwargs)  # noqa: E731
        gems_context = case.under_test_context or contextlib.nullcontext
        if ir is not None:
            ir.begin_case(case.shape_detail, case.dtype)
        try:
            with gems_context():
                out = under_test()
            try:
                row.extra["output"] = outputs.digest(out)   # for the A/B output gate
            except Exception as exc:  # noqa: BLE001 - the gate's data never fails a case
                row.extra["output_error"] = one_line(exc)
            if check and case.check is not None:
                try:
                    case.check(out, baseline())
                except AssertionError as exc:
                    raise CaseFailure("mismatch", one_line(exc)) from None
            del out
            where = {"dtype": case.dtype, "shape": case.shape_detail}
            names = {n for n in (case.op.split(":")[0], case.info.get("op_name")) if n}
            timed_torch = case_timer.measure(baseline, case.op, names, **where)
            with gems_context():
                timed_gems = case_timer.measure(under_test, case.op, names, **where)
        finally:
            if ir is not None:
                ir.end_case()
        row.torch, row.gems = timed_torch.measurement, timed_gems.measurement
        row.markers = timed_torch.markers + timed_gems.markers
        if case.metrics is not None:
            try:
                row.metrics = {k: float(v) for k, v in
                               case.metrics(inputs, row.torch_ms, row.gems_ms).items()
                               if v is not None}
            except Exception as exc:  # noqa: BLE001 - a metric never costs the latency
                row.extra["metrics_error"] = one_line(exc)
    except CaseSkipped as exc:
        row.status, row.reason = SKIPPED, exc.reason
    except CaseFailure as exc:
        row.status, row.reason = FAILED, exc.reason
        row.markers.append(markers.marker(markers.CASE_FAILED, op=case.op, dtype=case.dtype,
                                          shape=case.shape_detail, reason=exc.reason,
                                          detail=exc.detail))
    except DevicePoisonedError:
        raise
    except Exception as exc:  # noqa: BLE001 - one broken case must not end the run
        verdict = backend.classify_error(exc)
        if verdict == backends.POISONED:
            raise DevicePoisonedError(markers.marker(
                markers.DEVICE_POISONED, op=case.op, dtype=case.dtype, shape=case.shape_detail,
                reason=type(exc).__name__, detail=failure_detail(exc))) from exc
        if verdict == backends.FATAL:
            _raise_if_device_unusable(backend, case, exc)
        reason = "fatal_device_error" if verdict == backends.FATAL else type(exc).__name__
        row.status, row.reason = FAILED, reason
        row.markers.append(markers.marker(markers.CASE_FAILED, op=case.op, dtype=case.dtype,
                                          shape=case.shape_detail, reason=reason,
                                          detail=failure_detail(exc)))
    return row


def _raise_if_device_unusable(backend, case, exc) -> None:
    """A fatal error can leave the context unusable (sticky CUDA errors): then every later
    case would fail with the same text and be blamed for it. End the run instead."""
    problem = backend.device_usable()
    if problem:
        raise DevicePoisonedError(markers.marker(
            markers.DEVICE_POISONED, op=case.op, dtype=case.dtype, shape=case.shape_detail,
            reason=type(exc).__name__,
            detail=f"{one_line(exc)}; device unusable afterwards: {problem}")) from exc


def run_bench(ops: Sequence[str], options: BenchOptions,
              echo: Callable[[str], None] = print) -> list[RunResult]:
    saved_env = dict(os.environ)
    plan = None
    try:
        plan = plan_bench(ops, options)
        return [run_op(plan, op, echo) for op in plan.ops]
    finally:
        # Cache locations and backend switches belong to this invocation only.
        os.environ.clear()
        os.environ.update(saved_env)
        if plan is not None and not options.keep_cache:
            for directory in plan.caches.get("private_dirs", []):
                shutil.rmtree(directory, ignore_errors=True)
            cache_root = Path(plan.caches.get("private_dirs", ["."])[0]).parent
            if cache_root.name.startswith(".cache-"):
                shutil.rmtree(cache_root, ignore_errors=True)


def caches_env(caches: dict) -> dict:
    return {k: (v if v is not None else "(unset)") for k, v in caches.get("env", {}).items()}


def _effective_timer(requested: str, rows: Sequence[Row]) -> str:
    """A graph run whose every measured case fell back is an event-timed run."""
    measured = [r for r in rows if r.gems is not None]
    if requested == "graph" and measured and all(
            r.gems.timer != "graph" and (r.torch is None or r.torch.timer != "graph")
            for r in measured):
        return "event"
    return requested


def _counts(rows) -> dict:
    return {s: sum(1 for r in rows if r.status == s) for s in (SUCCESS, FAILED, SKIPPED)}


def _telemetry(backend):
    samples = backend.read_telemetry()
    return [s.to_dict() for s in samples] if samples else None


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts))
