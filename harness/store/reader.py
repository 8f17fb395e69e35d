"""Reading run directories back: the one parser of run.json and results.jsonl.

Every command that looks at a finished (or unfinished) run goes through `load_run` or
`read_info`, so a damaged file gets the same one-line error everywhere.
"""
from __future__ import annotations

import collections
import glob
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..common.documents import loads_json
from ..common.errors import CaliberError, UsageError
from ..common.fields import Fields, is_int
from ..common.files import (SYMLINK_LOOP, check_path_text, link_loop, read_json_object,
                            read_text)
from ..common.schema import check_readable
from .caliber import Caliber, check_caliber
from .results import FAILED, SKIPPED, SUCCESS, Row, check_row, row_key
from .rundir import RESULTS_JSONL, RUN_JSON, legacy_safe_name, safe_name

# run.json statuses; `abandoned` is derived: `running`, but its process is gone;
# `results_lost` too: `complete`, but results.jsonl lacks rows run.json counts.
RUNNING, COMPLETE, ABANDONED = "running", "complete", "abandoned"
RESULTS_LOST = "results_lost"
# Every status zlh writes in run.json (the run schema's enum), spelled as written.
RUN_STATUSES = (RUNNING, COMPLETE, "interrupted", "failed", "poisoned", "crashed",
                "usage_error")
COUNTED = (SUCCESS, FAILED, SKIPPED)


@dataclass
class StoredRun:
    path: Path
    info: dict
    rows: list[Row]
    rows_read: bool = True           # False: run.json only (load_info)

    def __repr__(self) -> str:
        """Short: the directory, its status and how many rows, never the raw samples."""
        return (f"StoredRun(path={str(self.path)!r}, status={self.info.get('status')!r}, "
                f"rows={len(self.rows)})")

    @property
    def lost(self) -> str | None:
        """What results.jsonl lacks of the rows run.json counts (it is missing, or holds
        fewer rows of a status), in words naming the file; None when it holds them all."""
        counts = self.info.get("counts")
        if not self.rows_read or not isinstance(counts, dict):
            return None
        held = collections.Counter(row.status for row in self.rows)
        counted = {s: n for s in COUNTED if is_int(n := counts.get(s)) and n > 0}
        if not any(n > held[s] for s, n in counted.items()):
            return None
        file = self.path / RESULTS_JSONL
        holds = ("is missing" if not file.exists() else
                 f"holds {len(self.rows)} row(s)" if self.rows else "holds no row")
        said = ", ".join(f"{n} {s}" for s, n in counted.items())
        return f"{file} {holds}, run.json counts {sum(counted.values())} ({said})"

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
        host = self.info.get("host")
        hostname = host.get("hostname") if isinstance(host, dict) else None
        if status == RUNNING and not _process_alive(self.info.get("pid"), hostname):
            return ABANDONED
        if status == COMPLETE and self.lost:
            return RESULTS_LOST
        return status

    @property
    def autotune_mode(self) -> str | None:
        return self.info.get("autotune_mode") or (self.info.get("caliber") or {}).get(
            "autotune_mode")


def read_info(path) -> dict:
    """run.json of a run directory as a dict, or UsageError saying what is wrong."""
    check_path_text(path, "run directory")
    path = Path(path)
    file = path / RUN_JSON
    if not path.is_dir():
        if link_loop(path):
            raise UsageError(f"{path}: {SYMLINK_LOOP}")
        why = "not a directory" if path.exists() else "no such directory"
        raise UsageError(f"{path} is not a run directory ({why})")
    missing = "" if os.path.lexists(file) else _what_it_holds(path)
    info = read_json_object(file, f"{path} is not a run directory (no {RUN_JSON}{missing})",
                            "a run description")
    return _info_fields(info, str(file))


AB_ROOT_FILES = ("plan.json", "report.json", "status.tsv", "calibration.json")


def _what_it_holds(path: Path) -> str:
    """`; it is an A/B root: ...` / `; it holds runs: ...` for a folder given where one run
    directory was expected (a root for a run, the usual slip), else ''."""
    if any((path / name).is_file() for name in AB_ROOT_FILES):
        return (f"; it is an A/B root: `zlh report {path}` prints its report, its runs are "
                f"under {path}/<op>/r<k>_<A|B>/")
    try:
        runs = sorted(p.name for p in path.glob("*_*") if (p / RUN_JSON).is_file())
    except OSError:
        return ""
    return f"; it holds runs, e.g. {path / runs[-1]}" if runs else ""


def refuse_run_dir(path, flag: str) -> None:
    """UsageError when a folder zlh would write runs or an A/B under is itself a run
    directory (a run given where its root was meant): the new files would mix with it."""
    if path is not None and (Path(path) / RUN_JSON).is_file():
        raise UsageError(f"{flag} {path} is a run directory (it holds {RUN_JSON}), not a "
                         f"folder to write under; give its parent or a new folder")


# run.json fields readers take apart, by type; each may be absent (older runs). `caliber`
# is not here: one that is not an object is a run without identity (the caliber guard's
# refusal, exit 4).
_INFO_TEXT = ("op", "status", "reason", "autotune_mode", "autotune_replay_from",
              "autotune_replay_records_sha256", "started_at", "finished_at")
_INFO_OBJECTS = ("device", "versions", "compiler", "host", "telemetry", "autotune_fallbacks",
                 "ir", "adapter")


def _info_fields(info: dict, where: str) -> dict:
    f = Fields(info, where)
    for name in _INFO_TEXT:
        if info.get(name) is not None:
            f.str(name)
    for name in _INFO_OBJECTS:
        if info.get(name) is not None:
            f.object(name)
    if info.get("status") is not None and info["status"] not in RUN_STATUSES:
        raise f.error("status", " or ".join(RUN_STATUSES), info["status"])
    for name in ("wall_s", "inputs_s", "inputs_nested_s"):
        if info.get(name) is not None:
            f.number(name, low=0)
    if info.get("counts") is not None:
        counts = Fields(f.object("counts"), f"{where}: counts")
        for name in COUNTED:
            if name in counts.doc:
                counts.int(name, low=0)
    if info.get("pid") is not None:
        f.int("pid")
    if isinstance(info.get("caliber"), dict):
        check_caliber(Fields(info["caliber"], f"{where}: caliber"))
    return info


def read_rows(file) -> list[Row]:
    """Rows of a results.jsonl; a line that is not a row, or one that repeats the case of an
    earlier line (a run writes each case once: the file was damaged or appended to), is a
    UsageError naming it."""
    file = Path(file)
    rows, lines_of = [], {}
    try:
        lines = read_text(file).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file} cannot be read: "
                         f"{getattr(exc, 'strerror', None) or _first_line(exc)}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = loads_json(line)
            if not isinstance(data, dict):
                raise ValueError(f"a JSON {type(data).__name__}, not an object")
            check_readable(data, f"{file}: line {number}")
            rows.append(Row.from_checked(_row_fields(data, f"{file}: line {number}")))
        except (ValueError, KeyError, TypeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else _first_line(exc)
            raise UsageError(f"{file}: line {number} is not a result row ({what})") from None
        key = row_key(rows[-1])
        if key in lines_of:
            raise UsageError(f"{file}: line {number} repeats the case of line "
                             f"{lines_of[key]} ({key[1]} {key[2]}, occurrence {key[3]}): a "
                             f"run writes each case once; the file is damaged")
        lines_of[key] = number
    return rows


class _RowFields(Fields):
    def error(self, name: str, what: str, value) -> UsageError:
        why = f"missing field {name!r}" if self.missing(value) else \
            f"field {name}: expected {what}, got {repr(value)[:60]}"
        return UsageError(f"{self.where} is not a result row ({why})")


def _row_fields(data: dict, where: str) -> dict:
    """A result row whose fields are of the types zlh writes (see results.check_row)."""
    check_row(_RowFields(data, where))
    return data


# Set (to 1) by `zlh ab --replay RUN_A --allow-partial` for its side B: the `zlh bench` it
# starts may then replay a record run that did not complete.
REPLAY_PARTIAL_ENV = "ZLH_REPLAY_PARTIAL"


def status_detail(run: StoredRun) -> str:
    """Why a run is not `complete`, in words: its process gone, still running, results lost
    (naming the file), or run.json's reason; '' when there is nothing to add."""
    status = run.status
    if status == RESULTS_LOST:
        return f"run.json says complete, but {run.lost}"
    extra = ("its process is gone" if status == ABANDONED else
             "still running" if status == RUNNING else run.info.get("reason") or "")
    lost = run.lost
    return "; ".join(part for part in (extra, lost) if part)


def describe_status(run: StoredRun) -> str:
    extra = status_detail(run)
    return f"the run did not complete (status {run.status}{', ' + extra if extra else ''})"


def check_complete(run: StoredRun, where: str, hint: str) -> None:
    """CaliberError (exit 4) `<where>: the run did not complete (...); <hint>` for a run
    that is still running, was killed or failed: what it measured or recorded is partial.
    One refusal for `zlh ab` comparing it and `zlh bench --replay` replaying it."""
    if run.status != COMPLETE:
        raise CaliberError(f"{where}: {describe_status(run)}; {hint}")


def load_info(path) -> StoredRun:
    """The run with its run.json only (its rows are not read): for its status, op, mode."""
    return StoredRun(Path(path), read_info(path), [], rows_read=False)


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
    candidates = ({p for name in {safe_name(op), legacy_safe_name(op)}
                   for p in root.glob(f"{glob.escape(name)}_*")} if root.is_dir() else set())
    for path in candidates:
        try:
            run = load_info(path)
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
    except (ProcessLookupError, OverflowError):      # no such process (or no such pid)
        return False
    except PermissionError:
        return True
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
