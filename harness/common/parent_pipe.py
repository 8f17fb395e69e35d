"""A `zlh bench` child tells the corpus command that started it why its run could not write.

A run that meets a full disk or a read-only file system marks itself `failed` in run.json, and
the parent reads that. But the run.json may say nothing: the run directory is removed when
its first run.json cannot be written, and a final run.json that does not fit even over itself
still reads `running`. The parent then saw only exit status 1 and judged the op FAIL or CRASH,
and went on to the next op on the same full disk. So the parent hands the child the write end
of a pipe (ZLH_WRITE_FAILURE_FD, taken out of the environment at the child's start so that its
own children do not inherit it); the child writes the reason there as it ends (a pipe needs no
disk space), and the parent reads it once the child is gone.
"""
from __future__ import annotations

import os

WRITE_FAILURE_ENV = "ZLH_WRITE_FAILURE_FD"
_LIMIT = 512
_fd: int | None = None         # this process's write end, taken at its command's start


def take_from_environment() -> None:
    """At a command's start: the write end its parent named, if any (the variable is
    dropped); a value that is no open descriptor is ignored."""
    global _fd
    value = os.environ.pop(WRITE_FAILURE_ENV, "").strip()
    _fd = int(value) if value.isascii() and value.isdigit() else None


def tell_parent(reason: str) -> None:
    """The reason this process's run could not write its files, to the parent that asked;
    nothing where none did. Never raises: the error on its way out matters more."""
    if _fd is None:
        return
    try:
        os.write(_fd, reason.encode("utf-8", "replace")[:_LIMIT])
    except OSError:
        pass


class WriteFailurePipe:
    """The parent's side, around one child: `env` and `fds` to start it with, then `reason()`
    once it has ended ("" when it told nothing)."""

    def __init__(self):
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self.env = {WRITE_FAILURE_ENV: str(self._write)}
        self.fds = (self._write,)

    def __enter__(self) -> "WriteFailurePipe":
        return self

    def reason(self) -> str:
        try:
            data = os.read(self._read, _LIMIT)
        except (BlockingIOError, OSError):
            return ""
        return data.decode("utf-8", "replace").strip()

    def __exit__(self, *exc) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
