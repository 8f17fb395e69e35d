"""What every zlh command shares: one-line errors with exit codes, output that survives a
closed pipe, and the bench options."""
from __future__ import annotations

import errno
import functools
import math
import os
import signal
import sys

import click
from click.core import ParameterSource

import backends

from ..common import errors, style
from ..common.files import NUL_IN_PATH, SYMLINK_LOOP
from ..common.limits import MAX_REPEAT, MAX_RETRY_THROTTLED
from ..compile.ir.variants import IR_STAGES
from ..measure.stopping import StoppingRule
from ..measure.timers import Budget
from ..common.process import die_with_parent_if_asked, terminate_handler
from ..run.options import L2_POLICIES, LEVELS, TIMERS, BenchOptions
from .output import AdapterName, complete_backends

EXIT_BROKEN_PIPE = 141          # 128 + SIGPIPE, what a shell tool stopped by `| head` returns


def fail(message: str, code: int):
    click.echo(f"zlh: {message}", err=True)
    sys.exit(code)


def _raise_terminated(signum):
    raise errors.Terminated(signum)


def handles_errors(fn):
    """User errors become one line on stderr and their exit code; no traceback.

    SIGTERM (a timeout, `zlh ab` ending a run) unwinds like an exception, so the run directory
    is finalised and records and IR are written before the process ends. A reader that went
    away (`zlh ops | head -1`) ends the command quietly; a write that fails (disk full,
    read-only file system) is one line naming the file."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        signal.signal(signal.SIGTERM, terminate_handler(_raise_terminated))
        try:
            die_with_parent_if_asked()   # a `zlh bench` a corpus command started
            return fn(*args, **kwargs)
        except errors.ZlhError as exc:
            fail(exc.message, exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted; cases measured so far are in the run directory", 130)
        except errors.Terminated as exc:
            fail("terminated (SIGTERM); cases measured so far are in the run directory",
                 exc.code)
        except BrokenPipeError:
            quiet_broken_pipe()
            sys.exit(EXIT_BROKEN_PIPE)
        except OSError as exc:
            where = f"{_shortened(exc.filename)}: " if exc.filename else ""
            if exc.errno in BAD_PATH:            # a path (or op name) the user gave: bad input
                fail(f"{where}{BAD_PATH[exc.errno]}", errors.EXIT_USAGE)
            fail(f"{where}{errors.write_failure(exc)}", errors.EXIT_FAILED_CASES)
        except ValueError as exc:
            # the system calls refuse a path holding a NUL byte (only a caller that is not a
            # shell can pass one: CliRunner, main(args=[...]))
            if "null byte" not in str(exc) and "null character" not in str(exc):
                raise
            fail(f"{NUL_IN_PATH} (an argument or option holds one)", errors.EXIT_USAGE)
        except RuntimeError as exc:
            # pathlib's resolve() (Python < 3.13) reports a symbolic link loop this way
            loop = str(exc).partition("Symlink loop from ")[2]
            if not loop:
                raise
            fail(f"{loop.strip(chr(39))}: {SYMLINK_LOOP}", errors.EXIT_USAGE)
    return wrapper


BAD_PATH = {errno.ELOOP: SYMLINK_LOOP,
            errno.ENAMETOOLONG: "a name longer than the file system allows (a path, or an op "
                                "name that becomes one)"}


def _shortened(name, limit: int = 160) -> str:
    text = str(name)
    return text if len(text) <= limit else text[:limit // 2] + "..." + text[-limit // 2:]


def quiet_broken_pipe(stream=None) -> None:
    """Point a stream whose reader went away at /dev/null, so that nothing (not even Python's
    flush at exit) complains about it again."""
    stream = stream or sys.stdout
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except Exception:  # noqa: BLE001 - a stream without a real descriptor (tests)
        pass


def echo_out(text: str) -> None:
    """A line on stdout that a closed pipe does not stop: the run goes on, its files are
    the record."""
    _echo(text, err=False)


def echo_err(text: str) -> None:
    _echo(text, err=True)


def _echo(text: str, err: bool) -> None:
    try:
        click.echo(text, err=err, color=style.forced())
    except BrokenPipeError:
        quiet_broken_pipe(sys.stderr if err else sys.stdout)


def echo_routed(text: str) -> None:
    """Refusals and failures (`!!! ...`, `WARNING ...`) to stderr, everything else (reports)
    to stdout."""
    _echo(text, err=text.startswith(("!!!", "WARNING")))


def split_csv(ctx, param, value):
    if not value:
        return None
    items = []
    for chunk in value:
        items.extend(v.strip() for v in chunk.split(",") if v.strip())
    if not items:
        raise click.BadParameter("an empty list; leave the option out for the defaults")
    return items


def not_empty(ctx, param, value):
    """An option given as '' is refused rather than read as "not given"."""
    if value is not None and not str(value).strip():
        raise click.BadParameter("an empty value; leave the option out for the default")
    return value


def finite(ctx, param, value):
    """NaN and infinities are not budgets (click's ranges let NaN through)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


def gate_option(ctx, param, value):
    """`--fail-on` values as regression gates (harness/ab/gate.py)."""
    from ..ab.gate import parse_gates
    try:
        return parse_gates(value)
    except errors.UsageError as exc:
        raise click.BadParameter(exc.message) from None


def _backend_help() -> str:
    names = ", ".join(b.name for b in backends.all_backends())
    aliases = ", ".join(f"{alias}={b.name}" for b in backends.all_backends()
                        for alias in b.aliases)
    return f"Device runtime: {names} (aliases {aliases}). Default: detected."


# Options every `zlh bench` run takes; `zlh ab` passes the ones given on to both sides.
# Parameter names are BenchOptions' flat names (run/options.py).
BENCH_OPTIONS = [
    click.option("--adapter", type=AdapterName(), default=None,
                 help="Where cases come from: builtin, flaggems, user or an installed plugin's "
                      "adapter. Default: user with --cases, else flaggems when a "
                      "checkout is named (--flaggems-dir, FLAGGEMS_DIR) or flag_gems is "
                      "importable, else builtin."),
    click.option("--cases", default=None, metavar="MODULE:ATTR", callback=not_empty,
                 help="Your own cases (harness.Case objects, a list of them, a function "
                      "returning them, or a dict op -> cases), e.g. mypkg.bench:cases."),
    click.option("--backend", default=None, metavar="NAME", callback=not_empty,
                 shell_complete=complete_backends, help=_backend_help()),
    click.option("--device", type=click.IntRange(min=0), default=None,
                 help="Logical device index. Default: the first visible device."),
    click.option("--dtypes", multiple=True, callback=split_csv, metavar="LIST",
                 help="Comma-separated dtypes, e.g. float16,bfloat16. Default: the op's defaults."),
    click.option("--shapes", "shapes", default=None, metavar="FILE", callback=not_empty,
                 type=click.Path(),
                 help="Shape file (YAML: op or class name -> shapes). Default: the adapter's."),
    click.option("--level", type=click.Choice(LEVELS), default="core", show_default=True,
                 help="Shape set size when no shape file is given."),
    click.option("--timer", type=click.Choice(TIMERS), default="auto", show_default=True,
                 help="auto: graph where the backend captures graphs, else event (cpu: host)."),
    click.option("--repeat", type=click.IntRange(min=1, max=MAX_REPEAT), default=1, show_default=True,
                 help="Independent measurements per case; the median of their medians is reported."),
    click.option("--l2", type=click.Choice(L2_POLICIES), default="warm", show_default=True,
                 help="flush: clear L2 before every timed call (event timer only)."),
    click.option("--warmup-ms", type=click.FloatRange(min=0), callback=finite,
                 default=Budget.warmup_ms, show_default=True,
                 help="Warm-up budget after the discarded first call."),
    click.option("--min-samples", type=click.IntRange(min=1), default=StoppingRule.min_samples,
                 show_default=True, help="Take at least this many samples per timed function."),
    click.option("--min-time-ms", type=click.FloatRange(min=0), callback=finite,
                 default=StoppingRule.min_time_ms, show_default=True,
                 help="Sample for at least this long per timed function."),
    click.option("--max-time-ms", type=click.FloatRange(min=0), callback=finite,
                 default=StoppingRule.max_time_ms, show_default=True,
                 help="Hard cap on sampling time per timed function; a case it stops before "
                      "--min-samples is flagged undersampled."),
    click.option("--target-rel-err", type=click.FloatRange(min=0), callback=finite,
                 default=StoppingRule.target_rel_err, show_default=True,
                 help="Stop early once the median's relative standard error is below this."),
    click.option("--seed", type=click.IntRange(min=0, max=2 ** 32 - 1), default=0,
                 show_default=True,
                 help="Seed for random, numpy and torch before each case's inputs are built "
                      "(part of the caliber)."),
    click.option("--no-check", "check", is_flag=True, flag_value=False, default=True,
                 help="Skip the comparison with the baseline's output."),
    click.option("--flaggems-dir", default=None, metavar="DIR", envvar="FLAGGEMS_DIR",
                 type=click.Path(), callback=not_empty,
                 help="FlagGems checkout (holds benchmark/ and src/). Env: FLAGGEMS_DIR."),
    click.option("--isolate-tuner-cache", is_flag=True,
                 help="Give this invocation a private FlagGems tuner DB (default: the shared one)."),
    click.option("--no-ir", "ir", is_flag=True, flag_value=False, default=True,
                 help="Do not capture the IR of measured kernels (recorded in the caliber)."),
    click.option("--ir-stage", type=click.Choice(IR_STAGES), default="ttgir", show_default=True,
                 help="IR stage the fingerprint covers (also kept beside ttgir/): ttgir where "
                      "FlagTree's switches act; ptx or llir for switches acting after TTGIR."),
    click.option("--telemetry-interval", type=click.FloatRange(min=0, max=3600), default=5.0,
                 callback=finite,
                 show_default=True, metavar="S",
                 help="Seconds between device telemetry samples (telemetry.tsv); 0: off."),
    click.option("--retry-throttled", type=click.IntRange(min=0, max=MAX_RETRY_THROTTLED), default=0, show_default=True,
                 metavar="N", help="Measure a case again, up to N times, while it ran on a "
                                   "throttled device (clock below usual or a slowdown reason)."),
]
BENCH_NAMES = ("adapter", "cases", "backend", "device", "dtypes", "shapes", "level", "timer",
               "repeat", "l2", "warmup_ms", "min_samples", "min_time_ms", "max_time_ms",
               "target_rel_err", "seed", "check", "flaggems_dir", "isolate_tuner_cache", "ir",
               "ir_stage", "telemetry_interval", "retry_throttled")


def bench_options(fn):
    for option in reversed(BENCH_OPTIONS):
        fn = option(fn)
    return fn


def options_from(params: dict, **extra) -> BenchOptions:
    """BenchOptions from a command's parameters (bench names only) plus `extra`."""
    return BenchOptions.from_flat(**{k: params[k] for k in BENCH_NAMES if k in params}, **extra)


def default_ops(options: BenchOptions) -> list[str]:
    """The ops to run when none are named: user cases (`--cases MODULE:ATTR`) run as op
    ATTR; otherwise none (the plan then says an op is needed)."""
    if not options.cases:
        return []
    from adapters.user import default_op
    return [default_op(options.cases)]


def refuse_beside(ctx: click.Context, mode: str, allowed: tuple[str, ...] = ()) -> None:
    """`--resume ROOT` (or `--rescore ROOT`) takes its plan and options from ROOT: any other
    option named on the command line would be ignored without a word, so it is refused by
    name. Environment variables are not counted: they are set for a shell, not for this call."""
    ignored = [_flag(param) for param in ctx.command.params
               if param.name not in (mode, *allowed)
               and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE]
    if ignored:
        flag = "--" + mode.replace("_", "-")
        raise errors.UsageError(f"{flag} ROOT works from what ROOT holds; leave out "
                                f"{', '.join(ignored)} (it would be ignored)")


def _flag(param: click.Parameter) -> str:
    names = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    return names[0] if names else param.name


def given_options(ctx: click.Context) -> dict:
    """The bench options named on this command line (or by their environment variable)."""
    given = {}
    for name in BENCH_NAMES:
        if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE,
                                              ParameterSource.ENVIRONMENT):
            given[name] = ctx.params[name]
    return given


@click.command(add_help_option=False)
@bench_options
def _probe(**_):
    """Parses bench arguments given as a list (recipes)."""


def parse_bench_args(args, where: str) -> dict:
    """`zlh bench` arguments (a recipe's bench_args) as flat bench options; only the options
    the arguments name."""
    if not isinstance(args, (list, tuple)) or not all(
            isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in args):
        raise errors.UsageError(f"{where}: bench_args must be a list of arguments, e.g. "
                                f"[--adapter, builtin], got {args!r}")
    try:
        ctx = _probe.make_context("bench_args", [str(a) for a in args])
    except click.ClickException as exc:
        raise errors.UsageError(f"{where}: bench_args: {exc.format_message()}") from None
    return given_options(ctx)
