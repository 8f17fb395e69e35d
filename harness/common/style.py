"""Colour on the terminal (`--color auto|always|never`, NO_COLOR, FORCE_COLOR) and the
style of terminal tables (`--format text|markdown`).

Decided in this order: `--color always|never` given on the command line; NO_COLOR set to
anything but the empty string (https://no-color.org) turns colour off; FORCE_COLOR set to
anything but the empty string or `0` turns it on; otherwise colour only when the stream is a
terminal. Files (run.log, reports) never get colour.
"""
from __future__ import annotations

import os
import sys

MODES = ("auto", "always", "never")
TABLE_FORMATS = ("text", "markdown")
_TABULATE = {"text": None, "markdown": "github"}
_mode = "auto"
_table_format = "text"


def set_mode(mode: str | None) -> None:
    global _mode
    _mode = mode if mode in MODES else "auto"


def mode() -> str:
    return _mode


def set_table_format(name: str | None) -> None:
    """`--format`: terminal tables as text (each view's own tabulate style) or markdown."""
    global _table_format
    _table_format = name if name in TABLE_FORMATS else "text"


def tablefmt(default: str = "simple") -> str:
    """The tabulate format for a terminal table: `default` (the view's own) for text,
    `github` for markdown."""
    return _TABULATE[_table_format] or default


def forced(environ=None) -> bool | None:
    """True (colour whatever the stream), False (none), or None (ask the stream)."""
    environ = os.environ if environ is None else environ
    if _mode != "auto":
        return _mode == "always"
    if environ.get("NO_COLOR", ""):
        return False
    if environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    return None


def colour(stream=None, environ=None) -> bool:
    """Whether text for `stream` (default stdout) gets colour."""
    decided = forced(environ)
    if decided is not None:
        return decided
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
