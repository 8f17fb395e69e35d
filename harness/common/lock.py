"""One command per root at a time.

A batch, screen, campaign, A/B (`zlh ab --root`, also `--replay` and RUN_A RUN_B with a
root), calibration or product run holds an advisory lock on `<root>/.zlh-lock` (flock) for as
long as its process lives; the file names the holder's pid and command. A second command on
the same root — a `--resume` of a batch that is still running, two batches or two A/Bs started
into the same root at once, a `--rescore` while the screen writes its table — ends with one
line instead of interleaving writes. The kernel drops the lock when the holder dies, however
it dies (SIGKILL included); the file itself stays and means nothing then, and a folder that
holds nothing else is an empty folder (`only_lock`). The holder's workers and `zlh bench`
children inherit the lock, so a root stays held until the last of them has ended too (they end
with their parent, finishing their run directory first): a resume right after a kill waits for
them a few seconds rather than measuring beside them.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import re
import time
from pathlib import Path

from .errors import UsageError

try:
    import fcntl
except ImportError:          # no flock on this platform: roots are not guarded
    fcntl = None

LOCK_NAME = ".zlh-lock"
LEFTOVER_WAIT_S = 30.0       # how long the children of a dead holder may take to end
_HELD: dict[str, int] = {}


def claim_root(root: Path, verb: str, then: str | None = None) -> None:
    """Hold `root` for this process (re-entrant), or UsageError naming the holder and what to
    do `then` (default: resume the root with this verb once the holder has ended)."""
    key = str(Path(root).resolve())
    if fcntl is None or key in _HELD:
        return
    if not Path(root).is_dir():
        raise UsageError(f"{root}: no such directory")
    fd = _open_lock(Path(root), os.O_RDWR | os.O_CREAT)
    if not _lock(fd, LEFTOVER_WAIT_S):
        holder = _holder(fd)
        if not _holder_alive(fd):
            holder += " (ended; processes it started still run)"
        os.close(fd)
        raise UsageError(in_use(root, holder, then or f"then run zlh {verb} --resume {root}"))

    os.ftruncate(fd, 0)
    os.pwrite(fd, f"zlh {verb}, pid {os.getpid()}\n".encode(), 0)
    _HELD[key] = fd


def in_use(root: Path, holder: str, then: str) -> str:
    """The one line a command refused on a held root prints."""
    return f"{root} is in use by {holder}; wait for it to end (or stop it), {then}"


@contextlib.contextmanager
def holding(root: Path, verb: str, then: str | None = None, made: bool = False):
    """`root` held for the block (claim_root), let go after it unless this process already
    held it before (a calibration around the A/B it runs); a root the block wrote nothing
    into is left as it was (forget_if_empty; `made`: this command made the folder)."""
    held = str(Path(root).resolve()) in _HELD
    claim_root(root, verb, then)
    try:
        yield
    finally:
        if not held:
            forget_if_empty(root, made)
            release_root(root)


def only_lock(root: Path) -> bool:
    """Whether `root` is a folder holding nothing but (at most) a lock file: a command that
    claimed it and ended before writing its plan (a full disk, a kill) — an empty root."""
    try:
        return Path(root).is_dir() and all(p.name == LOCK_NAME for p in Path(root).iterdir())
    except OSError:
        return False


def forget_if_empty(root: Path, made: bool = False) -> None:
    """A held root whose command wrote nothing into it (its first write failed: a full disk)
    loses the lock file, and the folder too when the command `made` it: it is left as it
    was, not a root that only a lock claims. Called while the root is still held."""
    if not only_lock(root):
        return
    with contextlib.suppress(OSError):
        (Path(root) / LOCK_NAME).unlink(missing_ok=True)
        if made:
            Path(root).rmdir()


def _open_lock(root: Path, flags: int) -> int:
    """The lock file's descriptor: never through a symbolic link (whose target would be
    overwritten), never blocking on a FIFO; UsageError when it is not a regular file."""
    path = root / LOCK_NAME
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{path} is a symbolic link; zlh keeps its lock in a plain "
                             f"file there: remove the link") from None
        raise UsageError(f"{root}: cannot create {LOCK_NAME} ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path} is not a plain file; zlh keeps its lock there: remove it")
    return fd


def _lock(fd: int, wait_s: float) -> bool:
    """Take the lock; when the pid the file names is gone (a killed holder whose children
    still finish their runs), wait for them up to `wait_s`."""
    deadline = time.time() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            pass
        if _holder_alive(fd) or time.time() > deadline:
            return False
        time.sleep(0.2)


def _holder(fd: int) -> str:
    """The holder's line in a lock file: `zlh batch, pid N`."""
    return os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"


def _holder_alive(fd: int) -> bool:
    match = re.search(r"pid (\d+)", _holder(fd))
    if match is None:
        return True
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def root_in_use(root: Path) -> str | None:
    """Who holds `root` now (its lock file's line), or None when nobody does. The lock is
    only tested: taken and let go at once when free."""
    if fcntl is None or str(Path(root).resolve()) in _HELD:
        return None
    try:
        fd = _open_lock(Path(root), os.O_RDONLY)
    except UsageError:
        return None                       # never held, or not a lock: nothing to say
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    except OSError:
        return _holder(fd)
    finally:
        os.close(fd)


def held_fds() -> tuple[int, ...]:
    """The lock descriptors this process holds: handed to its children, which keep the roots
    held until they end."""
    return tuple(_HELD.values())


def release_root(root: Path) -> None:
    """Let `root` go (a command that ends inside a longer-lived process: the API, tests)."""
    fd = _HELD.pop(str(Path(root).resolve()), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
