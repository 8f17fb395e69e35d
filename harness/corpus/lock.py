"""One corpus command per root at a time.

A batch, screen or campaign holds an advisory lock on `<root>/.zlh-lock` (flock) for as long as
its process lives; the file names the holder's pid and command. A second command on the same
root — a `--resume` of a batch that is still running, two batches started into the same `--out`
at once, a `--rescore` while the screen writes its table — ends with one line instead of
interleaving writes. The kernel drops the lock when the holder dies, however it dies (SIGKILL
included), so a killed batch resumes at once; the file itself stays and means nothing then.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..common.errors import UsageError

try:
    import fcntl
except ImportError:          # no flock on this platform: roots are not guarded
    fcntl = None

LOCK_NAME = ".zlh-lock"
_HELD: dict[str, int] = {}


def claim_root(root: Path, verb: str) -> None:
    """Hold `root` for this process (re-entrant), or UsageError naming the holder."""
    key = str(Path(root).resolve())
    if fcntl is None or key in _HELD:
        return
    path = Path(root) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(f"{root}: cannot create {LOCK_NAME} ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise UsageError(f"{root} is in use by {holder}; wait for it to end (or stop it), "
                         f"then run zlh {verb} --resume {root}") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"zlh {verb}, pid {os.getpid()}\n".encode(), 0)
    _HELD[key] = fd


def release_root(root: Path) -> None:
    """Let `root` go (a command that ends inside a longer-lived process: the API, tests)."""
    fd = _HELD.pop(str(Path(root).resolve()), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
