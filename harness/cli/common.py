"""What every zlh command shares: one-line errors with exit codes, output that survives a
closed pipe, and the bench options."""
from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from adapters.user import default_op

from ..common import environ, errors, parent_pipe, spelling, style
from ..store import rundir
from ..common.files import NUL_IN_PATH, SYMLINK_LOOP
from ..common.process import (die_with_parent_if_asked, install_terminate_handlers,
                              restore_handlers, signal_name)
from ..run.options import OPTIONS, SHARED_NAMES, BenchOptions, Option
from .output import AdapterName, complete_backends

EXIT_BROKEN_PIPE = 141          # 128 + SIGPIPE, what a shell tool stopped by `| head` returns


def fail(message: str, code: int):
    click.echo(f"zlh: {message}", err=True)
    sys.exit(code)


def _raise_terminated(signum):
    raise errors.Terminated(signum)


def handles_errors(fn):
    """User errors become one line on stderr and their exit code; no traceback.

    SIGTERM (a timeout, `zlh ab` ending a run) and SIGHUP (the terminal closed) unwind like
    an exception, so the run directory is finalised and records and IR are written before
    the process ends (exit 128 + the signal's number). A reader that went
    away (`zlh ops | head -1`) ends the command quietly; a write that fails (disk full,
    read-only file system) is one line naming the file."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with spelling.as_flags():            # errors name options by their flags here
            return _handled(fn, *args, **kwargs)
    return wrapper


def _handled(fn, *args, **kwargs):
    """`fn` run with the user errors handled (handles_errors says how)."""
    saved = install_terminate_handlers(_raise_terminated)      # SIGTERM, SIGHUP
    try:
        return _run_handled(len(rundir.MADE), fn, *args, **kwargs)
    finally:
        restore_handlers(saved)


def _run_handled(made: int, fn, *args, **kwargs):
    try:
        die_with_parent_if_asked()   # a `zlh bench` a corpus command started
        parent_pipe.take_from_environment()      # where to say why a run could not write
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            blamed = environ.import_failure(exc, os.environ)  # a variable, not the op
            if blamed is None:
                raise
            raise blamed from None
    except errors.ZlhError as exc:
        if reason := errors.run_write_failure(exc):     # disk full, read-only file system
            parent_pipe.tell_parent(reason)
        fail(exc.message, exc.exit_code)
    except KeyboardInterrupt:
        fail(f"interrupted; {_kept(made)}", errors.EXIT_SIGINT)
    except errors.Terminated as exc:
        fail(f"terminated ({signal_name(exc.signum)}); {_kept(made)}", exc.code)
    except BrokenPipeError:
        quiet_broken_pipe()
        sys.exit(EXIT_BROKEN_PIPE)
    except OSError as exc:
        where = f"{_shortened(exc.filename)}: " if exc.filename else ""
        if exc.errno in BAD_PATH:            # a path (or op name) the user gave: bad input
            fail(f"{where}{BAD_PATH[exc.errno]}", errors.EXIT_USAGE)
        reason = errors.write_failure(exc)
        parent_pipe.tell_parent(reason)
        fail(f"{where}{reason}", errors.EXIT_FAILED_CASES)
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


def _kept(made: int) -> str:
    """Where an interrupted command kept what it measured: the run directory it was writing
    (the last made since `made` directories were), or none made yet."""
    kept = rundir.made_since(made)
    if not kept:
        return "nothing was measured yet (no run directory was made)"
    return f"cases measured so far are in {kept[-1]}"


def keeps_on_interrupt(root, resume_command: str | None, run, kept: str = "finished ops",
                       then: str = "runs the others", said=None):
    """`run()`, ended by Ctrl-C or SIGTERM/SIGHUP with one line naming the root where what
    finished is kept and the command that goes on (a corpus command: batch, screen, product
    run; `zlh ab`, whose --rescore reports the rounds that finished), instead of the run
    directory of a single bench; exit 130 or 128 + the signal. `said()`, when given, words
    that line's tail itself (what is kept only shows once the run has stopped)."""
    def where() -> str:
        if said is not None:
            return said()
        if root is not None and not _holds_anything(root):
            return f"it stopped before writing anything under {root}; nothing is kept"
        return f"{kept} are kept under {root}: {resume_command} {then}"
    try:
        return run()
    except KeyboardInterrupt:
        fail(f"interrupted; {where()}", errors.EXIT_SIGINT)
    except errors.Terminated as exc:
        fail(f"terminated ({signal_name(exc.signum)}); {where()}", exc.code)


def _holds_anything(root) -> bool:
    """Whether `root` is a folder with something in it (an unreadable one counts as holding)."""
    try:
        return any(Path(root).iterdir())
    except (NotADirectoryError, FileNotFoundError):
        return False
    except OSError:
        return True


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
    except ValueError:           # an op closed Python's stream: a new one on the same file
        if not getattr(sys.stderr if err else sys.stdout, "closed", False):
            raise                # (an encoding error, say: not a closed stream)
        stream = _reopened(err)
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                click.echo(text, file=stream, color=style.forced())


def _reopened(err: bool):
    """Python's stdout (stderr) again, on file descriptor 1 (2), where an op closed the
    stream and left the descriptor open; None where the descriptor is gone too."""
    stream = environ.std_stream(2 if err else 1)
    if stream is None:
        return None
    if err:
        sys.stderr = stream
    else:
        sys.stdout = stream
    return stream


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
        raise click.BadParameter("an empty list; leave the option out for the defaults"
                                 if not param.required else "an empty list; give at least "
                                 "one value")
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
    """`--fail-on` values as regression gates (harness/ab/gate.py, loaded here: a command
    without the option does without its statistics)."""
    from ..ab.gate import parse_gates
    try:
        return parse_gates(value)
    except errors.UsageError as exc:
        raise click.BadParameter(exc.message) from None


def _click_option(option: Option):
    """A table record (run/option_table.py) as a click option: its parameter name is the
    flat name; numbers get their range, names their choices, text is refused empty, floats
    must be finite, a list is comma-separated."""
    kw = dict(help=option.help_text(), hidden=option.hidden, metavar=option.metavar,
              envvar=option.envvar)
    if option.kind in ("flag", "negated"):
        return click.option(option.flag, option.name, is_flag=True,
                            flag_value=option.kind == "flag", default=option.default, **kw)
    if option.kind == "list":
        return click.option(option.flag, option.name, multiple=True, callback=split_csv, **kw)
    kind, callback = None, None
    if option.choices is not None:
        kind = click.Choice(option.choices)
    elif option.type in (int, float) and (option.low is not None or option.high is not None):
        ranged = click.IntRange if option.type is int else click.FloatRange
        kind = ranged(min=option.low, max=option.high)
    elif option.adapter_name:
        kind = AdapterName()
    elif option.path:
        kind = click.Path()
    if option.type is float:
        callback = finite
    elif option.type is str and not option.adapter_name and not option.hidden:
        callback = not_empty
    if option.complete == "backends":
        kw["shell_complete"] = complete_backends
    return click.option(option.flag, option.name, type=kind, default=option.default,
                        callback=callback, show_default=option.default is not None, **kw)


def _decorator(options):
    clicked = [_click_option(o) for o in options]

    def apply(fn):
        for option in reversed(clicked):
            fn = option(fn)
        return fn
    return apply


# Options every `zlh bench` run takes; `zlh ab` passes the ones given on to both sides.
# Parameter names are BenchOptions' flat names.
BENCH_NAMES = SHARED_NAMES
bench_options = _decorator(o for o in OPTIONS if o.shared)
# Those of `zlh bench` alone: where its runs go, what they replay and plant, its shard.
run_options = _decorator(o for o in OPTIONS if not o.shared)


def check_ir_options(params: dict) -> None:
    """--no-ir beside an --ir-stage other than the default: one of them would be ignored."""
    if params.get("ir") is False and params.get("ir_stage") not in (None, "ttgir"):
        raise errors.UsageError(f"--ir-stage {params['ir_stage']} names the IR to capture and "
                                f"--no-ir captures none; drop one of them")


def options_from(params: dict, **extra) -> BenchOptions:
    """BenchOptions from a command's parameters (bench names only) plus `extra`."""
    check_ir_options(params)
    return BenchOptions.from_flat(**{k: params[k] for k in BENCH_NAMES if k in params}, **extra)


def default_ops(options: BenchOptions) -> list[str]:
    """The ops to run when none are named: user cases (`--cases MODULE:ATTR`) run as op
    ATTR; otherwise none (the plan then says an op is needed)."""
    if not options.cases:
        return []
    return [default_op(options.cases)]


def refuse_vllm_beside(ctx, adapter) -> None:
    """`--vllm DIR` typed beside an adapter that reads no FlagGems-vllm checkout: it would be
    ignored without a word (the checkout variable in the environment stays harmless)."""
    if (ctx.get_parameter_source("vllm_dir") == ParameterSource.COMMANDLINE
            and getattr(adapter, "name", "flaggems") != "flaggems"):
        raise errors.UsageError(f"--vllm adds a FlagGems-vllm checkout: it needs the flaggems "
                                f"adapter (--flaggems-dir or --adapter flaggems), not "
                                f"{adapter.name}")


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
