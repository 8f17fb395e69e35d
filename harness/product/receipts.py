"""Receipts: canonical JSON written atomically, each carrying schema_version and the sha256 of
the files that produced it.

Canonical means sorted keys, two-space indent, LF line ends and no NaN, so the same content
always has the same bytes and the same hash. zlh's own source files are hashed as they are on
disk; `.gitattributes` pins them (and manifests, shape files) to LF so a checkout on another
system hashes the same (`HASHED_SUFFIXES` lists what receipts hash).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..common.documents import loads_json
from ..common.errors import UsageError
from ..common.files import atomic_write_text, csv_text, json_safe, read_text, sha256_file
from ..common.schema import check_readable, stamp

SCHEMA_VERSION = 1
TERMINAL = "TERMINAL"
ZLH_ROOT = Path(__file__).resolve().parents[2]
ZLH_PACKAGES = ("harness", "adapters", "backends")
# Suffixes of the files receipts hash: zlh's sources, manifests and plans, shape files.
HASHED_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".csv", ".tsv", ".sh")
STATUS_COLUMNS = ("task_id", "op", "family", "class", "reason")
# A run root's own files: the sealed campaign receipt (what reaccount starts from) and
# status.csv (rewritten after each task).
CAMPAIGN_RECEIPT, STATUS_CSV = "campaign-receipt.json", "status.csv"


def canonical(value) -> str:
    """The one text of a JSON value: sorted keys, indent 2, trailing LF, NaN as null."""
    return json.dumps(json_safe(value), indent=2, sort_keys=True, allow_nan=False,
                      ensure_ascii=False) + "\n"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_or_none(path: str | Path | None) -> str | None:
    return sha256_file(path) if path is not None and Path(path).is_file() else None


def write_receipt(path: str | Path, receipt: dict) -> str:
    """Write a receipt atomically (schema_version added when absent); return its sha256."""
    text = canonical(stamp({"schema_version": SCHEMA_VERSION, **receipt}))
    atomic_write_text(path, text)
    return sha256_bytes(text.encode("utf-8"))


def read_json(path: str | Path, what: str = "receipt") -> dict:
    """A JSON object from disk, or UsageError naming the file."""
    try:
        doc = loads_json(read_text(path))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: {what} cannot be read ({exc})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: {what} is not a JSON object")
    return check_readable(doc, str(path))


def zlh_files(root: Path = ZLH_ROOT) -> dict:
    """sha256 of every zlh source file (harness/, adapters/, backends/) and of the list."""
    files = {}
    for package in ZLH_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                files[path.relative_to(root).as_posix()] = sha256_file(path)
    listing = "".join(f"{sha}  {rel}\n" for rel, sha in sorted(files.items()))
    return {"tree_sha256": sha256_bytes(listing.encode("utf-8")), "files": files}


def relative(path: str | Path | None, root: Path) -> str | None:
    """`path` relative to `root` when inside it (receipts stay valid when a run is moved)."""
    if path is None:
        return None
    path = Path(path)
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def status_csv_text(rows: list[dict]) -> str:
    return csv_text(STATUS_COLUMNS, rows)


def write_status_csv(path: Path, rows: list[dict]) -> None:
    atomic_write_text(path, status_csv_text(rows))
