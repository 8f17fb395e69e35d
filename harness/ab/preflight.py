"""Checks before `zlh ab` starts its first process: everything `zlh bench` would refuse.

A bad op, dtype, backend, shape file, environment switch, interpreter, scrub pattern or
`--root` would otherwise cost a process per side, leave a `runs/ab_*` behind and come back as
"side A failed"; here it is one line and the exit code `zlh bench` gives it (2 bad input,
3 preflight, 4 a run that must not be compared), and nothing is created.

The bench checks run in this process once per side, with that side's environment (a switch
such as ZLH_BUILTIN_SLOW is read from it); a side with another interpreter, or whose
environment changes Python's import path, is also asked to import zlh's dependencies.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import backends

from ..common import spelling
from ..common.environ import IMPORT_PREFIXES
from ..common.errors import CaliberError, PreflightError, UsageError, one_line
from ..common.files import check_output_dir
from ..common.process import check_runnable
from ..launch import launcher
from ..compile.ir.fingerprint import compile_scrub
from ..common.lock import in_use, root_in_use
from ..run.options import BenchOptions
from ..run.plan import plan_bench, preserved_environ
from ..run.shapes import ShapeFileError, load_shape_file
from ..store.caliber import UNTIMED
from ..store.reader import AB_ROOT_FILES, StoredRun, load_run, refuse_run_dir
from ..store.reader import check_complete as refuse_unfinished
from .sides import ABPlan, Side, env_for

# What a side's interpreter must import to run `zlh bench`.
IMPORTS = ("harness", "numpy", "yaml", "click", "tabulate", "torch", "triton")
_PROBE = ("import importlib, sys\n"
          "print(sys.executable)\n"
          "for name in sys.argv[1:]:\n"
          "    try:\n"
          "        importlib.import_module(name)\n"
          "    except BaseException as exc:\n"
          "        why = ' '.join(f'{name}: {type(exc).__name__}: {exc}'.split())\n"
          "        print('cannot import ' + why[:300])\n"
          "        sys.exit(3)\n"
          "print('ZLH_PROBE_OK')\n")
PROBE_TIMEOUT_S = 300.0


# Files an A/B writes at the top of its root: a root holding one of them holds an earlier
# A/B (or calibration), whose report and status a new one would replace or mix with its own.


ROOT_IN_USE = "or give another --root"      # what to do when another command holds --root


def check_new_root(root: Path) -> None:
    """`--root` is a writable directory that no other command holds now (one line naming
    it) and that holds no earlier A/B."""
    check_output_dir(root, "--root")
    holder = root_in_use(root) if Path(root).is_dir() else None
    if holder:
        raise UsageError(in_use(root, holder, ROOT_IN_USE))
    refuse_run_dir(root, "--root")
    found = [name for name in AB_ROOT_FILES if (Path(root) / name).exists()]
    if found:
        raise UsageError(f"--root {root} already holds an A/B ({', '.join(found)}); a new one "
                         f"would replace its report: give a new --root")


def check_plan(plan: ABPlan) -> None:
    """Every input of a two-sided A/B, before the root or any process exists."""
    check_scrub(plan.scrub)
    check_new_root(plan.root)
    refuse_run_dirs_as_ops(plan.ops)
    spaces = [check_side(plan.ops, plan.options, side, flag)
              for flag, side in (("--python-a", plan.a), ("--python-b", plan.b))]
    if spaces[0] != spaces[1] and not plan.allow_caliber_mismatch:
        raise CaliberError(tuning_space_refusal(*spaces))


def refuse_run_dirs_as_ops(ops) -> None:
    """UsageError for a run directory given where both sides run an op."""
    for op in ops:
        if _names_run_dir(op):
            raise UsageError(f"{op} is a run directory, not an op; to compare two existing "
                             f"runs give them without --switch/--env-*/--python-*/--recipe")


def tuning_space_refusal(a: dict, b: dict) -> str:
    """One line: the sides' tuning-space switches differ (A/B of one config space only)."""
    names = sorted(set(a) | set(b))
    shown = ", ".join(f"{n}: A={a.get(n, 'off')!s} B={b.get(n, 'off')!s}" for n in names)
    return (f"!!! [caliber] tuning_space differs ({shown}): the library would tune over "
            f"different config spaces, so the sides' configs are not comparable; set "
            f"{', '.join(names)} alike on both sides, or pass --allow-caliber-mismatch to "
            f"compare them deliberately")


def _names_run_dir(op: str) -> bool:
    """An op name no path can hold (too long for the file system) is left to the op check."""
    try:
        return (Path(op) / "run.json").is_file()
    except (OSError, ValueError):
        return False


def check_side(ops, options: BenchOptions, side: Side, flag: str) -> dict:
    """The bench checks under the side's environment; its interpreter's imports when they
    can differ from this process's. The side's tuning space (the adapter's switches that
    are on there)."""
    env = check_side_interpreter(side, flag, options.backend)
    with preserved_environ(env):
        bench = plan_bench(ops, options, dry_run=True)
        return bench.adapter.tuning_space(os.environ)


def check_side_interpreter(side: Side, flag: str, backend: str | None) -> dict:
    """PreflightError when the side's interpreter cannot import what a run needs (probed
    when it can differ from this process's: another interpreter, or a side environment
    setting a variable the interpreter or a library reads at start), naming what broke it:
    the interpreter (`flag`) or the side's variables (check=environment); UsageError for a
    side variable the backend replaces. The side's environment."""
    check_forced_env(side, backend)
    env = env_for(side, backend)
    read_at_start = sorted(k for k in side.env if k.startswith(IMPORT_PREFIXES)
                           and k != "PYTHONUNBUFFERED")
    if side.python != sys.executable or read_at_start:
        check_interpreter(side.python, flag, env, {k: side.env[k] for k in read_at_start},
                          side.label, own_python=side.python == sys.executable)
    return env


def check_forced_env(side: Side, backend: str | None) -> None:
    """UsageError (exit 2) for a side variable the backend sets to another value for every
    run (the cpu backend's TRITON_INTERPRET=1): the side would not run as described."""
    try:
        chosen = backends.backend_for(backend)
    except backends.UnknownBackend:
        return                            # the bench checks name the unknown backend
    for name, value in side.env.items():
        forced = chosen.forced_env().get(name)
        if forced is not None and (value is None or value.strip() != forced):
            shown = "unset" if value is None else f"{name}={value}"
            raise UsageError(f"side {side.label}: {shown} would not apply: backend "
                             f"{chosen.name} sets {name}={forced} for every run; drop it "
                             f"from the side, or run on a backend that leaves it alone")


def check_interpreter(python: str, flag: str, env: dict | None = None,
                      side_env: dict | None = None, side: str = "",
                      own_python: bool = False) -> str:
    """The interpreter's path once it imports everything a run needs; UsageError when it is
    not an executable file, PreflightError (exit 3) when an import fails: naming the python
    (check=interpreter, and the side's variables read at start, `side_env`, that may be to
    blame), or, for this process's own interpreter (`own_python`), those variables alone
    (check=environment)."""
    found = (python if os.sep in python or Path(python).exists()
             else shutil.which(python) or python)
    path = Path(found).absolute()
    check_runnable(python, flag, path)      # the wording of every interpreter check
    try:
        proc = launcher.capture([str(path), "-c", _PROBE, *IMPORTS], env, PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise PreflightError("interpreter", f"{flag} {python} cannot be run: "
                                            f"{one_line(exc)}") from None
    lines = [ln for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    if proc.returncode != 0:
        why = next((ln for ln in lines if ln.startswith("cannot import")),
                   next((ln for ln in lines if "Error" in ln and not ln.startswith(" ")),
                        lines[-1] if lines else f"exit status {proc.returncode}"))
        named = ", ".join(f"{k}={v!r}" for k, v in (side_env or {}).items())
        if named and own_python:
            raise PreflightError("environment", f"side {side}'s environment ({named}) breaks "
                                                f"the interpreter {path}: {one_line(why)}; "
                                                f"fix or drop the variable")
        which = lines[0] if lines and proc.stdout.strip() else path
        also = f" (side {side}'s environment also sets {named})" if named else ""
        raise PreflightError("interpreter", f"{flag} {python} (python: {which}) {why}{also}")
    if "ZLH_PROBE_OK" not in proc.stdout.splitlines():
        raise PreflightError("interpreter", f"{flag} {python} (python: {path}) did not run the "
                                            f"import check (is it a Python interpreter?)")
    return lines[0] if lines else str(path)


def check_scrub(patterns) -> None:
    try:
        compile_scrub(patterns or ())
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_complete(run: StoredRun, where: str, allow_partial: bool) -> None:
    """A run that did not complete is compared only with --allow-partial (exit 4)."""
    if not allow_partial:
        refuse_unfinished(run, where, "add --allow-partial to compare the cases it measured")


def check_replay(run: StoredRun, options: BenchOptions, root: Path, allow_partial: bool,
                 side_b: Side) -> None:
    """`zlh ab --replay RUN_A`: RUN_A complete, side B's options valid here, the record
    usable on the backend side B would run on (another backend's record is bad input)."""
    check_new_root(root)
    check_complete(run, f"--replay {run.path}", allow_partial)
    if run.caliber is None:             # the guard would refuse side B after running it
        raise CaliberError(f"--replay {run.path}: its run.json has no caliber, so side B "
                           f"would have no identity to be compared with")
    if run.caliber.timer == UNTIMED:     # the guard would refuse side B after running it
        raise CaliberError(f"--replay {run.path}: it timed nothing (zlh bench --no-timing, "
                           f"caliber timer {UNTIMED}), so side B's times would have nothing "
                           f"to be compared with; time {run.op} on side A first (zlh bench "
                           f"without --no-timing) and replay that run")
    recorded = run.caliber.backend if run.caliber else None
    if recorded in backends.backend_names() and (
            options.backend is None or _same_backend(options.backend, recorded)):
        backend = backends.get_backend(recorded)
        if not backend.is_available():
            raise UsageError(f"--replay {run.path}: recorded on backend {recorded}, which has "
                             f"no usable device here; replay it on a {recorded} machine")
    check_side([run.op], options.replace(replay=str(run.path)), side_b, "--python-b")


def check_replay_caliber(run_a, base: BenchOptions, options: BenchOptions, given) -> None:
    """`zlh ab --replay RUN_A` told a caliber option (`--inputs`, `--pace-us`, `--seed`, ...)
    other than RUN_A's value: the guard would refuse side B after running it, so it is refused
    now (the caller skips this with --allow-caliber-mismatch)."""
    differ = base.caliber_differences(options, given)
    if differ:
        option, name = differ[0], differ[0].name
        raise CaliberError(f"{spelling.option(name)}: side B would measure with "
                           f"{options.value(name)!r}, {run_a} was measured with "
                           f"{base.value(name)!r} (caliber {option.caliber}); leave it out to "
                           f"measure as side A did, or add --allow-caliber-mismatch")


def check_replay_shapes(run_a, options: BenchOptions) -> None:
    """The shape file side B would read against the shapes side A measured (its caliber's
    shape_mode names the file by content): one given now that differs, or A's own file
    edited since, is refused before B runs, not by the guard after it ran."""
    caliber = load_run(run_a).caliber
    mode = caliber.shape_mode if caliber is not None else None
    if not mode:
        return
    if not options.shapes:
        measured = None
    else:
        try:
            measured = "file:" + load_shape_file(options.shapes).sha256[:16]
        except ShapeFileError:
            return                  # the run's own check says what is wrong with the file
    if measured is not None and measured != mode or measured is None and mode.startswith(
            "file:"):
        now = f"{options.shapes} ({measured})" if measured else "the adapter's own shapes"
        raise CaliberError(f"{spelling.option('shapes')}: side B would measure {now}, "
                           f"{run_a} was measured with shape_mode {mode} (the shape file "
                           f"differs, or was edited since); give side A's shapes, or add "
                           f"--allow-caliber-mismatch")


def _same_backend(name: str, other: str) -> bool:
    try:
        return backends.get_backend(name).name == other
    except backends.UnknownBackend:
        return False
