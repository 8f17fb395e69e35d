"""What every command shares about its output, and shell completion.

As each command loads, `install_command` (group.py calls it) gives it `--color
auto|always|never` and `-v/--verbose`, and `-q/--quiet` where it has none of its own (an own
`-q` keeps its meaning and also quiets the `zlh` logger); commands that print tables also get
`--format text|markdown` (markdown: tabulate's `github` tables, to paste into a pull request).
These options take effect while the command line is parsed (they are not parameters of the
command functions). Completion: `AdapterName` (any registered adapter, plugins included),
`complete_backends` and `complete_ops` for click's shell completion
(`eval "$(_ZLH_COMPLETE=bash_source zlh)"`).
"""
from __future__ import annotations

import logging

import click
from click.shell_completion import CompletionItem

import adapters
import backends
from adapters import suggest

from ..common import log, style

TABLE_COMMANDS = ("bench", "show", "ab", "report", "history", "backends", "ops", "calibrate")


def reset(echo) -> None:
    """Start of a command line: the `zlh` logger on stderr at INFO, colour auto, text tables
    (a process that runs several command lines, e.g. tests, starts each afresh)."""
    log.cli_handler(echo, logging.INFO)
    style.set_mode("auto")
    style.set_table_format("text")


def _colour(ctx, param, value):
    if value is not None:
        style.set_mode(value)
    return value


def _verbose(ctx, param, value):
    if value:
        log.set_level(logging.DEBUG)
    return value


def quiet(ctx, param, value):
    if value:
        log.set_level(logging.WARNING)
    return value


def _format(ctx, param, value):
    style.set_table_format(value)
    return value


def _options(command: click.Command) -> list[click.Option]:
    names = {opt for p in command.params for opt in getattr(p, "opts", ())}
    extra = []
    if "--color" not in names:
        extra.append(click.Option(["--color", "colour"], type=click.Choice(style.MODES),
                                  default=None, expose_value=False, callback=_colour,
                                  is_eager=True, help="Colour on the terminal (default auto: "
                                  "a terminal gets colour; NO_COLOR / FORCE_COLOR decide "
                                  "otherwise)."))
    if "-v" not in names:
        extra.append(click.Option(["-v", "--verbose"], is_flag=True, expose_value=False,
                                  callback=_verbose, help="Debug lines on stderr too."))
    if "-q" not in names:
        extra.append(click.Option(["-q", "--quiet"], is_flag=True, expose_value=False,
                                  callback=quiet, help="Only warnings and errors on stderr."))
    if command.name in TABLE_COMMANDS and "--format" not in names:
        extra.append(click.Option(["--format", "table_format"],
                                  type=click.Choice(style.TABLE_FORMATS), default="text",
                                  show_default=True, expose_value=False, callback=_format,
                                  help="Terminal tables as text or as markdown (GitHub tables, "
                                       "for pasting into a pull request)."))
    return extra


def install_command(command: click.Command) -> None:
    """Add the shared output options to `command` (a group: to each of its commands)."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            install_command(sub)
        return
    for param in command.params:
        if isinstance(param, click.Option) and "-q" in param.opts and param.callback is None:
            param.callback = quiet           # the command's own -q quiets the logger too
    command.params.extend(_options(command))


class AdapterName(click.ParamType):
    """Any registered adapter: the built-ins and those of installed plugins (entry point
    group `zlh.adapters`); an unknown name gets a suggestion and the list."""

    name = "adapter"

    def __init__(self, exclude: tuple[str, ...] = ()):
        self.exclude = exclude

    def names(self) -> list[str]:
        return [n for n in adapters.adapter_names() if n not in self.exclude]

    def convert(self, value, param, ctx):
        known = self.names()
        if value in known:
            return value
        self.fail(f"unknown adapter {value!r}{suggest(value, known)} (known: "
                  f"{', '.join(known)}; `zlh backends` and `zlh ops --adapter NAME` list what "
                  f"plugins add)", param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        return [CompletionItem(n) for n in self.names() if n.startswith(incomplete)]

    def get_metavar(self, param, ctx=None):
        return "NAME"


def complete_backends(ctx, param, incomplete):
    """Backend names and aliases (plugins included)."""
    try:
        names = backends.backend_names() + sorted(
            alias for b in backends.all_backends() for alias in b.aliases)
    except Exception:  # noqa: BLE001 - completion never fails loudly
        return []
    return [n for n in names if n.startswith(incomplete)]


def complete_ops(ctx, param, incomplete):
    """Op names of the adapter the command line names so far (default: as `zlh bench` would
    pick it; FlagGems by static scan, no import)."""
    try:
        params = ctx.params
        if params.get("cases"):
            return []
        name = params.get("adapter") or adapters.default_adapter_name(params.get("flaggems_dir"))
        source = adapters.get_adapter(name, flaggems_dir=params.get("flaggems_dir"))
        names = [row["op"] for row in source.describe_ops()]
    except Exception:  # noqa: BLE001
        return []
    return [n for n in dict.fromkeys(names) if n.startswith(incomplete)]


def complete_ops_or_runs(ctx, param, incomplete):
    """`zlh ab`'s arguments: op names (as complete_ops), else paths (two run directories)."""
    return complete_ops(ctx, param, incomplete) or [CompletionItem(incomplete, type="file")]
