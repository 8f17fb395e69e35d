"""`zlh ab`."""
from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import click
from click.core import ParameterSource

from ..ab import gate, orchestrate
from ..ab.preflight import check_new_root, check_scrub, refuse_run_dirs_as_ops
from ..ab.recipe import load_recipe
from ..ab.round_budget import AS_GIVEN
from ..ab.render import render_terminal
from ..ab.report import reports_so_far, to_json, write_reports
from ..ab.rescore import BEFORE, REPORT_FILES, rescore as rescore_root
from ..ab.sides import ABPlan, sides_from_env, sides_from_switch
from ..calibrate.noise import NoiseFloor
from ..common import errors
from ..common.files import check_path_text
from ..common.progress import Meter
from ..common import style
from ..common.schema import stamp
from ..corpus.files import refuse_corpus_root
from ..corpus.selection import parse_ops_file
from ..run.options import refuse_unhooked
from ..store.rundir import RUN_JSON
from .group import main
from .output import complete_ops_or_runs
from .rounds import (AUTO_NAMES, NAMES as ROUNDS_NAMES, WORKER_NAMES, budget_given,
                     rounds_options, rounds_plan)
from .common import (BENCH_NAMES, bench_options, default_ops, echo_err, echo_out, echo_routed,
                     finite, gate_option, given_options, handles_errors, keeps_on_interrupt,
                     not_empty, options_from, parse_bench_args, refuse_beside)


@main.command()
@click.argument("args", nargs=-1, shell_complete=complete_ops_or_runs)
@click.option("--replay", "replay_run", default=None, metavar="RUN_A", callback=not_empty,
              help="Side A is this existing record run; side B is run now replaying its "
                   "configs with its caliber (bench options given here override).")
@click.option("--switch", default=None, metavar="NAME=A,B", callback=not_empty,
              help="An environment switch: side A gets NAME=A, side B NAME=B.")
@click.option("--env-a", multiple=True, metavar="K=V", help="Environment for side A (repeatable).")
@click.option("--env-b", multiple=True, metavar="K=V", help="Environment for side B (repeatable).")
@click.option("--python-a", default=None, metavar="PATH", callback=not_empty,
              help="Interpreter for side A (e.g. a venv with one compiler build); checked "
                   "before the first run (it must import zlh's dependencies and triton).")
@click.option("--python-b", default=None, metavar="PATH", callback=not_empty,
              help="Interpreter for side B.")
@click.option("--recipe", default=None, metavar="FILE",
              type=click.Path(), callback=not_empty,
              help="A/B recipe (YAML), see recipes/.")
@rounds_options(1, None, "Pairs to run (ABBA order); round 1's A records (round 0's with "
                         "--round-process turns, turns-fresh, twins or auto), every other run "
                         "replays it. Default 1. "
                         "auto: a pilot of --min-rounds, then as many as the widest shape "
                         "needs for --target-pct, at most --max-rounds. "
                         "Not with --replay (its side A is a stored run).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=3600.0,
              callback=finite, show_default=True,
              help="Per-run limit in seconds (the whole process group is killed; recorded as "
                   "rc 124).")
@click.option("--root", default=None, metavar="DIR",
              type=click.Path(), callback=not_empty,
              help="Where runs, status.tsv and reports go. Default: runs/ab_<timestamp>.")
@click.option("--allow-caliber-mismatch", is_flag=True,
              help="Print caliber problems and report anyway.")
@click.option("--allow-partial", is_flag=True,
              help="Compare a run that did not complete (running, abandoned, interrupted, "
                   "crashed, failed, poisoned): the cases it measured, with a warning.")
@click.option("--allow-no-ir-diff", is_flag=True,
              help="Keep running rounds although both sides generated identical TTGIR.")
@click.option("--scrub", multiple=True, metavar="REGEX",
              help="Extra IR scrub pattern (repeatable), checked before anything runs.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (rows with delta_pct, summary) instead of tables.")
@click.option("--noise-floor", "noise_floor", default=None, metavar="FILE",
              type=click.Path(), callback=not_empty,
              help="calibration.json of an A/A `zlh calibrate`: label each significant delta "
                   "within its shape's noise floor `within noise`.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
@click.option("--fail-on", "fail_on", multiple=True, callback=gate_option,
              metavar="slower:PCT|geomean:PCT|broken",
              help="CI gate (repeatable): exit 6 when a shape is significantly slower on B by "
                   "more than PCT % (slower:2%), an op's geomean is (geomean:1%), or B failed "
                   "a case A ran (broken).")
@click.option("--ops-file", default=None, metavar="FILE", callback=not_empty,
              help="The ops to run on both sides, one per line (e.g. a screen's "
                   "ir_changed.txt); # comments.")
@click.option("--rescore", default=None, metavar="ROOT", type=click.Path(file_okay=False),
              callback=not_empty,
              help="Recompute ROOT's report.json/csv/html from its stored runs (with --scrub "
                   "patterns added, --noise-floor labels); keeps the ones from before the "
                   "first rescore as *.before-rescore. Runs nothing.")
@bench_options
@click.pass_context
@handles_errors
def ab(ctx, args, replay_run, recipe, root, as_json, quiet, noise_floor, fail_on, ops_file,
       rescore, **params):
    """Compare two sides: `zlh ab RUN_A RUN_B`, `zlh ab --replay RUN_A [bench options]`, or
    `zlh ab OP... --switch NAME=a,b | --env-a K=V --env-b K=V | --python-a P --python-b P |
    --recipe FILE [--rounds N|auto] [--round-process persistent|turns|turns-fresh|twins]`
    (both sides run here; each run a fresh process unless --round-process persistent or
    turns).

    delta % = (A / B - 1) x 100: positive means B is faster. Every input is checked before
    the first run. Exit status: 0 reported, 1 a run failed, outputs differ or nothing paired,
    2 bad input, 3 preflight failed, 4 caliber or unfinished-run refusal, 6 a --fail-on gate
    tripped.
    """
    lines: list[str] = []
    echo = lines.append if as_json else echo_routed
    given = given_options(ctx)
    typed = tuple(args)
    floor = NoiseFloor.load(noise_floor) if noise_floor else None
    if rescore is not None:
        sys.exit(_rescore(ctx, rescore, args, params, floor))
    if ops_file:
        args = tuple(args) + _ops_from_file(ops_file)
    if recipe:
        args, params, given = _apply_recipe(recipe, args, params, given)
    check_scrub(params["scrub"])
    refuse_corpus_root(root, "the A/B's")
    root_path = Path(root or f"runs/ab_{time.strftime('%Y%m%d-%H%M%S')}")
    running = any(params.get(k) for k in ("switch", "env_a", "env_b", "python_a", "python_b"))
    if replay_run:
        if args or running:
            raise errors.UsageError("--replay RUN_A takes no ops or side options")
        _refuse_rounds_with_replay(params)
        refuse_unhooked(options_from(given), "zlh ab --replay")
        report, code = keeps_on_interrupt(
            root_path, None, lambda: _json_on_interrupt(
                as_json, root_path, lambda: orchestrate.replay_against(
                    replay_run, given, root_path, params["timeout_s"], echo,
                    params["allow_caliber_mismatch"], params["scrub"],
                    params["allow_partial"], floor)),
            said=lambda: _side_b_kept(replay_run, root_path))
        reports = [report] if report else []
    elif running:
        with Meter("ab", show=False if quiet else None) as meter:
            reports, code = keeps_on_interrupt(
                root_path, f"zlh ab --rescore {shlex.quote(str(root_path))}",
                lambda: _json_on_interrupt(as_json, root_path, lambda: _run_both(
                    args, params, given, root_path,
                    meter.counted(echo) if not as_json else echo,
                    None if quiet else meter.counted(echo_err), floor), fail_on),
                kept="the runs of finished rounds", then="reports them")
        echo(f"runs, status.tsv and report.json/csv under {root_path}")
    else:
        reports, code = _compare_two(ctx, args, params, root, echo, floor, typed)
    found = gate.violations(fail_on, reports)
    _print(reports, lines, as_json, printed=running and not replay_run, quiet=quiet,
           extra={"fail_on": gate.to_json(fail_on, found)} if fail_on else None)
    sys.exit(gate.exit_code(code, found, echo_err))


def _side_b_kept(run_a: str, root: Path) -> str:
    """After `zlh ab --replay RUN_A` was cut short: where side B's run keeps the cases it
    measured, and the command that compares them (or that it measured none)."""
    runs = sorted((p.parent for p in root.rglob(RUN_JSON)), key=lambda p: p.stat().st_mtime)
    if not runs:
        return f"side B made no run under {root} (nothing was measured)"
    return (f"side B's cases measured so far are in {runs[-1]}: zlh ab {shlex.quote(run_a)} "
            f"{shlex.quote(str(runs[-1]))} --allow-partial compares them")


def _refuse_rounds_with_replay(params: dict) -> None:
    """A rounds option beside --replay RUN_A, named: A is stored, no later round can run it
    again."""
    given = [name for name in ("rounds", *AUTO_NAMES, *WORKER_NAMES)
             if params[name] is not None]
    given += ["round_process"] if params["round_process"] != "fresh" else []
    given += ["round_budget"] if params["round_budget"] != AS_GIVEN else []
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise errors.UsageError(
            f"{flag} does not apply with --replay RUN_A: side A is a stored run that is not "
            f"run again, so a replay is one pair; drop {flag}, or run both sides here (zlh "
            f"ab OP --switch/--env-a/--python-a/--recipe --rounds N)")


def _ops_from_file(path: str) -> tuple[str, ...]:
    """Op names from an ops file; per-op dtypes belong to batch and screen (zlh ab runs every
    op with the same bench options)."""
    items = parse_ops_file(path)
    with_dtypes = [i.op for i in items if i.dtypes]
    if with_dtypes:
        raise errors.UsageError(f"{path}: per-op dtypes ({', '.join(with_dtypes[:3])}) are for "
                                f"zlh batch and zlh screen; zlh ab takes --dtypes for every op")
    if not items:
        raise errors.UsageError(f"{path} names no op")
    return tuple(i.op for i in items)


def _compare_two(ctx, args, params: dict, root, echo, floor, typed=()):
    """`zlh ab RUN_A RUN_B`: options that only apply when zlh runs the sides are refused
    (`typed`: the arguments as given, before an ops file or recipe added ops)."""
    running_only = {*BENCH_NAMES, *ROUNDS_NAMES, "timeout_s", "recipe", "ops_file"}
    named = [param.opts[0] for param in ctx.command.params if param.name in running_only
             and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE]
    if len(args) != 2 and not (len(typed) == 2 and named):
        raise errors.UsageError("give two run directories (zlh ab RUN_A RUN_B), --replay "
                                "RUN_A, or ops with --switch/--env-a/--python-a/--recipe")
    if named:
        verb = "applies" if len(named) == 1 else "apply"
        raise errors.UsageError(f"{', '.join(named)} only {verb} when zlh ab runs the sides; "
                                f"two existing runs are compared as they were measured")
    if root:
        check_new_root(Path(root))
    report, code = orchestrate.compare_existing(args[0], args[1],
                                                params["allow_caliber_mismatch"], echo,
                                                scrub=params["scrub"],
                                                allow_partial=params["allow_partial"])
    reports = _labelled([report] if report else [], floor)
    if reports and root:
        with orchestrate.held_root(Path(root)):
            check_new_root(Path(root))          # under the lock: no other A/B began there
            write_reports(Path(root), reports)
    return reports, code


def _apply_recipe(recipe: str, args, params: dict, given: dict):
    """A recipe fills what the command line left open; the command line wins."""
    spec = load_recipe(recipe)
    params = dict(params)
    args = tuple(args) or tuple(spec.get("ops", ()))
    params["switch"] = params["switch"] or spec.get("switch")
    for key in ("env_a", "env_b"):              # a variable the command line sets wins
        named = {item.partition("=")[0] for item in params[key]}
        params[key] = tuple(f"{k}={v}" for k, v in (spec.get(key) or {}).items()
                            if k not in named) + tuple(params[key])
    params["python_a"] = params["python_a"] or spec.get("python_a")
    params["python_b"] = params["python_b"] or spec.get("python_b")
    params["rounds"] = params["rounds"] or spec.get("rounds")
    params["scrub"] = tuple(params["scrub"]) + tuple(spec.get("scrub") or ())
    given = {**parse_bench_args(spec.get("bench_args", []), f"recipe {recipe}"), **given}
    return args, params, given


def _rescore(ctx, rescore: str, args, params: dict, floor) -> int:
    """`zlh ab --rescore ROOT`: the report recomputed from ROOT's runs; its exit status."""
    if args:
        raise errors.UsageError("--rescore ROOT takes the ops of ROOT; name none")
    refuse_beside(ctx, "rescore", allowed=("scrub", "noise_floor", "allow_caliber_mismatch",
                                           "quiet"))
    check_scrub(params["scrub"])
    check_path_text(rescore, "--rescore")
    reports, code = rescore_root(Path(rescore), list(params["scrub"]), floor,
                                 params["allow_caliber_mismatch"], echo_routed)
    for op_report in reports:
        echo_out(render_terminal(op_report, colour=style.colour()))
    kept = (Path(rescore) / (REPORT_FILES[0] + BEFORE)).is_file()
    echo_routed(f"report.json/csv recomputed from the runs under {rescore} "
                f"({len(reports)} op(s))" + ("; the report from before the first rescore is "
                                             "kept as *.before-rescore" if kept else ""))
    return code


def _labelled(reports, floor):
    for report in reports if floor is not None else ():
        floor.label(report)
    return reports


def _run_both(args, params: dict, given: dict, root: Path, echo, progress, floor=None):
    args = tuple(args) or tuple(default_ops(options_from(given)))
    if not args:
        raise errors.UsageError("name at least one op to run on both sides")
    refuse_run_dirs_as_ops(args)              # before any interpreter is probed
    if params["switch"] and (params["env_a"] or params["env_b"]):
        raise errors.UsageError("use either --switch or --env-a/--env-b")
    side_a, side_b = (sides_from_switch(params["switch"]) if params["switch"]
                      else sides_from_env(params["env_a"], params["env_b"]))
    for side, python in ((side_a, params["python_a"]), (side_b, params["python_b"])):
        if python:
            side.python = python
            side.description = (side.description + f" python={python}").strip()
    rounds, auto, runner = rounds_plan(params)
    options = options_from(budget_given(params, given))
    refuse_unhooked(options, "zlh ab")
    plan = ABPlan(
        ops=list(dict.fromkeys(args)), a=side_a, b=side_b, options=options,
        root=root, rounds=rounds, auto=auto, runner=runner, timeout_s=params["timeout_s"],
        allow_caliber_mismatch=params["allow_caliber_mismatch"],
        allow_no_ir_diff=params["allow_no_ir_diff"], scrub=list(params["scrub"]),
        switch_name=(params["switch"] or "").partition("=")[0], noise_floor=floor)
    return orchestrate.run_ab(plan, echo, progress)


def _json_on_interrupt(as_json: bool, root: Path, run, fail_on=()):
    """`run()`; with --json, a Ctrl-C or signal still leaves the JSON on stdout: the ops
    finished before it (report.json) and the gates over them, marked interrupted."""
    try:
        return run()
    except (KeyboardInterrupt, errors.Terminated) as exc:
        if as_json:
            done = reports_so_far(root)
            gates = {"fail_on": gate.to_json(fail_on, gate.violations(fail_on, done))} \
                if fail_on else {}
            echo_out(json.dumps(stamp({**to_json(done), **gates, "interrupted": True,
                                       "exit_code": errors.interrupt_exit_code(exc)}),
                                  allow_nan=False, default=str))
        raise


def _print(reports, lines: list[str], as_json: bool, printed: bool, extra=None,
           quiet: bool = False) -> None:
    """With --json: the lines held back go to stderr (with -q only warnings and refusals),
    the JSON to stdout; else the reports' tables, where the run did not print them."""
    if as_json:
        for line in lines:
            if not quiet or str(line).lstrip().startswith(("WARNING", "!!!")):
                echo_err(line)
        if reports:
            echo_out(json.dumps(stamp({**to_json(reports), **(extra or {})}), allow_nan=False,
                                default=str))
    elif not printed:
        for report in reports:
            echo_out(render_terminal(report, colour=style.colour()))
