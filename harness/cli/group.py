"""The `zlh` click group: every command registers on `main` here, and click's own usage errors,
a broken pipe and threads the code under test left running end as one line each. A module of
its own so that the command modules import the group from below the package that imports
them.

A command's module is imported when the command is first asked for (COMMAND_MODULES): a
`zlh bench` process, which every run of a batch, a screen or an A/B is, then imports only
what bench needs, not every other command's statistics and orchestration (about 0.2 s of
CPU a process on a CPU host). `zlh --help`, completion and anything that reads
`main.commands` load them all."""
from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time

import click

from ..common.environ import safe_streams
from ..run.process_state import pool_worker
from . import output
from .common import EXIT_BROKEN_PIPE, echo_err, quiet_broken_pipe


# Each command of `zlh` and the module of harness.cli that defines it.
COMMAND_MODULES = {
    "ab": "ab", "backends": "info", "batch": "batch", "bench": "bench",
    "calibrate": "calibrate", "campaign": "campaign", "fingerprint": "info",
    "history": "report", "merge": "merge", "ops": "info", "partition": "campaign",
    "product": "product", "report": "report", "screen": "screen", "shapes": "shapes",
    "show": "info"}


class ZlhGroup(click.Group):
    """click's own usage errors (a bad option value, a missing argument) as one line on
    stderr, `zlh: ...`, with click's exit code (2), like every other bad input. Commands load
    when asked for (COMMAND_MODULES) and get the shared output options when first handed out."""

    @property
    def commands(self) -> dict:
        """Every command, each module loaded."""
        for module in sorted(set(COMMAND_MODULES.values())):
            importlib.import_module(f"{__package__}.{module}")
        for command in self._commands.values():
            _with_output_options(command)
        return self._commands

    @commands.setter
    def commands(self, value: dict) -> None:
        self._commands = value

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        self._commands[name or cmd.name] = cmd

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self._commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"{__package__}.{COMMAND_MODULES[cmd_name]}")
        command = self._commands.get(cmd_name)
        return _with_output_options(command) if command is not None else None

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(COMMAND_MODULES) | set(self._commands))

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        output.reset(echo_err)          # the zlh logger on stderr, colour and tables: auto
        safe_streams()                  # no output lost to a stream's narrow encoding
        if not standalone_mode:
            _refuse_nul(args)
            return super().main(args, prog_name, complete_var, False, **extra)
        before = set(threading.enumerate())
        try:
            self._standalone(args, prog_name, complete_var, extra)
        except SystemExit as exc:
            if args is None:            # the program itself (not a CliRunner in a test)
                _leave_threads(before, exc.code)
            raise

    def _standalone(self, args, prog_name, complete_var, extra):
        try:
            _refuse_nul(args)
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"zlh: {_one_line(exc)}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("zlh: aborted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            quiet_broken_pipe()
            sys.exit(EXIT_BROKEN_PIPE)
        sys.exit(code if isinstance(code, int) else 0)


def _with_output_options(command: click.Command) -> click.Command:
    """The command with the shared output options, added once, when it is first handed out:
    its module has been imported whole by then (a group's sub-commands registered), however
    it was imported."""
    if not getattr(command, "_zlh_output_options", False):
        output.install_command(command)
        command._zlh_output_options = True
    return command


LEFT_THREAD_GRACE_S = 2.0


def _leave_threads(before: set, code) -> None:
    """Threads the code under test started and left running (not daemons) would keep this
    process alive after its work is done, for ever: name them on stderr and end now, with the
    status the command had, instead of waiting for them."""
    left = [t for t in threading.enumerate() if t not in before and not t.daemon
            and t.is_alive() and t is not threading.current_thread() and not pool_worker(t)]
    deadline = time.monotonic() + LEFT_THREAD_GRACE_S     # one finishing its work: let it
    for thread in left:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t for t in left if t.is_alive()]
    if not left:
        return
    names = ", ".join(t.name for t in left[:5]) + (", ..." if len(left) > 5 else "")
    echo_err(f"zlh: WARNING {len(left)} thread(s) started by the code under test are still "
             f"running ({names}); exiting without waiting for them")
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream the op closed
            pass
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def _refuse_nul(args) -> None:
    """An argument holding a NUL byte (only a caller that is not a shell can pass one:
    `main(args=[...])`, CliRunner) names no path, op or value; the system calls would end in
    a ValueError while click converts it."""
    for number, arg in enumerate(args or (), 1):
        if isinstance(arg, str) and "\x00" in arg:
            raise click.UsageError(f"argument {number} ({arg!r:.60}) holds a NUL byte, which "
                                   f"no path, name or value can")


def _one_line(exc: click.ClickException) -> str:
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message += f" (see `{ctx.command_path} --help`)"
    return message


@click.group(name="zlh", cls=ZlhGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="zlh", message="zlh %(version)s")
def main():
    """zlh: operator timing harness for A/B comparison of Triton compiler and FlagGems builds."""

