"""How far a command over many items has got: a bar on a terminal, plain lines elsewhere.

The engines (batch, screen, ab rounds, product, campaign) print one line per finished item,
most of them starting with their own counter `[done/total]`. A `Meter` takes those lines:

- on a terminal, a tqdm bar on stderr (`done/total`, elapsed, ETA) stays below the lines and
  each line is written above it, whole (never glued to the bar);
- off a terminal (a pipe, a file, CI) or with `-q`, there is no bar: each line is printed as
  given, so logs read the same as before.

The bar takes its count from the `[done/total]` a line starts with (`counted`), or from
`advance()` for lines without one; `set_total` names the total up front.
"""
from __future__ import annotations

import re
import sys
import threading
from typing import TextIO

from tqdm import tqdm

from .log import Echo

COUNTER = re.compile(r"^\[\s*(\d+)/(\d+)\]")
BAR_FORMAT = "{desc}{bar:24} {n_fmt}/{total_fmt} elapsed {elapsed} eta {remaining}"


def on_terminal(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):          # closed or replaced by a test
        return False


class Meter:
    """A progress bar when `show` (default: stderr is a terminal), else nothing but the
    lines. Use it as a context manager: the bar is removed when the command ends."""

    def __init__(self, desc: str = "", total: int | None = None, *, show: bool | None = None,
                 stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.show = on_terminal(self.stream) if show is None else show
        self.desc, self.total = desc, total
        self.lock = threading.RLock()
        self.bar: tqdm | None = None      # drawn at the first count, not before

    @property
    def shown(self) -> bool:
        return self.show

    def _drawn(self) -> tqdm | None:
        if self.bar is None and self.show:
            self.bar = tqdm(total=self.total, desc=f"{self.desc} " if self.desc else "",
                            file=self.stream, leave=False, dynamic_ncols=True,
                            bar_format=BAR_FORMAT, mininterval=0.5)
        return self.bar

    def write(self, echo: Echo, line: str) -> None:
        """`line` through `echo` (stdout or stderr), above the bar when there is one."""
        if self.bar is None:
            echo(line)
            return
        with self.lock, tqdm.external_write_mode(file=self.stream):
            echo(line)

    def counted(self, echo: Echo) -> Echo:
        """An echo that writes each line (above the bar) and, for a line starting with
        `[done/total]`, moves the bar there."""
        def out(line: str) -> None:
            self.write(echo, line)
            match = COUNTER.match(line)
            if match:
                self.count(int(match.group(1)), int(match.group(2)))
        return out

    def set_total(self, total: int, done: int = 0) -> None:
        self.total = total
        self.count(done, total)

    def count(self, done: int, total: int | None = None) -> None:
        with self.lock:
            bar = self._drawn()
            if bar is None:
                return
            if total is not None:
                bar.total = self.total = total
            bar.n = done
            bar.refresh()

    def advance(self, n: int = 1) -> None:
        with self.lock:
            bar = self._drawn()
            if bar is not None:
                bar.update(n)

    def close(self) -> None:
        with self.lock:
            if self.bar is not None:
                self.bar.close()
            self.bar = None

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
