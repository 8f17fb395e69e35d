"""`every(seconds, fn)`: a block during which `fn` is called from a thread of its own every
`seconds` (not at the start), stopped and joined when the block ends, however it ends."""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator


@contextlib.contextmanager
def every(seconds: float, fn: Callable[[], object], name: str = "zlh-periodic") -> Iterator[None]:
    done = threading.Event()

    def loop() -> None:
        while not done.wait(seconds):
            fn()
    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=seconds + 1)
