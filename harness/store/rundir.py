"""Writing a run directory: the contract every later command reads.

    runs/<op>_<YYYYmmdd-HHMMSS>[-N]/
        run.json        identity, options, caliber, versions, command line, timings
        results.jsonl   one row per case, raw samples included
        results.csv     the same rows, flat
        run.log         the human table and every marker line, plain text
        shapes.yaml     the shapes actually used

Reading one back is `store.reader`'s job.
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

import yaml

from ..common.errors import write_failure
from ..common.files import atomic_write_json, atomic_write_text, overwrite_in_place, to_json
from ..common.schema import stamp
from .results import CSV_HEADER, csv_line, jsonl_line

SCHEMA_VERSION = 1
RUN_JSON = "run.json"
RESULTS_JSONL = "results.jsonl"
RESULTS_CSV = "results.csv"
RUN_LOG = "run.log"
SHAPES_YAML = "shapes.yaml"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_UNSAFE = re.compile(r"[^\w.\-]+")


MAX_NAME_BYTES = 120    # a run directory adds a stamp; file systems allow 255 bytes a name


def safe_name(text: str) -> str:
    """The file-name form of an op name, one name to one form: a name of letters, digits,
    `_`, `.` and `-` (not starting with `.`) of at most MAX_NAME_BYTES stays as it is; any
    other (`func:op`, a path, a space, a longer name) has those characters replaced by `_`,
    is cut to fit and gets 8 hex digits of the name's sha1, so that `acos` and `acos_`, or
    `a:b` and `a_b`, never share a directory."""
    name = uncapped_name(text)
    if len(name.encode("utf-8", "surrogatepass")) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    head = (_UNSAFE.sub("_", text).strip("_.") or "op").encode("utf-8", "surrogatepass")
    head = head[:MAX_NAME_BYTES - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head}-{digest}"


def uncapped_name(text: str) -> str:
    """safe_name before names were cut to MAX_NAME_BYTES (the folders of older roots)."""
    cleaned = _UNSAFE.sub("_", text)
    if cleaned == text and text and not text.startswith("."):
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned.strip('_.') or 'op'}-{digest}"


def op_folder(parent: Path, op: str) -> Path:
    """The op's folder under `parent`: safe_name's, or, where an older root has it, the
    folder of its uncut name (a name of 121 to about 240 bytes)."""
    folder = Path(parent) / safe_name(op)
    older = Path(parent) / uncapped_name(op)
    return older if older != folder and not folder.exists() and older.is_dir() else folder


def legacy_safe_name(text: str) -> str:
    """The form run directories had before `safe_name` became one-to-one (still found)."""
    return _UNSAFE.sub("_", text).strip("_") or "op"


# What a run.json written over itself on a full disk keeps whatever the space: who the run
# is, how it ended and what it counted.
_ESSENTIAL = frozenset({"schema_version", "zlh_version", "run_id", "op", "status", "reason",
                        "pid", "adapter", "started_at", "finished_at", "wall_s", "counts",
                        "unwritten_rows"})


def _shrinking(doc: dict):
    """`doc`, then copies of it without its largest non-essential details, one more left
    out each time (named in `omitted_for_space`)."""
    yield doc
    sizes = {key: len(to_json(value, indent=None)) for key, value in doc.items()
             if key not in _ESSENTIAL}
    omitted: list[str] = []
    for key in sorted(sizes, key=lambda k: -sizes[k]):
        omitted.append(key)
        kept = {k: v for k, v in doc.items() if k not in omitted}
        yield {**kept, "omitted_for_space": omitted[:]}


MADE: list[Path] = []      # the run directories this process made, in order (the last one
                           # is where an interrupted `zlh bench` kept what it measured)


def made_since(count: int) -> list[Path]:
    """The run directories this process made after the first `count` of them that still
    hold a run.json (one removed because its run could not start is left out)."""
    return [path for path in MADE[count:] if (path / RUN_JSON).is_file()]


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.rows_written = 0        # rows results.jsonl holds: what run.json may count
        self._lines: list[tuple[object, str, str]] = []   # (row, its jsonl line, its csv line)

    @classmethod
    def create(cls, root: str | os.PathLike, op: str, now: float | None = None) -> "RunDir":
        """A new, unique directory, even when several runs start in the same second."""
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S",
                              time.localtime(now if now is not None else time.time()))
        base = f"{safe_name(op)}_{stamp}"
        for n in range(1, 10000):
            candidate = root / (base if n == 1 else f"{base}-{n}")
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            MADE.append(candidate)
            return cls(candidate)
        raise RuntimeError(f"could not create a unique run directory under {root}")

    def file(self, name: str) -> Path:
        return self.path / name

    def write_run_json(self, data: dict) -> None:
        atomic_write_json(self.file(RUN_JSON), {"schema_version": SCHEMA_VERSION, **data})

    def write_run_json_in_place(self, data: dict, reason: str = "disk full") -> dict | None:
        """When the disk is full: run.json rewritten compactly over itself (see
        files.overwrite_in_place), so that the run can still be marked. When the whole of
        `data` does not fit in the space the file holds, its largest details go, one at a
        time, and `omitted_for_space` names them: the run's identity, status and counts
        always stay, and a `complete` run becomes `failed` with `reason` (what a reader
        would compare it by may be gone). The document written, or None when even those
        do not fit."""
        for doc in _shrinking(stamp({"schema_version": SCHEMA_VERSION, **data})):
            if "omitted_for_space" in doc and doc.get("status") == "complete":
                doc = {**doc, "status": "failed", "reason": reason}
            if overwrite_in_place(self.file(RUN_JSON), to_json(doc, indent=None) + "\n"):
                return doc
        return None

    def write_final_run_json(self, data: dict) -> tuple[dict | None, OSError | None]:
        """A run's last run.json: atomically, else (a full disk) over itself. (the document
        written or None, the error the atomic write met or None); a run that had to leave
        details out is failed with that error's reason."""
        try:
            self.write_run_json(data)
            return data, None
        except OSError as exc:
            return self.write_run_json_in_place(data, write_failure(exc)), exc

    def write_results(self, rows, fresh: bool = False) -> None:
        """Rewrite both result files from all rows so far: each is whole after every case.
        A row is serialised once — the next write reuses its lines while the same row object
        stands at the same place — so that a run of n cases, each with its raw samples,
        serialises n rows, not n²/2 (a 174-case run spent 60 s of its device time on that).
        `fresh`: serialise every row again (a run's last write: rows may have changed after
        they were kept). `rows_written` says how many results.jsonl holds (it is left as it
        was when the write fails)."""
        rows = list(rows)
        kept = 0 if fresh else _same_prefix(self._lines, rows)
        lines = self._lines[:kept] + [(row, jsonl_line(row), csv_line(row))
                                      for row in rows[kept:]]
        atomic_write_text(self.file(RESULTS_JSONL), "".join(line[1] for line in lines))
        self.rows_written = len(rows)
        self._lines = lines
        atomic_write_text(self.file(RESULTS_CSV), CSV_HEADER + "".join(line[2] for line in lines))

    def write_shapes(self, doc: dict) -> None:
        atomic_write_text(self.file(SHAPES_YAML), yaml.safe_dump(doc, sort_keys=False,
                                                                 default_flow_style=None))

    def log(self, text: str) -> None:
        with open(self.file(RUN_LOG), "a", encoding="utf-8") as handle:
            handle.write(_ANSI.sub("", text).rstrip("\n") + "\n")


def _same_prefix(lines: list[tuple[object, str, str]], rows: list) -> int:
    """How many of `rows`, from the first, are the very rows `lines` were made from."""
    count = 0
    for (row, _, _), current in zip(lines, rows):
        if row is not current:
            break
        count += 1
    return count
