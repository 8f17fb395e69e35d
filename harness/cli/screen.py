"""`zlh screen`."""
from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from ..ab.preflight import check_side_interpreter
from ..ab.recipe import load_recipe
from ..ab.sides import sides_from_env, sides_from_switch
from ..common import errors
from ..common.progress import Meter
from ..compile.ir.fingerprint import compile_scrub
from ..corpus.batch import BatchPlan
from ..corpus.environment import check_resume_env, environment_switches
from ..corpus.screen import (TIMING_ALL, TIMING_MODES, Screen, ScreenPlan, check_resume_files,
                             mend_side_plans, read_plan, record_screen_env_change,
                             record_screen_run_fields, summary_lines, write_ir_changed, write_plan,
                             write_side_plan)
from ..corpus.screen_plan import side_folder
from ..corpus.screen import rescore as rescore_root
from ..corpus.check import check_executable, check_plan, check_root, corpus_adapter
from ..corpus.selection import dismiss_list, select
from ..corpus.sharding import ops_phrase, parse_shard, refuse_merged
from ..corpus.standby import record_overlap
from ..run.options import refuse_unhooked
from .group import main
from .devices import parse_devices
from .batch import (corpus_inventory, default_root, hold_root, interrupted_hint, new_root,
                    retry_statuses)
from .corpus_options import (corpus_lanes, env_change_option, executor_options,
                             lane_options, resumed_executor, selection_options, shard_option)
from .overlap import overlap_options, overlap_width_for, resumed_overlap
from .common import (bench_options, echo_err, given_options, handles_errors,
                     not_empty, options_from, parse_bench_args, refuse_beside,
                     refuse_vllm_beside)

SIDE_KEYS = ("switch", "env_a", "env_b", "python_a", "python_b")
# What --resume ROOT takes beside it (the rest comes from ROOT's plan).
RESUME_OPTIONS = ("vllm_dir", "retry", "allow_env_change", "overlap", "overlap_width",
                  "executor", "ray_address")


def sides_of(params: dict):
    """The two sides from --switch or --env-a/--env-b, with --python-a/--python-b."""
    if params.get("switch") and (params.get("env_a") or params.get("env_b")):
        raise errors.UsageError("use either --switch or --env-a/--env-b")
    if not any(params.get(k) for k in SIDE_KEYS):
        raise errors.UsageError("say what differs between the sides: --switch NAME=a,b, "
                                "--env-a/--env-b, --python-a/--python-b or --recipe")
    a, b = (sides_from_switch(params["switch"]) if params.get("switch")
            else sides_from_env(params.get("env_a"), params.get("env_b")))
    for side, python in ((a, params.get("python_a")), (b, params.get("python_b"))):
        if python:
            check_executable(python, f"--python-{side.label.lower()}")
            side.python = python
            side.description = (side.description + f" python={python}").strip()
    return a, b


def with_recipe(recipe: str | None, params: dict, given: dict) -> tuple[dict, dict]:
    """A recipe fills what the command line left open; the command line wins."""
    if not recipe:
        return params, given
    spec = load_recipe(recipe)
    params = dict(params)
    if not (params.get("all_ops") or params.get("ops") or params.get("ops_file")):
        params["ops"] = list(spec.get("ops") or ()) or None
    for key in ("switch", "python_a", "python_b"):
        params[key] = params.get(key) or spec.get(key)
    for key in ("env_a", "env_b"):
        params[key] = tuple(params.get(key) or ()) + tuple(
            f"{k}={v}" for k, v in (spec.get(key) or {}).items())
    params["scrub"] = tuple(params.get("scrub") or ()) + tuple(spec.get("scrub") or ())
    return params, {**parse_bench_args(spec.get("bench_args", []), f"recipe {recipe}"), **given}


def rounds_command(plan: ScreenPlan, ir_changed: Path) -> str:
    sides = []
    for label, side in (("a", plan.a), ("b", plan.b)):
        sides += [f"--env-{label}={k}={v}" for k, v in side.env.items() if v is not None]
        if side.python != sys.executable:
            sides.append(f"--python-{label}={side.python}")
    args = ["zlh", "ab", "--ops-file", str(ir_changed), *sides,
            *plan.base.options.replace(out="runs").to_argv(),
            *[f"--scrub={s}" for s in plan.scrub], "--rounds", "3"]
    return " ".join(shlex.quote(a) for a in args)


@main.command()
@selection_options
@click.option("--switch", default=None, metavar="NAME=A,B", callback=not_empty,
              help="An environment switch: side A gets NAME=A, side B NAME=B.")
@click.option("--env-a", multiple=True, metavar="K=V", help="Environment for side A.")
@click.option("--env-b", multiple=True, metavar="K=V", help="Environment for side B.")
@click.option("--python-a", default=None, callback=not_empty,
              metavar="PATH", help="Interpreter for side A.")
@click.option("--python-b", default=None, callback=not_empty,
              metavar="PATH", help="Interpreter for side B.")
@click.option("--recipe", default=None, metavar="FILE", callback=not_empty,
              type=click.Path(), help="A/B recipe (YAML), see recipes/.")
@click.option("--scrub", multiple=True, metavar="REGEX", help="Extra IR scrub pattern.")
@click.option("--timing", "timing", type=click.Choice(TIMING_MODES), default=TIMING_ALL,
              show_default=True,
              help="all: both sides time every op (a delta, or a noise floor, on every row); "
                   "changed: both sides run each case once untimed, the code decides the "
                   "verdict, and only IR_CHANGED ops are timed (NO_IR_DIFF rows get no "
                   "noise floor); none: verdicts only, nothing timed.")
@lane_options(unit="one side of an op", timeout_ends="status TIMEOUT, verdict NO_ROWS",
              fresh_help="Every run in its own zlh bench process.")
@overlap_options
@click.option("--root", default=None, metavar="DIR", callback=not_empty,
              type=click.Path(), help="Default: runs/screen_<timestamp>.")
@click.option("--resume", default=None, metavar="ROOT", callback=not_empty,
              type=click.Path(), help="Continue a killed screen.")
@click.option("--retry", default=None, metavar="FAIL,TIMEOUT,…", callback=not_empty,
              help="With --resume: also run again the ops whose side A or B finished with "
                   "these statuses (FAIL, TIMEOUT, CRASH, POISONED, SKIP); a retried A "
                   "reruns B too. Default: none.")
@click.option("--rescore", default=None, metavar="ROOT", type=click.Path(), callback=not_empty,
              help="Recompute every verdict of ROOT from its run directories (with --scrub "
                   "patterns added); keeps the table it replaced as screen.tsv.before-rescore "
                   "(once).")
@env_change_option("screen")
@shard_option
@executor_options
@bench_options
@click.pass_context
@handles_errors
def screen(ctx, all_ops, ops, ops_file, include_skipped, dismiss, no_dismiss, vllm_dir, recipe,
           scrub, devices, op_timeout, stall_timeout, retries, timing, fresh_process, overlap,
           overlap_width, root, resume, retry, rescore: str | None, allow_env_change, shard_text,
           executor, ray_address, **params):
    """One pair per op (A records, B replays A's record) and a verdict from the generated
    code: IR_CHANGED, NO_IR_DIFF, NO_TRITON or NO_ROWS (and BROKEN_BY_B).

    Exit status: 0 screened, 1 some op BROKEN_BY_B, 2 bad input, 3 preflight failed.
    """
    if rescore is not None:
        refuse_beside(ctx, "rescore", allowed=("scrub",))
        sys.exit(_rescore(rescore, scrub))
    statuses = retry_statuses(retry, resume)
    if resume is not None:
        refuse_beside(ctx, "resume", allowed=RESUME_OPTIONS)
        sys.exit(_resume(resume, vllm_dir, allow_env_change, statuses,
                         (overlap, overlap_width), executor, ray_address))
    if allow_env_change:
        raise errors.UsageError("--allow-env-change applies to --resume only")
    shard = parse_shard(shard_text)
    params = {**params, "all_ops": all_ops, "ops": ops, "ops_file": ops_file}
    params, given = with_recipe(recipe, params, given_options(ctx))
    a, b = sides_of(params)
    scrub = list(params.get("scrub") or scrub)
    _check_scrub(scrub)
    options = options_from(given)
    refuse_unhooked(options, "zlh screen")
    if timing != TIMING_ALL and not options.ir:
        raise errors.UsageError(f"--timing {timing} decides from the generated code alone, "
                                f"which --no-ir does not capture: leave out one of them")
    adapter = corpus_adapter(options, vllm_dir)
    refuse_vllm_beside(ctx, adapter)
    dismissed = dismiss_list(dismiss, all_ops, no_dismiss)
    whole, left_out = select(adapter, params["all_ops"], params["ops"], params["ops_file"],
                             include_skipped, dismissed, warn=echo_err)
    items = shard.take(whole) if shard else whole
    executor = executor or "local"
    width = overlap_width_for(executor, overlap, overlap_width)
    lanes = corpus_lanes(executor, ray_address, options.backend, parse_devices(devices))
    inventory = corpus_inventory(adapter)
    root_path = Path(root if root is not None else default_root("screen", shard))
    base = BatchPlan(root=root_path, items=items, devices=lanes, options=options,
                     op_timeout_s=op_timeout, stall_timeout_s=stall_timeout,
                     fresh_process=fresh_process, retries=retries,
                     argv=["zlh"] + sys.argv[1:], left_out=left_out, inventory=inventory,
                     env=environment_switches(adapter.env_prefixes), overlap=bool(overlap),
                     overlap_width=width,
                     shard=shard.record(whole, left_out) if shard else None, executor=executor,
                     ray_address=ray_address)
    check_plan(base, adapter, pythons=(a.python, b.python))
    _check_interpreters(a, b, options.backend, adapter=adapter)
    new_root(root_path, "--root", "screen")
    plan = ScreenPlan(root_path, base, a, b, scrub, timing)
    write_plan(plan)
    for side, timed in plan.batches():
        write_side_plan(plan, side, timed)
    click.echo(f"zlh screen: {ops_phrase(shard, len(items), len(whole))}, A[{a.description}] vs "
               f"B[{b.description}], {len(lanes)} device(s), timing {timing}"
               f"{overlap_phrase(timing, width) if overlap else ''} -> {root_path}")
    sys.exit(_run(plan, resume=False))


def overlap_phrase(timing: str, width: int) -> str:
    """What --overlap does to this screen: untimed pairs side by side, timed runs alone."""
    if timing == TIMING_ALL:
        return (", a warm spare worker per side (every run times: one at a time, each after "
                "a cool-down of the device)")
    return f", {width} untimed pairs at a time (timed runs one at a time, after them)"


def _rescore(rescore: str, scrub) -> int:
    """`--rescore ROOT`: every verdict again from ROOT's run directories."""
    _check_scrub(scrub)
    rescore_path = check_root(rescore, "screen", "--rescore")
    hold_root(rescore_path, "screen")
    rescored = rescore_root(rescore_path, list(scrub), click.echo, echo_err)
    return 1 if any(v.broken for v in rescored.values()) else 0


def _resume(resume: str, vllm_dir, allow_env_change: bool, statuses: tuple[str, ...],
            overlap: tuple = (None, None), executor: str | None = None,
            ray_address: str | None = None) -> int:
    """`--resume ROOT`: the plan ROOT holds, checked like a new one (its environment
    switches too), then the ops not finished (and those `statuses` name) run (by the
    executor ROOT recorded, unless `executor` names another); `overlap` ((on/off, width),
    each None where not given) switches overlap for the rest of the root."""
    plan = read_plan(check_root(resume, "screen", "--resume"))
    refuse_merged({"merged": plan.base.merged}, resume, "screen")
    other_executor = resumed_executor(plan.base, executor, ray_address)
    switch_overlap = resumed_overlap(plan.base, *overlap)
    where = f"{resume}/screen.json"
    adapter = corpus_adapter(plan.base.options, vllm_dir, where)
    check_plan(plan.base, adapter, where, (plan.a.python, plan.b.python), resolve=True)
    now = environment_switches(adapter.env_prefixes)
    both = set(plan.a.env) & set(plan.b.env)     # set by each side: this one's is unused
    changed = check_resume_env(
        None if plan.base.env is None else
        {k: v for k, v in plan.base.env.items() if k not in both},
        {k: v for k, v in now.items() if k not in both}, where, allow_env_change, echo_err)
    _check_interpreters(plan.a, plan.b, plan.base.options.backend, f"{where}: ", adapter)
    corpus_lanes(plan.base.executor, plan.base.ray_address, plan.base.options.backend,
                 plan.base.devices)
    check_resume_files(plan)
    hold_root(plan.root, "screen")
    if other_executor or switch_overlap:
        record_screen_run_fields(plan)
    if changed:                           # allowed: screen.json says from when and what
        record_screen_env_change(plan, now)
    mend_side_plans(plan, echo_err)
    if switch_overlap:
        for side, timed in plan.batches():
            if (plan.root / side_folder(side, timed)).is_dir():
                record_overlap(plan.root / side_folder(side, timed), plan.base.overlap,
                               plan.base.overlap_width)
    return _run(plan, resume=True, retry=statuses)


def _check_scrub(patterns) -> None:
    try:
        compile_scrub(patterns)
    except ValueError as exc:
        raise errors.UsageError(str(exc)) from None


def _run(plan: ScreenPlan, resume: bool, retry: tuple[str, ...] = ()) -> int:
    started = time.time()
    with Meter("screen", total=len(plan.base.items)) as meter:
        verdicts = interrupted_hint(plan.root, "screen",
                                    lambda: Screen(plan, meter.counted(click.echo), None,
                                                   resume, retry).run())
    ir_changed = write_ir_changed(plan, verdicts)
    for line in summary_lines(plan, verdicts, time.time() - started,
                              rounds_command(plan, ir_changed)):
        click.echo(line)
    click.echo(f"screen.tsv, ir_changed.txt and both sides' batches under {plan.root}")
    return 1 if any(v.broken for v in verdicts.values()) else 0


def _check_interpreters(a, b, backend: str | None, where: str = "", adapter=None) -> None:
    """PREFLIGHT_FAILED check=interpreter (exit 3) before anything runs when a side's
    interpreter cannot import what a run needs, and one line (exit 2) for a side setting a
    switch the adapter cannot read (as `zlh ab` refuses it): otherwise every op of that side
    would fail alike."""
    for flag, side in ((f"{where}--python-a", a), (f"{where}--python-b", b)):
        env = check_side_interpreter(side, flag, backend)
        if adapter is not None:
            try:
                adapter.check_environment(env)
            except errors.UsageError as exc:
                raise errors.UsageError(f"{where}side {side.label}: {exc.message}") from None
