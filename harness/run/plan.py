"""Planning a `zlh bench`: every input checked before any device work or run directory.

`plan_bench` resolves the backend, adapter, ops, dtypes, shapes, timer, device and replay
sources, sets up the private caches, and lets the adapter import what its cases need; it
raises UsageError / PreflightError with one line saying what is wrong.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import adapters
import backends

from ..common import spelling
from ..common.errors import PreflightError, UsageError
from ..common.files import check_output_dir
from ..compile import autotune
from ..compile.caches import KEPT_PREFIX, CacheEnv, apply_env, compile_cache
from ..measure import device_lock
from ..measure.timers import resolve_timer_name
from ..store.compiler import compiler_identity
from ..store.reader import (COMPLETE, REPLAY_PARTIAL_ENV, check_complete, find_runs, load_info,
                            refuse_run_dir)
from .options import UNHOOKED_REPLAY, BenchOptions
from .plant import check_plant
from .shapes import ShapeFile, ShapeFileError, load_shape_file


@dataclass
class BenchPlan:
    ops: list[str]
    options: BenchOptions
    backend: object
    device_index: int
    adapter: adapters.Adapter
    timer: str
    dtypes: dict                        # op -> list of dtype names (None: the op's own)
    shape_file: ShapeFile | None
    caches: CacheEnv = field(default_factory=CacheEnv)
    replay_dirs: dict = field(default_factory=dict)  # op -> record run directory
    cache_root: Path | None = None
    compiler: dict | None = None        # which distribution provides `triton` (run.json)


def plan_bench(ops: Sequence[str], options: BenchOptions,
               adapter: adapters.Adapter | None = None, dry_run: bool = False) -> BenchPlan:
    """Check every input before any device work; raise UsageError / PreflightError.
    `adapter`: an adapter object to use instead of the one the options name (the Python
    API's user cases).

    `dry_run`: only the checks (ops, environment switches, shapes, timer, replay sources,
    device, dtypes) — no output directory, no caches, no library import; `zlh ab` runs them
    for each side before it starts a process. The backend's environment is set either way
    (it decides the dtypes; a dry run touches no device): callers of a dry run keep their
    environment with `preserved_environ`."""
    if not ops:
        raise UsageError("no op given; name at least one op (see `zlh ops` or the README)")
    backend = options_backend(options)
    adapter = adapter if adapter is not None else _adapter(options)
    try:
        resolved = list(dict.fromkeys(adapter.resolve(op) for op in ops))
    except adapters.UnknownOp as exc:
        raise UsageError(str(exc)) from None
    adapter.check_environment(os.environ)
    if refused := device_lock.check_folder():     # a run would end there after its set-up
        raise UsageError(refused)
    if options.replay and not options.autotune_hooks:
        raise UsageError(UNHOOKED_REPLAY)
    if options.sweep_ms is not None and not options.autotune_hooks:
        raise UsageError("--sweep-ms budgets the sweeps the autotune hooks see, which "
                         "--no-autotune-hooks switches off: leave out one of them")
    shape_file = _shape_file(options)
    timer = check_timer(options, backend)
    # Replay sources before the device: a record of another backend is bad input (exit 2)
    # even on a machine that lacks that backend.
    replay_dirs = ({op: find_record_run(options.replay, op, backend.name) for op in resolved}
                   if options.replay else {})
    device_index = _device(backend, adapter, options)
    compiler = _compiler()
    check_plant(options.plant_pct, options.replay, backend, options.plant_landing_pct)
    # Activate before asking the adapter for dtypes: on the cpu backend this switches Triton
    # to its interpreter, which narrows what the kernels support. A dry run sets only the
    # environment: it must not hold a device context while the runs it checked use the device.
    if dry_run:
        backend.activate_env()
    else:
        backend.activate(device_index)
    dtypes = {op: _dtypes(adapter, op, backend, options, shape_file) for op in resolved}
    plan = BenchPlan(resolved, options, backend, device_index, adapter, timer, dtypes,
                     shape_file, replay_dirs=replay_dirs, compiler=compiler)
    if dry_run:
        return plan
    check_output_dir(options.out, spelling.option("out"))
    refuse_run_dir(options.out, spelling.option("out"))
    given_out = options.out
    _absolute_paths(plan)        # checked as given; kept absolute: an op's os.chdir moves none
    options = plan.options
    # Private compile cache (and, if asked, tuner cache) before anything compiles or imports.
    plan.cache_root, plan.caches = _caches(adapter, options)
    apply_env(plan.caches.env)
    adapter.set_input_mode(options.inputs)     # device-drawn or upstream inputs (--inputs)
    adapter.prepare(resolved, backend, options.level, plan.shape_file)
    check_output_dir(given_out, spelling.option("out"), create=True)
    return plan


def _absolute_paths(plan: BenchPlan) -> None:
    """Every path the run keeps past its start made absolute now (out, replay, shapes, the
    checkouts; the record runs and the shape file found from them), so an op that calls
    os.chdir cannot move where the rest of its run is read or written. Done after the checks,
    whose messages name the paths as the user gave them."""
    plan.options = plan.options.absolute()
    plan.replay_dirs = {op: Path(os.path.abspath(path)) for op, path in plan.replay_dirs.items()}
    if plan.shape_file is not None:
        plan.shape_file = dataclasses.replace(plan.shape_file,
                                              path=os.path.abspath(plan.shape_file.path))


@contextlib.contextmanager
def preserved_environ(environ: dict | None = None):
    """Run a block with `environ` as the process environment (default: the current one) and
    restore the environment afterwards, whatever the block set."""
    saved = dict(os.environ)
    try:
        if environ is not None:
            os.environ.clear()
            os.environ.update(environ)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def check_timer(options: BenchOptions, backend) -> str:
    """The timer a run uses on `backend`; UsageError when it (or --l2 flush) cannot work."""
    try:
        timer = resolve_timer_name(options.timer, backend)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if options.l2 == "flush" and timer != "event":
        if not backend.supports_events:
            raise UsageError(f"{spelling.option('l2', 'flush')} needs device events "
                             f"({spelling.option('timer', 'event')}), which backend "
                             f"{backend.name} lacks; leave {spelling.option('l2')} at warm")
        raise UsageError(f"{spelling.option('l2', 'flush')} needs "
                         f"{spelling.option('timer', 'event')} (a graph replays with a warm L2)")
    return timer


def options_backend(options: BenchOptions):
    """The backend the options name (`--backend`), or the one found here; UsageError for an
    unknown name."""
    return named_backend(options.backend)


def named_backend(name: str | None):
    """The backend `name` names, or the one found here when None; UsageError for an unknown
    name."""
    try:
        return backends.backend_for(name)
    except backends.UnknownBackend as exc:
        raise UsageError(str(exc)) from None


def _adapter(options: BenchOptions) -> adapters.Adapter:
    name = options.adapter or ("user" if options.cases else
                               adapters.default_adapter_name(options.flaggems_dir))
    if options.cases and name != "user":
        raise UsageError(f"{spelling.option('cases')} names user cases; it cannot be "
                         f"combined with {spelling.option('adapter', name)} (leave "
                         f"{spelling.option('adapter')} out)")
    try:
        return adapters.get_adapter(name, flaggems_dir=options.flaggems_dir,
                                    cases=options.cases)
    except adapters.UnknownAdapter as exc:
        raise UsageError(str(exc)) from None


def _shape_file(options: BenchOptions) -> ShapeFile | None:
    if not options.shapes:
        return None
    try:
        return load_shape_file(options.shapes)
    except ShapeFileError as exc:
        raise UsageError(str(exc)) from None


def _device(backend, adapter, options: BenchOptions) -> int:
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
        raise PreflightError("device", f"{spelling.option('device', options.device)}: backend "
                                       f"{backend.name} sees devices "
                                       f"{', '.join(map(str, visible))}")
    return options.device if options.device is not None else visible[0]


def _compiler() -> dict:
    """The compiler under test: which installed distribution provides `triton` here (zlh never
    installs one over it). None found is a preflight failure."""
    found = compiler_identity()
    if found is None:
        raise PreflightError("triton", f"this Python cannot import triton (python: "
                                       f"{sys.executable}): install the compiler build to "
                                       f"measure (FlagTree, pytorch-triton-rocm, ...) or "
                                       f"upstream Triton with `pip install 'zlh[triton]'`")
    return found


def _dtypes(adapter, op: str, backend, options: BenchOptions, shape_file):
    try:
        dtypes = (adapter.check_dtypes(op, backend, list(options.dtypes)) if options.dtypes
                  else adapter.default_dtypes(op, backend))
    except adapters.UnsupportedDtype as exc:
        raise UsageError(str(exc)) from None
    try:
        adapter.check_shapes(op, shape_file, options.level)
    except adapters.MissingShapes as exc:
        raise UsageError(str(exc)) from None
    return dtypes


def _caches(adapter, options: BenchOptions) -> tuple[Path, CacheEnv]:
    """The run's private cache root under --out and its caches: Triton's compile cache (kept
    past the run, or another run's kept one loaded from, where the options say) and the
    adapter's tuner cache. Only Triton's is kept or reused: the run that reuses one replays a
    record, whose configs no tuner cache decides; sharing the tuner cache too would save
    nothing and would let one run's tuning reach the other."""
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    root = Path(options.out) / f".cache-{stamp}"
    kept = Path(options.out) / f"{KEPT_PREFIX}{stamp}" if options.keep_compile_cache else None
    if kept is not None:
        kept.mkdir(parents=True, exist_ok=True)   # there for a later run even if none compiles
    return root, compile_cache(root, kept, options.compile_cache).merged(
        _tuner_cache(adapter, root, options))


def _tuner_cache(adapter, cache_root: Path, options: BenchOptions) -> CacheEnv:
    isolated = options.isolate_tuner_cache or options.sweep_ms is not None   # (--sweep-ms)
    tuner = adapter.tuner_cache(cache_root, isolated, os.environ)
    return CacheEnv(dict(tuner.env), tuner.description, tuple(tuner.private_dirs))


def find_record_run(path: str, op: str, backend: str) -> Path:
    """`--replay DIR`: a record run of this op, or a root holding `<op>_*` record runs (the
    newest that completed is taken: a later run cut short by Ctrl-C does not hide it; with
    none complete, the newest, refused below with its status). Validated here, so a bad
    directory fails before anything runs."""
    root = Path(path)
    if (root / "run.json").exists() or (root / autotune.META_FILE).exists():
        candidate = root
    else:
        runs = find_runs(root, op, mode="record")
        whole = [run for run in runs if load_info(run).status == COMPLETE]
        candidate = whole[-1] if whole else runs[-1] if runs else root
    autotune.load_record_dir(candidate, backend)
    recorded_op = None
    if os.path.lexists(candidate / "run.json"):     # refused as `zlh ab --replay` refuses it
        run = load_info(candidate)
        if os.environ.get(REPLAY_PARTIAL_ENV) != "1":
            check_complete(run, spelling.option("replay", str(candidate)),
                           "replay from a record run that completed")
        recorded_op = run.info.get("op")
    if recorded_op not in (None, op):
        raise UsageError(f"{spelling.option('replay', str(candidate))}: recorded op "
                         f"{recorded_op!r}, not {op!r}")
    return candidate
