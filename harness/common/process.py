"""Child processes that must not outlive the command that started them.

A corpus command's workers and `zlh bench` children measure on its devices: when the command
is killed (SIGKILL included) they must stop too, or they would measure beside the resumed
command's own. On Linux a child asks for SIGTERM when its parent goes (PR_SET_PDEATHSIG); a
`zlh bench` started by a corpus command finds ZLH_PARENT_PID in its environment and does so at
start. Elsewhere a child ends at the end of its current op.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from pathlib import Path

from .errors import Terminated, UsageError, ZlhError

PARENT_ENV = "ZLH_PARENT_PID"


def check_runnable(python: str, where: str = "", path: str | os.PathLike | None = None) -> None:
    """UsageError unless the interpreter file exists and may be run (it is not started). One
    wording for every command that takes an interpreter: `WHERE: interpreter PYTHON not found`
    or `… is not an executable file`. `path`: the file to look at when the name `python`
    was resolved first (PATH); default `python` itself."""
    target = Path(python if path is None else path)
    prefix = f"{where}: " if where else ""
    if not target.exists():
        raise UsageError(f"{prefix}interpreter {python} not found")
    if not target.is_file() or not os.access(target, os.X_OK):
        raise UsageError(f"{prefix}interpreter {python} is not an executable file")


def die_with_parent(parent: int | None = None) -> None:
    """SIGTERM to this process when its parent dies; when `parent` (the pid expected) is
    already gone, now."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:     # it died before prctl took hold
        os.kill(os.getpid(), signal.SIGTERM)


PID_LIMIT = 1 << 22                 # Linux's largest pid_max


class ParentGone(ZlhError):
    """ZLH_PARENT_PID names a process that is not this one's parent: the zlh command that
    started it has ended (or the variable was set by hand). Ends like SIGTERM would."""

    exit_code = 128 + signal.SIGTERM


def die_with_parent_if_asked() -> None:
    """At the start of a command: follow ZLH_PARENT_PID (and drop it, so that this process's
    own children do not inherit the request). A value that is no process id is a UsageError;
    a parent already gone is ParentGone (one line, exit 143), not a silent SIGTERM."""
    value = os.environ.pop(PARENT_ENV, "")
    text = value.strip()
    if not text:                         # empty: unset, as in a shell
        return
    if not (text.isascii() and text.isdigit() and 0 < int(text) < PID_LIMIT):
        raise UsageError(f"{PARENT_ENV}={value!r:.40} is not a process id; zlh sets it for the "
                         f"processes it starts: unset it")
    die_with_parent()
    if os.getppid() != int(text):        # it died before prctl took hold
        raise ParentGone(f"{PARENT_ENV}={text}: the zlh command that started this one has "
                         f"ended, so this one ends too (unset {PARENT_ENV} if you set it)")


def child_env(env: dict) -> dict:
    """`env` for a child that must end with this process."""
    return {**env, PARENT_ENV: str(os.getpid())}


def terminate_handler(raise_in_owner):
    """A SIGTERM handler for the process installing it. A copy of this process made by
    `os.fork` without exec (an op's code can do that) must not unwind through zlh's own code
    when it gets SIGTERM: it would finalise, and overwrite, the run directory of the process
    it was copied from. It ends at once instead, with 128 + the signal number."""
    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:
            os._exit(128 + signum)
        _CAUGHT.append(signum)
        raise_in_owner(signum)
    return handler


# The signals that end a zlh command the way SIGTERM does (finalise, then exit 128 + N):
# SIGHUP is what a closed terminal sends.
TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                    if hasattr(signal, name))


def install_terminate_handlers(raise_in_owner) -> dict:
    """terminate_handler for every TERMINATING signal; a SIGHUP this process was started to
    ignore (`nohup`) stays ignored. SIGINT, where Python's own handler has it, gets one that
    raises KeyboardInterrupt as that does and notes that it came (raised_by_code). Returns the
    handlers replaced (restore_handlers)."""
    saved = {}
    for sig in TERMINATING:
        if sig != signal.SIGTERM and signal.getsignal(sig) == signal.SIG_IGN:
            continue
        saved[sig] = signal.signal(sig, terminate_handler(raise_in_owner))
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        saved[signal.SIGINT] = signal.signal(signal.SIGINT, _noted_sigint)
    return saved


# The signals zlh's handlers have raised an exception for (SIGTERM, SIGHUP, SIGINT), in order.
_CAUGHT: list[int] = []


def _noted_sigint(signum, frame):
    _CAUGHT.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def signals_kept():
    """For a block of an op's or adapter's code: where zlh's handlers caught a signal in it,
    the block ends with that signal's exception made again (KeyboardInterrupt for SIGINT,
    Terminated for the others), whatever the code made of it — Triton's interpreter raises
    InterpreterError for whatever a kernel raised, and a library may catch everything — so
    that the signal still ends the command."""
    since = len(_CAUGHT)
    try:
        yield
    finally:
        if len(_CAUGHT) > since:
            signum = _CAUGHT[since]
            raise (KeyboardInterrupt() if signum == signal.SIGINT
                   else Terminated(signum)) from None


def raised_by_code(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt came from the code that raised it (an op's), not from a
    SIGINT: where zlh's SIGINT handler is in place and saw none, or where SIGINT is ignored
    (the process was started so, as a background job or under `nohup`: no SIGINT can
    raise it). Where another handler is in place (an embedding program's, Python's own),
    every KeyboardInterrupt is taken for a SIGINT."""
    if not isinstance(exc, KeyboardInterrupt) or signal.SIGINT in _CAUGHT:
        return False
    return signal.getsignal(signal.SIGINT) in (_noted_sigint, signal.SIG_IGN)


def restore_handlers(saved: dict) -> None:
    """The handlers install_terminate_handlers replaced, back: a signal that comes once the
    command has ended (while the interpreter shuts down) ends the process as it would have
    before, not as an exception raised inside an exit callback."""
    for sig, handler in saved.items():
        with contextlib.suppress(ValueError, TypeError):    # not the main thread; None
            signal.signal(sig, handler)


def signal_name(signum: int) -> str:
    """`SIGTERM`, `SIGHUP`, … (`signal N` for one Python does not name)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class HeldTermination:
    """SIGTERM, SIGHUP and SIGINT held back while a run directory is being created, then delivered
    where the run can record them: `hold()`, create, then `release()` as the first statement
    inside the `try` that finalises the run. A signal that arrived in between runs its own
    handler there (Terminated, KeyboardInterrupt), so no run.json is left `running` by a
    signal that came just after it was first written. Only the main thread installs signal
    handlers; elsewhere nothing is held."""

    SIGNALS = (*TERMINATING, signal.SIGINT)

    def __init__(self):
        self.pending: list = []
        self.saved: dict = {}

    def hold(self) -> "HeldTermination":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.saved[sig] = signal.signal(sig, self._note)
        return self

    def _note(self, signum, frame):
        self.pending.append((signum, frame))

    def release(self, deliver: bool = True) -> None:
        """Restore the handlers, then act on the first signal held, as it would have acted
        (`deliver=False`: the process is already ending for such a signal; drop them)."""
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved = {}
        if not self.pending or not deliver:
            return
        signum, frame = self.pending[0]
        handler = signal.getsignal(signum)
        if callable(handler):
            handler(signum, frame)
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), signum)
