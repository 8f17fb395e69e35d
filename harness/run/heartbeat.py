"""A run's heartbeat: the file `heartbeat` in its run directory, touched when the run starts,
when a case ends and, while IR capture is on, whenever Triton compiles a kernel (an
autotune sweep compiles config after config before its first case ends). Its mtime is the
run's last sign of progress: a corpus supervisor that sees it stand still for
`--stall-timeout` seconds ends the op as a hang (corpus/stall.py). Touching costs one
utime; a failure to touch never costs the run anything.

While the run waits for its device's lock (a neighbour's device work, under overlap) it also
keeps `lock-wait` up to date, about once a second: the seconds it has waited so far. A
corpus supervisor does not count them against the op's timeout (corpus/stall.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..common.files import atomic_write_text
from ..compile.ir.triton_hooks import observer

HEARTBEAT = "heartbeat"
LOCK_WAIT = "lock-wait"


class Heartbeat:
    """The heartbeat of one run (its first beat when made); a listener of the compile
    observer while attached."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / HEARTBEAT
        self.attached = False
        self.beat()

    def beat(self) -> None:
        try:
            with open(self.path, "a", encoding="utf-8"):
                pass
            os.utime(self.path)
        except OSError:
            pass

    def waiting_on(self, lock) -> Callable[[], None]:
        """What `lock` (a DeviceLock) calls while this run waits for it: a beat (a wait is no
        hang), and `lock-wait` rewritten with the run's wait so far."""
        since = lock.waited_s
        wait_file = self.path.with_name(LOCK_WAIT)

        def waiting() -> None:
            self.beat()
            try:
                atomic_write_text(wait_file, f"{lock.waited_s - since + lock.waiting_s():.3f}\n")
            except OSError:
                pass
        return waiting

    def attach(self) -> None:
        """Beat on every compile from now on (the observer's hooks are installed already
        when IR capture is on; the heartbeat never installs them itself)."""
        with observer.lock:
            if observer.captures:
                self.attached = observer.attach(self)

    def detach(self) -> None:
        if self.attached:
            observer.detach(self)
            self.attached = False

    # the observer's listener protocol (triton_hooks.Listener)
    def _compiled(self, key: str, swept: bool, seconds: float | None = None) -> None:
        self.beat()

    def _launched(self, key, name: str, swept: bool, timed: bool = False) -> None:
        pass
