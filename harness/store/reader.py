"""Reading run directories back: the one parser of run.json and results.jsonl.

Every command that looks at a finished (or unfinished) run goes through `load_run` or
`read_info`, so a damaged file gets the same one-line error everywhere.
"""
from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import UsageError
from ..common.files import read_json_object
from ..common.schema import check_readable
from .caliber import Caliber
from .results import Row
from .rundir import RESULTS_JSONL, RUN_JSON, safe_name

# run.json statuses; `abandoned` is derived: `running`, but its process is gone.
RUNNING, COMPLETE, ABANDONED = "running", "complete", "abandoned"


@dataclass
class StoredRun:
    path: Path
    info: dict
    rows: list[Row]

    @property
    def op(self) -> str:
        return self.info.get("op", "?")

    @property
    def caliber(self) -> Caliber | None:
        data = self.info.get("caliber")
        if not isinstance(data, dict) or not data:
            return None
        # runs written before the seed joined the caliber recorded it at the top level
        older = {"seed": self.info["seed"]} if "seed" in self.info else {}
        return Caliber.from_dict(data, fallback=older)

    @property
    def status(self) -> str:
        """run.json's status, with a `running` run whose process is gone read as abandoned."""
        status = str(self.info.get("status", "?"))
        if status == RUNNING and not _process_alive(self.info.get("pid"),
                                                    self.info.get("host", {}).get("hostname")):
            return ABANDONED
        return status

    @property
    def autotune_mode(self) -> str | None:
        return self.info.get("autotune_mode") or (self.info.get("caliber") or {}).get(
            "autotune_mode")


def read_info(path) -> dict:
    """run.json of a run directory as a dict, or UsageError saying what is wrong."""
    path = Path(path)
    file = path / RUN_JSON
    if not path.is_dir():
        why = "not a directory" if path.exists() else "no such directory"
        raise UsageError(f"{path} is not a run directory ({why})")
    return read_json_object(file, f"{path} is not a run directory (no {RUN_JSON})",
                            "a run description")


def read_rows(file) -> list[Row]:
    """Rows of a results.jsonl; a line that is not a row is a UsageError naming it."""
    file = Path(file)
    rows = []
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file} cannot be read: {_first_line(exc)}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError(f"a JSON {type(data).__name__}, not an object")
            check_readable(data, f"{file}: line {number}")
            rows.append(Row.from_dict(data))
        except (ValueError, KeyError, TypeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else _first_line(exc)
            raise UsageError(f"{file}: line {number} is not a result row ({what})") from None
    return rows


def load_run(path) -> StoredRun:
    path = Path(path)
    info = read_info(path)
    results = path / RESULTS_JSONL
    return StoredRun(path, info, read_rows(results) if results.exists() else [])


def load_run_or_none(path) -> StoredRun | None:
    """A run directory, or None when there is none or it cannot be read (for summaries that
    go on without it)."""
    if path is None:
        return None
    try:
        return load_run(path)
    except UsageError:
        return None


def find_runs(root, op: str, mode: str | None = None) -> list[Path]:
    """Run directories of `op` directly under `root`, oldest first (by start time); with
    `mode`, only those whose autotune mode is that ("record", "replay"). Unreadable
    directories are passed over."""
    root = Path(root)
    found = []
    for path in root.glob(f"{safe_name(op)}_*") if root.is_dir() else []:
        try:
            run = StoredRun(path, read_info(path), [])
        except UsageError:
            continue
        if run.op != op or (mode and run.autotune_mode != mode):
            continue
        found.append((str(run.info.get("started_at", "")), path.stat().st_mtime, path))
    return [p for _, _, p in sorted(found)]


def _process_alive(pid, hostname) -> bool:
    """Whether the process that wrote a `running` run.json still runs. On another host, or
    without a pid (older runs), it cannot be told: assumed alive."""
    if not isinstance(pid, int) or (hostname and hostname != socket.gethostname()):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
