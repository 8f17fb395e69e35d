"""Versioned machine output.

Every JSON document zlh writes (run.json, result rows, autotune records, report.json, batch,
screen and campaign files, calibration.json, receipts, `--json` output) starts with
`schema_version` and `zlh_version`. `schema_version` is an integer, the major version of the
document's layout: it changes only when a field changes meaning or goes away (a new field
does not change it), so a reader that knows version N reads every document up to N and
refuses a newer one with one line instead of misreading it. The JSON Schemas of run.json, a
result row and report.json ship in `harness/schemas/` (`schema_path`).
"""
from __future__ import annotations

from pathlib import Path

from ..version import __version__
from .errors import UsageError

SCHEMA_VERSION = 1
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def stamp(doc: dict, schema_version: int = SCHEMA_VERSION) -> dict:
    """`doc` with `schema_version` (its own when it has one) and `zlh_version` first."""
    out = {"schema_version": doc.get("schema_version", schema_version),
           "zlh_version": doc.get("zlh_version", __version__)}
    out.update(doc)
    return out


def major(version) -> int | None:
    """The major version of a schema_version: 2 -> 2, "2.1" -> 2; None when it is not one."""
    if isinstance(version, bool):
        return None
    if isinstance(version, int):
        return version
    if isinstance(version, str):
        head = version.split(".", 1)[0]
        return int(head) if head.isascii() and head.isdigit() else None
    return None


def check_readable(doc, where: str, known: int = SCHEMA_VERSION):
    """`doc` itself, or UsageError when it was written with a newer major schema version
    than this zlh reads, or its schema_version is not the integer zlh writes (a string "1"
    included: the file was edited or damaged). Documents without a version (older files) are
    read as they are; a string naming a newer major ("2.1") is refused as newer."""
    if isinstance(doc, dict):
        version = doc.get("schema_version")
        found = major(version)
        prefix = f"{where}: " if where else ""
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)) \
                and (found is None or found <= known):
            raise UsageError(f"{prefix}schema_version {version!r:.40} is not a version "
                             f"number (an integer was expected: the file was edited or "
                             f"damaged)")
        if found is not None and found > known:
            writer = f"zlh {doc['zlh_version']}" if doc.get("zlh_version") else "a newer zlh"
            raise UsageError(f"{prefix}schema_version {doc.get('schema_version')} is newer "
                             f"than this zlh reads ({known}); it was written by {writer}: "
                             f"upgrade zlh (this is {__version__})")
    return doc


def schema_path(name: str) -> Path:
    """The shipped JSON Schema `name` (`run`, `result_row`, `report`)."""
    return SCHEMAS / f"{name}.schema.json"
