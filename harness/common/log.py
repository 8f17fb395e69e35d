"""The `zlh` logger: progress and warnings, silent unless someone asks.

As a library zlh prints nothing: its logger has a NullHandler, so `import harness` code sees
progress and warnings only when it configures logging itself (`logging.basicConfig(level=
logging.INFO)` shows them) or passes `echo=` / `progress=` to the API. The command line
installs one handler on stderr (`cli_handler`): progress at INFO, `-q/--quiet` keeps warnings
and errors only, `-v/--verbose` adds debug lines. Results (tables, reports, JSON) never go
through the logger: they are the command's output, on stdout.
"""
from __future__ import annotations

import logging
from typing import Callable

NAME = "zlh"
LOGGER = logging.getLogger(NAME)
LOGGER.addHandler(logging.NullHandler())

# Where a command's lines go, one call per line (print, the CLI's stderr writer, a list's
# append in tests).
Echo = Callable[[str], None]


class EchoHandler(logging.Handler):
    """Each record's message as one line through `echo` (the CLI's stderr writer, which
    survives a closed pipe)."""

    def __init__(self, echo: Echo):
        super().__init__()
        self.echo = echo
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.echo(self.format(record))
        except Exception:  # noqa: BLE001 - logging must never end a run
            self.handleError(record)


def cli_handler(echo: Echo, level: int = logging.INFO) -> EchoHandler:
    """The command line's handler (replacing an earlier one: one per process), at `level`;
    zlh's records then do not also reach the root logger's handlers."""
    for old in [h for h in LOGGER.handlers if isinstance(h, EchoHandler)]:
        LOGGER.removeHandler(old)
    handler = EchoHandler(echo)
    LOGGER.addHandler(handler)
    LOGGER.setLevel(level)
    LOGGER.propagate = False
    return handler


def set_level(level: int) -> None:
    LOGGER.setLevel(level)


def progress(text: str) -> None:
    """A progress line (INFO): shown by the CLI unless -q."""
    LOGGER.info(text)


def warning(text: str) -> None:
    LOGGER.warning(text)


def debug(text: str) -> None:
    LOGGER.debug(text)
