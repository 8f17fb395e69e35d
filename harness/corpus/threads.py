"""The lanes of a corpus command, one thread per device, joined so that an error raised in
one (a damaged file met halfway, a usage error) reaches the command as that error and its
exit code, instead of a thread traceback and a command that ends as if all went well."""
from __future__ import annotations

import threading
from typing import Callable


def run_lanes(lanes: list[tuple[str, Callable, tuple]], on_error: Callable[[], None]) -> None:
    """Start every (name, target, args), wait for all; the first error any of them raised is
    raised here once all have stopped (`on_error` tells the others to stop early)."""
    errors: list[BaseException] = []

    def guarded(target, *args):
        try:
            target(*args)
        except BaseException as exc:      # noqa: BLE001 - handed to the main thread below
            errors.append(exc)
            on_error()

    threads = [threading.Thread(target=guarded, args=(target, *args), daemon=True, name=name)
               for name, target, args in lanes]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.5)
    except KeyboardInterrupt:
        on_error()
        raise
    if errors:
        raise errors[0]
