"""Other libraries' log lines during a run: into run.log once each, not onto the terminal.

A library under test may log through Python's `logging` on every case — a line per operator
it registers, say, through the root logger, which (with no handler configured) prints
`WARNING:root:...` on stderr each time. While a run measures, `LibraryLog` stands in for the
root logger's handlers: each distinct (logger, level, message) is written to run.log once as
`LIBRARY_LOG logger=… level=… count=… detail=…`-style marker lines (the first occurrence when
it happens, the count at the end), zlh's own logger is left to the command line, and the
root handlers are put back afterwards. Records of a logger with a handler of its own and no
propagation are that library's choice and are not touched.
"""
from __future__ import annotations

import collections
import logging
from typing import Callable

from ..common import log, markers
from ..common.log import NAME

LIBRARY_LOG = "LIBRARY_LOG"


class LibraryLog(logging.Handler):
    def __init__(self, write: Callable[[str], None]):
        super().__init__()
        self.write = write
        self.counts: collections.Counter = collections.Counter()
        self._saved: list[logging.Handler] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == NAME or record.name.startswith(NAME + "."):
            return
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is still a line
            message = str(record.msg)
        key = (record.name, record.levelname, " ".join(message.split()))
        self.counts[key] += 1
        if self.counts[key] == 1:
            try:
                self.write(markers.marker(LIBRARY_LOG, logger=record.name,
                                          level=record.levelname, detail=key[2]))
            except Exception:  # noqa: BLE001 - logging must never end a run
                self.handleError(record)

    def __enter__(self) -> "LibraryLog":
        root = logging.getLogger()
        self._saved = list(root.handlers)
        root.handlers = [self]
        return self

    def __exit__(self, *exc) -> None:
        root = logging.getLogger()
        if self._saved is not None:
            root.handlers = self._saved
            self._saved = None

    def summary(self) -> dict:
        """For run.json: records seen and distinct lines written."""
        return {"records": sum(self.counts.values()), "distinct": len(self.counts)}

    def repeated(self) -> list[str]:
        """One marker per line that came more than once, with its count (for run.log)."""
        return [markers.marker(LIBRARY_LOG, logger=name, level=level, count=n,
                               detail=f"repeated {n} times: {message}")
                for (name, level, message), n in self.counts.items() if n > 1]

    def close_into(self, info: dict, op: str) -> None:
        """Repeated lines counted in run.log; run.json (`info`) says how many there were."""
        summary = self.summary()
        if not summary["records"]:
            return
        for line in self.repeated():
            self.write(line)
        info["library_log"] = summary
        log.progress(f"{op}: {summary['records']} log line(s) of other libraries "
                     f"({summary['distinct']} distinct) went to run.log")
