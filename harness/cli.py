"""The `zlh` command line (click). Each command is a thin layer over the Python API."""
from __future__ import annotations

import functools
import signal
import sys

import click
from tabulate import tabulate

from . import errors
from .runner import L2_POLICIES, LEVELS, BenchOptions, run_bench
from .stopping import StoppingRule
from .timers import Budget


def _fail(message: str, code: int):
    click.echo(f"zlh: {message}", err=True)
    sys.exit(code)


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def handles_errors(fn):
    """User errors become one line on stderr and their exit code; no traceback.

    SIGTERM (a timeout, `zlh ab` ending a run) unwinds like an exception, so the run directory
    is finalised and records and IR are written before the process ends."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        signal.signal(signal.SIGTERM, _terminate)
        try:
            return fn(*args, **kwargs)
        except errors.ZlhError as exc:
            _fail(exc.message, exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; cases measured so far are in the run directory", 130)
    return wrapper


def _split_csv(ctx, param, value):
    if not value:
        return None
    items = []
    for chunk in value:
        items.extend(v.strip() for v in chunk.split(",") if v.strip())
    return items or None


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="zlh", message="zlh %(version)s")
def main():
    """zlh: operator timing harness for A/B comparison of Triton compiler and FlagGems builds."""


# Options every `zlh bench` run takes; `zlh ab` passes the ones given on to both sides.
BENCH_OPTIONS = [
    click.option("--adapter", type=click.Choice(["builtin", "flaggems"]), default=None,
                 help="Where cases come from. Default: flaggems when a checkout is named "
                      "(--flaggems-dir, FLAGGEMS_DIR) or flag_gems is importable, else builtin."),
    click.option("--backend", default=None, metavar="NAME",
                 help="Device runtime: cuda, musa, rocm, ascend, cpu (aliases nvidia, amd, hip, "
                      "npu). Default: detected."),
    click.option("--device", type=click.IntRange(min=0), default=None,
                 help="Logical device index. Default: the first visible device."),
    click.option("--dtypes", multiple=True, callback=_split_csv, metavar="LIST",
                 help="Comma-separated dtypes, e.g. float16,bfloat16. Default: the op's defaults."),
    click.option("--shapes", "shapes", default=None, metavar="FILE",
                 help="Shape file (YAML: op or class name -> shapes). Default: the adapter's."),
    click.option("--level", type=click.Choice(LEVELS), default="core", show_default=True,
                 help="Shape set size when no shape file is given."),
    click.option("--timer", type=click.Choice(["auto", "graph", "event", "host"]), default="auto",
                 show_default=True,
                 help="auto: graph where the backend captures graphs, else event (cpu: host)."),
    click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
                 help="Independent measurements per case; the median of their medians is reported."),
    click.option("--l2", type=click.Choice(L2_POLICIES), default="warm", show_default=True,
                 help="flush: clear L2 before every timed call (event timer only)."),
    click.option("--warmup-ms", type=click.FloatRange(min=0), default=Budget.warmup_ms,
                 show_default=True, help="Warm-up budget after the discarded first call."),
    click.option("--min-samples", type=click.IntRange(min=1), default=StoppingRule.min_samples,
                 show_default=True),
    click.option("--min-time-ms", type=click.FloatRange(min=0), default=StoppingRule.min_time_ms,
                 show_default=True),
    click.option("--max-time-ms", type=click.FloatRange(min=0), default=StoppingRule.max_time_ms,
                 show_default=True, help="Hard cap on sampling time per timed function."),
    click.option("--target-rel-err", type=click.FloatRange(min=0),
                 default=StoppingRule.target_rel_err, show_default=True,
                 help="Stop early once the median's relative standard error is below this."),
    click.option("--seed", type=int, default=0, show_default=True,
                 help="Seed for random, numpy and torch before each case's inputs are built."),
    click.option("--no-check", is_flag=True, help="Skip the comparison with the baseline's output."),
    click.option("--flaggems-dir", default=None, metavar="DIR", envvar="FLAGGEMS_DIR",
                 help="FlagGems checkout (holds benchmark/ and src/). Env: FLAGGEMS_DIR."),
    click.option("--isolate-tuner-cache", is_flag=True,
                 help="Give this invocation a private FlagGems tuner DB (default: the shared one)."),
    click.option("--no-ir", is_flag=True, help="Do not capture TTGIR (recorded in the caliber)."),
]


def bench_options(fn):
    for option in reversed(BENCH_OPTIONS):
        fn = option(fn)
    return fn


def _bench_option_names() -> set:
    @bench_options
    def probe(**_):
        pass
    return {p.name for p in probe.__click_params__}


@main.command()
@click.argument("ops", nargs=-1, required=True)
@bench_options
@click.option("--out", default="runs", show_default=True, metavar="DIR",
              help="Root under which each op gets runs/<op>_<timestamp>/.")
@click.option("--replay", default=None, metavar="RUN_DIR",
              help="Force the autotune configs recorded by this record run (or the newest "
                   "<op>_* record run under this directory). Default: record.")
@click.option("--keep-cache", is_flag=True,
              help="Keep the private Triton compile cache (and tuner DB) after the run.")
@handles_errors
def bench(ops, adapter, backend, device, dtypes, shapes, level, timer, repeat, l2, warmup_ms,
          min_samples, min_time_ms, max_time_ms, target_rel_err, seed, no_check, out,
          flaggems_dir, replay, isolate_tuner_cache, keep_cache, no_ir):
    """Time OPS (function under test vs torch baseline), one run directory per op.

    FlagGems op names: `softmax` (test_softmax), `perf_sort:sort` (function:file),
    `name@file`, a node `benchmark/test_x.py::test_y`, or `vllm:NAME` for FlagGems-vllm.

    Exit status: 0 all cases ok, 1 some case failed, 2 bad input, 3 preflight failed,
    5 the device became unusable (the run stopped; what was measured is kept).
    """
    if max_time_ms < min_time_ms:
        raise errors.UsageError("--max-time-ms must be >= --min-time-ms")
    options = BenchOptions(
        adapter=adapter, backend=backend, device=device, dtypes=dtypes, shapes=shapes,
        level=level, timer=timer, repeat=repeat, l2=l2, out=out, seed=seed, check=not no_check,
        rule=StoppingRule(min_samples=min_samples, min_time_ms=min_time_ms,
                          max_time_ms=max_time_ms, max_samples=max(StoppingRule.max_samples,
                                                                   min_samples),
                          target_rel_err=target_rel_err),
        budget=Budget(warmup_ms=warmup_ms), flaggems_dir=flaggems_dir, replay=replay,
        isolate_tuner_cache=isolate_tuner_cache, keep_cache=keep_cache, ir=not no_ir,
        argv=["zlh"] + sys.argv[1:],
    )
    results = run_bench(list(ops), options, echo=click.echo)
    sys.exit(max((r.exit_code for r in results), default=0))


def _given_bench_args(ctx) -> list[str]:
    """The bench options given on this command line, as arguments for `zlh bench`."""
    from click.core import ParameterSource
    args = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name not in _BENCH_NAMES:
            continue
        if ctx.get_parameter_source(param.name) not in (ParameterSource.COMMANDLINE,
                                                        ParameterSource.ENVIRONMENT):
            continue
        value, flag = ctx.params[param.name], param.opts[0]
        if param.is_flag:
            if value:
                args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        elif value is not None:
            args += [flag, str(value)]
    return args


_BENCH_NAMES = _bench_option_names()


@main.command()
@click.argument("args", nargs=-1)
@click.option("--replay", "replay_run", default=None, metavar="RUN_A",
              help="Side A is this existing record run; side B is run now replaying its "
                   "configs with its caliber (bench options given here override).")
@click.option("--switch", default=None, metavar="NAME=A,B",
              help="An environment switch: side A gets NAME=A, side B NAME=B.")
@click.option("--env-a", multiple=True, metavar="K=V", help="Environment for side A (repeatable).")
@click.option("--env-b", multiple=True, metavar="K=V", help="Environment for side B (repeatable).")
@click.option("--python-a", default=None, metavar="PATH",
              help="Interpreter for side A (e.g. a venv with one compiler build).")
@click.option("--python-b", default=None, metavar="PATH", help="Interpreter for side B.")
@click.option("--recipe", default=None, metavar="FILE", help="A/B recipe (YAML), see recipes/.")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="Pairs to run; round 1's A records, every other run replays it. Default 1.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=3600.0,
              show_default=True, help="Per-run limit in seconds (the whole process group is "
                                      "killed; recorded as rc 124).")
@click.option("--root", default=None, metavar="DIR",
              help="Where runs, status.tsv and reports go. Default: runs/ab_<timestamp>.")
@click.option("--allow-caliber-mismatch", is_flag=True,
              help="Print caliber problems and report anyway.")
@click.option("--allow-no-ir-diff", is_flag=True,
              help="Keep running rounds although both sides generated identical TTGIR.")
@click.option("--scrub", multiple=True, metavar="REGEX", help="Extra IR scrub pattern.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (rows with delta_pct, summary) instead of tables.")
@bench_options
@click.pass_context
@handles_errors
def ab(ctx, args, replay_run, switch, env_a, env_b, python_a, python_b, recipe, rounds,
       timeout_s, root, allow_caliber_mismatch, allow_no_ir_diff, scrub, as_json, **_):
    """Compare two sides: `zlh ab RUN_A RUN_B`, `zlh ab --replay RUN_A [bench options]`, or
    `zlh ab OP... --switch NAME=a,b | --env-a K=V --env-b K=V | --python-a P --python-b P |
    --recipe FILE [--rounds N]` (both sides run here, each run a fresh process).

    delta % = (A / B - 1) x 100: positive means B is faster. Exit status: 0 reported,
    1 a run failed or outputs differ between sides, 2 bad input, 4 caliber refusal.
    """
    import json as jsonlib
    import time as timelib
    from pathlib import Path
    from . import ab as abmod
    from .ab_report import render_terminal, to_json
    lines = []
    echo = (lambda text: lines.append(text)) if as_json else click.echo
    bench_args = _given_bench_args(ctx)
    if recipe:
        spec = _load_recipe(recipe)
        args = tuple(args) or tuple(spec.get("ops", ()))
        switch = switch or spec.get("switch")
        env_a = tuple(env_a) + tuple(f"{k}={v}" for k, v in (spec.get("env_a") or {}).items())
        env_b = tuple(env_b) + tuple(f"{k}={v}" for k, v in (spec.get("env_b") or {}).items())
        python_a, python_b = python_a or spec.get("python_a"), python_b or spec.get("python_b")
        rounds = rounds or spec.get("rounds")
        scrub = tuple(scrub) + tuple(spec.get("scrub", ()))
        bench_args = [str(a) for a in spec.get("bench_args", [])] + bench_args
    running = switch or env_a or env_b or python_a or python_b
    root_path = Path(root or f"runs/ab_{timelib.strftime('%Y%m%d-%H%M%S')}")
    if replay_run:
        if args or running:
            raise errors.UsageError("--replay RUN_A takes no ops or side options")
        report, code = abmod.replay_against(replay_run, bench_args, root_path, timeout_s, echo,
                                            allow_caliber_mismatch, scrub)
        reports = [report] if report else []
        if reports:
            abmod.write_reports(root_path, reports)
    elif running:
        if not args:
            raise errors.UsageError("name at least one op to run on both sides")
        if switch and (env_a or env_b):
            raise errors.UsageError("use either --switch or --env-a/--env-b")
        switch_name = ""
        if switch:
            side_a, side_b = abmod.sides_from_switch(switch)
            switch_name = switch.partition("=")[0]
        else:
            ea, eb = (abmod.parse_assignments(env_a, "--env-a"),
                      abmod.parse_assignments(env_b, "--env-b"))
            side_a = abmod.Side("A", ea, description=" ".join(f"{k}={v}" for k, v in ea.items()))
            side_b = abmod.Side("B", eb, description=" ".join(f"{k}={v}" for k, v in eb.items()))
        for side, python in ((side_a, python_a), (side_b, python_b)):
            if python:
                if not Path(python).exists():
                    raise errors.UsageError(f"interpreter not found: {python}")
                side.python = python
                side.description = (side.description + f" python={python}").strip()
        plan = abmod.ABPlan(
            ops=list(args), a=side_a, b=side_b, bench_args=bench_args,
            root=root_path, rounds=rounds or 1, timeout_s=timeout_s,
            allow_caliber_mismatch=allow_caliber_mismatch, allow_no_ir_diff=allow_no_ir_diff,
            scrub=list(scrub), switch_name=switch_name)
        reports, code = abmod.run_ab(plan, echo)
        echo(f"runs, status.tsv and report.json/csv under {plan.root}")
    else:
        if len(args) != 2:
            raise errors.UsageError("give two run directories (zlh ab RUN_A RUN_B), --replay "
                                    "RUN_A, or ops with --switch/--env-a/--python-a/--recipe")
        report, code = abmod.compare_existing(args[0], args[1], allow_caliber_mismatch, echo,
                                              scrub=scrub)
        reports = [report] if report else []
        if reports and root:
            abmod.write_reports(Path(root), reports)
    if as_json:
        for line in lines:
            click.echo(line, err=True)
        if reports:
            click.echo(jsonlib.dumps(to_json(reports), default=str))
    elif replay_run or not running:
        for report in reports:
            click.echo(render_terminal(report, colour=sys.stdout.isatty()))
    sys.exit(code)


def _load_recipe(path: str) -> dict:
    import yaml
    try:
        with open(path, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
    except OSError as exc:
        raise errors.UsageError(f"recipe {path} cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise errors.UsageError(f"recipe {path} is not valid YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise errors.UsageError(f"recipe {path}: top level must be a mapping")
    unknown = set(spec) - {"name", "description", "ops", "switch", "env_a", "env_b", "python_a",
                           "python_b", "rounds", "scrub", "bench_args", "check_upstream"}
    if unknown:
        raise errors.UsageError(f"recipe {path}: unknown keys {', '.join(sorted(unknown))}")
    return spec


@main.command()
@click.argument("root", type=click.Path(file_okay=False))
@click.option("--html", "html_out", is_flag=True, help="Write ROOT/report.html (self-contained).")
@handles_errors
def report(root, html_out):
    """Print (or render as HTML) the A/B report saved under ROOT by `zlh ab`."""
    from pathlib import Path
    from .ab import load_report
    from .ab_report import render_terminal
    data = load_report(root)
    if html_out:
        from .atomic import atomic_write_text
        from .report_html import render_html
        path = atomic_write_text(Path(root) / "report.html", render_html(data))
        click.echo(str(path))
        return
    for op_report in data.get("ops", []):
        click.echo(render_terminal(op_report, colour=sys.stdout.isatty()))


@main.command("ops")
@click.option("--adapter", type=click.Choice(["builtin", "flaggems"]), default=None,
              help="Default: flaggems when a checkout is given, else builtin.")
@click.option("--flaggems-dir", default=None, metavar="DIR", envvar="FLAGGEMS_DIR",
              help="FlagGems checkout. Env: FLAGGEMS_DIR.")
@click.option("--vllm", "vllm_dir", default=None, metavar="DIR", envvar="FLAGGEMS_VLLM_DIR",
              help="Also list a FlagGems-vllm checkout. Env: FLAGGEMS_VLLM_DIR.")
@handles_errors
def ops_cmd(adapter, flaggems_dir, vllm_dir):
    """List the benchmark functions an adapter can run (FlagGems: static scan, no import)."""
    import adapters as registry
    name = adapter or ("flaggems" if flaggems_dir else "builtin")
    if name == "builtin":
        for op in registry.get_adapter("builtin").ops():
            click.echo(op)
        return
    from adapters.flaggems import FlagGemsAdapter
    source = FlagGemsAdapter(flaggems_dir=flaggems_dir, vllm_dir=vllm_dir)
    repos = ["flaggems"] + (["vllm"] if vllm_dir else [])
    rows = []
    for repo in repos:
        for node in source.corpus(repo).nodes:
            rows.append([node.qualified, node.file, node.function, ",".join(node.marks) or "-",
                         " | ".join(node.skip_marks) or "-"])
    click.echo(tabulate(rows, headers=["op", "file", "function", "marks", "skip marks"],
                        tablefmt="plain"))
    click.echo(f"{len(rows)} benchmark functions", err=True)


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@handles_errors
def show(run_dir):
    """Print a run's table, caliber, autotune mode and marker counts."""
    from .show import show_run
    click.echo(show_run(run_dir, colour=sys.stdout.isatty()))


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--scrub", multiple=True, metavar="REGEX",
              help="Extra pattern removed from every .ttgir before hashing (repeatable); the "
                   "default scrub of FlagTree's ttg.rlc-* module attributes always applies.")
@handles_errors
def fingerprint(run_dir, scrub):
    """sha256 over the run's .ttgir files (sorted relative path + scrubbed content).

    Prints only the hash; a run without .ttgir prints `no IR` and exits 1.
    """
    from .fingerprint import fingerprint_line
    try:
        line, rc = fingerprint_line(run_dir, list(scrub))
    except ValueError as exc:
        raise errors.UsageError(str(exc)) from None
    click.echo(line)
    sys.exit(rc)


@main.command("backends")
def backends_cmd():
    """List the device runtimes zlh knows, their capabilities and whether one is usable here."""
    import backends as registry
    rows = [b.describe() for b in registry.all_backends()]
    click.echo(tabulate(rows, headers="keys", tablefmt="simple"))


if __name__ == "__main__":  # pragma: no cover
    main()
