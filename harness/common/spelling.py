"""How an option is named in an error: `--max-time-ms` to a command-line user, `max_time_ms`
to a Python caller (`harness.bench`, `harness.measure`, `BenchOptions.from_flat`).

The same checks run under both, so a message names an option through `option(name)` rather
than spelling a flag. The command line marks its calls (`as_flags`, around every command and
in a corpus worker); anything else is a Python caller and reads keywords. The flags come from
the bench option table (run/option_table.py registers them); a name it does not hold is
spelled as its flag would be (`allow_partial` -> `--allow-partial`).
"""
from __future__ import annotations

import contextlib
import contextvars

_FLAGS = contextvars.ContextVar("zlh_option_spelling_flags", default=False)
_FLAG_OF: dict[str, str] = {}
_UNSET = object()


def register(flags: dict[str, str]) -> None:
    """Flat name -> command-line flag, for the options whose flag is not the plain one."""
    _FLAG_OF.update(flags)


@contextlib.contextmanager
def as_flags():
    """Within: options are named by their command-line flags."""
    token = _FLAGS.set(True)
    try:
        yield
    finally:
        _FLAGS.reset(token)


@contextlib.contextmanager
def as_keywords():
    """Within: options are named by their keywords, also under the command line — for
    options read from a file (batch.json's `options`, a manifest's `bench`), whose keys are
    the keywords."""
    token = _FLAGS.set(False)
    try:
        yield
    finally:
        _FLAGS.reset(token)


def use_flags() -> None:
    """For the rest of this process (a command-line entry point that is not a click command):
    options are named by their flags."""
    _FLAGS.set(True)


def flags() -> bool:
    return _FLAGS.get()


def option(name: str, value=_UNSET) -> str:
    """`--max-time-ms` / `max_time_ms`; with a value, `--l2 flush` / `l2='flush'`."""
    if _FLAGS.get():
        flag = _FLAG_OF.get(name) or "--" + name.replace("_", "-")
        return flag if value is _UNSET else f"{flag} {value}"
    return name if value is _UNSET else f"{name}={value!r}"
