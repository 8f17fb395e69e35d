"""A corpus plan checked before any op runs.

What would fail every op the same way — an adapter or backend that does not exist, a dtype
name that is no torch dtype, a shape file that is not there, a timer the backend lacks, an
interpreter that is not a program, an op the adapter does not know, an op listed twice —
is one usage line now, not one FAIL per op after its retries. The same checks run on a new
plan (from the command line) and on a resumed one (from the files of its root), so an edited
or damaged batch.json, screen.json or campaign.json is refused the way a bad option is.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import adapters

from ..common.lock import only_lock, root_in_use
from ..common import spelling
from ..common.errors import CaliberError, UsageError, one_line
from ..common.process import check_runnable
from ..measure.timers import GRAPH, resolve_timer_name
from ..run.options import BenchOptions
from ..run.plan import check_timer, options_backend, preserved_environ
from ..run.plant import check_plant
from ..run.shapes import ShapeFileError, load_shape_file
from .files import read_batch_json, replay_source
from .selection import check_dtype_names

MAX_RETRIES = 5                 # the --retries range of the corpus commands


def corpus_adapter(options: BenchOptions, vllm_dir: str | None, where: str = ""):
    """The adapter the options name (default: flaggems when a checkout is named, else
    builtin); UsageError for an unknown name or --cases beside another adapter."""
    name = options.adapter or ("user" if options.cases else
                               adapters.default_adapter_name(options.flaggems_dir))
    if options.cases and name != "user":
        raise UsageError(f"{_prefix(where)}--cases names user cases; it cannot be combined "
                         f"with --adapter {name} (leave --adapter out)")
    config = {"cases": options.cases} if options.cases else {}
    try:
        return adapters.get_adapter(name, flaggems_dir=options.flaggems_dir,
                                    vllm_dir=vllm_dir, **config)
    except adapters.UnknownAdapter as exc:
        raise UsageError(_prefix(where) + str(exc)) from None


def check_plan(plan, adapter, where: str = "", pythons: tuple[str, ...] = (),
               resolve: bool = False) -> None:
    """UsageError (one line, prefixed with `where`, the file a resumed plan came from) for
    whatever in `plan` (a BatchPlan) would make every op fail; `resolve`: also ask the
    adapter for every op's name (a new plan's names were resolved when it was selected)."""
    p = _prefix(where)
    if not plan.items and not getattr(plan, "shard", None):    # a shard may hold none
        raise UsageError(f"{p}no op to run")
    seen = set()
    for item in plan.items:
        if item.op in seen:
            raise UsageError(f"{p}op {item.op} is listed twice; each op runs once")
        seen.add(item.op)
        check_dtype_names(item.dtypes, f"{p}op {item.op}")
    check_dtype_names(plan.options.dtypes, f"{where}: options.dtypes" if where else "--dtypes")
    if plan.options.device is not None:
        raise UsageError(f"{p}--device {plan.options.device}: a corpus command spreads its "
                         f"ops over --devices 0,1,… (one lane each); leave --device out")
    if not 0 <= plan.retries <= MAX_RETRIES:
        raise UsageError(f"{p}retries {plan.retries}: expected 0 to {MAX_RETRIES}")
    try:
        backend = options_backend(plan.options)
        check_timer(plan.options, backend)
        check_plant(plan.options.plant_pct,            # as `zlh bench --plant-pct` checks it
                    plan.options.replay or getattr(plan, "replay_root", None), backend)
        if plan.options.shapes:
            load_shape_file(plan.options.shapes)
    except (UsageError, ShapeFileError) as exc:
        raise UsageError(p + str(exc)) from None
    for python in (*pythons, plan.python):
        check_executable(python, where)
    try:
        adapter.check_environment(os.environ)       # a switch every op's run would refuse
    except UsageError as exc:
        raise UsageError(p + exc.message) from None
    check_cases_source(adapter, plan.options, (*pythons, plan.python), p)
    if resolve:
        for item in plan.items:
            try:
                adapter.resolve(item.op)
            except adapters.UnknownOp as exc:
                raise UsageError(p + one_line(exc, 300)) from None


def check_cases_source(adapter, options: BenchOptions, pythons, prefix: str = "") -> None:
    """`--cases MODULE:ATTR` imported here, under the backend's environment, and checked to
    name something that gives cases (not called), so that a module or a number is refused
    once rather than failing every op. Left to the runs when they use another interpreter."""
    check = getattr(adapter, "check_source", None)
    if check is None or not options.cases or any(p != sys.executable for p in pythons):
        return
    with preserved_environ():
        options_backend(options).activate_env()
        try:
            check()
        except UsageError as exc:
            raise UsageError(prefix + str(exc)) from None


def check_executable(python: str, where: str = "") -> None:
    """An interpreter path that exists and may be run (without starting it: a corpus plan
    names an interpreter resolved when the plan was made; `zlh ab` also probes its imports in
    ab/preflight.check_interpreter). Worded as every interpreter check is
    (common/process.check_runnable)."""
    check_runnable(python, where)


def check_root(path: str | os.PathLike, kind: str, flag: str) -> Path:
    """A root to resume or read: refused in one line when it is a file or is missing, and
    (for --resume) when it is empty but for a lock: nothing was started there."""
    root = Path(path)
    if str(path) == "":
        raise UsageError(f"{flag}: an empty path is not a {kind} root")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a {kind} root")
    if flag == "--resume" and only_lock(root):
        raise UsageError(f"{flag} {path}: no {kind} was started there (the folder is empty, "
                         f"its plan was never written); start a new {kind} into it instead")
    return root


def check_replay_root(path: str, out: str | None) -> Path:
    """`zlh batch --replay BATCH_DIR`: a batch root that exists, is not the new batch's own
    --out and is not being written now (its absolute path is kept, so a resume from
    elsewhere finds it)."""
    root = check_root(path, "batch", "--replay")
    if not root.is_dir():
        raise UsageError(f"--replay {path}: no such batch root (a finished `zlh batch --out` "
                         f"folder is expected)")
    read_batch_json(root)
    if out is not None and Path(out).resolve() == root.resolve():
        raise UsageError(f"--replay {path} is also --out: a batch replays another batch's "
                         f"records into a root of its own")
    holder = root_in_use(root)
    if holder:
        raise UsageError(f"--replay {path} is still being written ({holder}); replay it once "
                         f"that has ended")
    return root.resolve()


def plan_backend(options: BenchOptions) -> str:
    """The name of the backend a corpus plan's runs use (the named one, or the one found)."""
    return options_backend(options).name


def graph_timed(timer: str, backend) -> bool:
    """Whether a corpus plan's runs capture graphs by zlh's choice (`--timer auto` where it
    picks graphs), with device events to fall back to; an explicit `--timer graph` is kept
    as asked."""
    return timer == "auto" and resolve_timer_name(timer, backend) == GRAPH and \
        backend.supports_events


def check_replay_plan(plan) -> None:
    """A batch with `--replay ROOT`: ROOT's runs were made on this backend, and at least one
    selected op has a record there (else nothing would be measured: one line now)."""
    root = plan.replay_root
    caliber = read_batch_json(root).get("caliber")
    recorded = caliber.get("backend") if isinstance(caliber, dict) else None
    backend = plan_backend(plan.options)
    if isinstance(recorded, str) and recorded != backend:
        raise UsageError(f"--replay {root}: its ops were recorded on backend {recorded}; this "
                         f"batch runs on {backend} (a record replays on its own backend only)")
    _same_caliber_options(root, plan.options)
    if not any(isinstance(replay_source(root, item.op, backend), Path) for item in plan.items):
        raise UsageError(f"--replay {root}: none of the {len(plan.items)} selected ops has a "
                         f"usable record run there (see its ops_status.csv)")


def _same_caliber_options(root: Path, options: BenchOptions) -> None:
    """The options that set the caliber (inputs, seed, budgets, pacing, ...) as ROOT's batch
    recorded them: a replayed run measured otherwise could not be compared with ROOT's runs,
    so the batch is refused before it runs (one line naming the flag and both values)."""
    stored = read_batch_json(root).get("options")
    if not isinstance(stored, dict):
        return                                   # an older root: nothing to compare
    try:
        with spelling.as_keywords():
            recorded = BenchOptions.from_flat(**{k: v for k, v in stored.items() if k != "out"})
    except UsageError:
        return                                   # read with its own errors elsewhere
    differ = recorded.caliber_differences(options)
    if differ:
        option = differ[0]
        raise CaliberError(
            f"--replay {root}: its ops were measured with {spelling.option(option.name)} "
            f"{recorded.value(option.name)!r}, this batch would measure with "
            f"{options.value(option.name)!r} (caliber {option.caliber}): give it the "
            f"value {root} recorded, so the runs compare")


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""
