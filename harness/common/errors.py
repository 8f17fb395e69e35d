"""Errors the user can act on, each with its exit code.

Every error here is printed as one line, without a traceback, by the CLI.
"""
from __future__ import annotations

import errno
import os
import traceback

EXIT_OK = 0
EXIT_FAILED_CASES = 1
EXIT_USAGE = 2
EXIT_PREFLIGHT = 3
EXIT_CALIBER = 4
EXIT_POISONED = 5
EXIT_REGRESSION = 6         # `zlh ab --fail-on ...`: a gate found a regression


class ZlhError(Exception):
    """Base class: a message for the user and the exit code that goes with it."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UsageError(ZlhError):
    """Bad input: unknown op, backend or dtype, unreadable shape file, bad option value."""

    exit_code = EXIT_USAGE


class InvalidValue(UsageError, ValueError):
    """A field out of range given to a harness type (`StoppingRule`, `Budget`): a UsageError
    (exit 2) that is also the ValueError code written against these types catches."""


class PreflightError(ZlhError):
    """The environment cannot run what was asked (missing package, directory, device)."""

    exit_code = EXIT_PREFLIGHT

    def __init__(self, check: str, message: str):
        super().__init__(f"PREFLIGHT_FAILED check={check} {message}")
        self.check = check


class CaliberError(ZlhError):
    exit_code = EXIT_CALIBER


class RunFailedError(ZlhError):
    """A run could not go on for a reason outside its cases (the disk filled up, a file could
    not be written). The run directory is marked `failed` with `reason`; ops after it are not
    run."""

    exit_code = EXIT_FAILED_CASES

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class AdapterFailure(RunFailedError):
    """The adapter raised while giving the next case, or gave something that is not a case:
    the run is marked `crashed` with `reason`; the cases measured before it are kept."""


class OpExitError(ZlhError):
    """The code under test called `sys.exit(...)` (or `exit()`): the run is marked `crashed`
    with the reason `the op called sys.exit(N)` and ends there; the exit status is zlh's own
    (1), never the one the op asked for, which could read as one of zlh's codes."""

    exit_code = EXIT_FAILED_CASES

    def __init__(self, message: str, code: object):
        super().__init__(message)
        self.code = code
        self.reason = op_exit_reason(code)


def op_exit_reason(code: object) -> str:
    """`the op called sys.exit(3)` for the code a SystemExit carries."""
    return f"the op called sys.exit({code!r})"


class Terminated(SystemExit):
    """SIGTERM (a timeout, `zlh ab` ending a run): unwinds like Ctrl-C so that the run
    directory is finalised, and ends the process with 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


EXIT_SIGINT = 130           # Ctrl-C (128 + SIGINT), as a shell reports it


def interrupt_exit_code(exc: BaseException) -> int:
    """The exit status of a command a Ctrl-C (KeyboardInterrupt) or a signal (Terminated)
    ended."""
    return exc.code if isinstance(exc, Terminated) else EXIT_SIGINT


class DevicePoisonedError(ZlhError):
    """The device or process state can no longer be trusted; the run must end now."""

    exit_code = EXIT_POISONED


class CallableError(ZlhError):
    """A callable handed to the Python API (`harness.measure`, `compare_callables`) raised
    while it was timed; the original exception is the `__cause__`."""

    exit_code = EXIT_FAILED_CASES


class CaseFailure(Exception):
    """One case cannot produce a number (broken kernel, wrong result). Other cases go on."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class CaseSkipped(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def quoted(value: object, limit: int = 80) -> str:
    """repr() of a value the user gave, for a one-line message: cut to `limit` characters
    (a 3,000-character op name is named by its start, not printed whole)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def run_write_failure(exc: BaseException) -> str:
    """Why `exc` ended a run, when it did because files could not be written (disk full,
    read-only file system: not the op's fault), else "". An adapter that broke midway is a
    RunFailedError too, but its run is marked crashed like any crash."""
    if isinstance(exc, RunFailedError) and not isinstance(exc, AdapterFailure):
        return exc.reason
    return ""


def write_failure(exc: OSError) -> str:
    """A short reason for a failed write: `disk full` for ENOSPC / EDQUOT, else the
    system's text (`Read-only file system`, `Permission denied`, ...)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk full"
    return exc.strerror or one_line(exc)


def one_line(text: object, limit: int = 240) -> str:
    """First meaningful line of an error text, whitespace folded, length bounded."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = " ".join(lines[0].split()) if lines else type(text).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def failure_detail(exc: BaseException, limit: int = 240) -> str:
    """One line for a failed case: the error's first line, and where it was raised (innermost
    frame: file name, line, function, source line) — a bare `assert` says nothing otherwise."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if not frames:
        return one_line(exc, limit)
    last = frames[-1]
    where = f"at {os.path.basename(last.filename)}:{last.lineno} in {last.name}"
    if last.line:
        where += f": {' '.join(last.line.split())}"
    where = one_line(where, limit // 2)
    message = one_line(exc, max(40, limit - len(where) - 1))   # long messages keep the place
    if message == type(exc).__name__:
        message += " (no message)"
    return f"{message} {where}"
