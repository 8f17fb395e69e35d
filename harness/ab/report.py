"""The A/B report as typed records, and its files.

`ABRow.direction` (+1 B faster, -1 B slower, 0 no significant change) is decided once,
from the row's interval after the multiple-comparison correction, and every view — the
terminal table, CSV, JSON and HTML — reads it; none re-derives it from the delta's sign.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..common.errors import UsageError
from ..common.files import atomic_write_json, atomic_write_text, read_json_object

SCHEMA_VERSION = 1


@dataclass
class ABRow:
    variant: str
    dtype: str
    shape_detail: str
    occurrence: int
    a_ms: float | None
    b_ms: float | None
    delta_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    significant: bool = False
    direction: int = 0
    interval: str = "samples"            # what the interval covers: "samples" or "rounds"
    annotations: list[str] = field(default_factory=list)
    timer_a: str = "-"
    timer_b: str = "-"
    rounds: dict | None = None           # median/min/max delta across rounds, sign stability
    spread_a_pct: float | None = None
    spread_b_pct: float | None = None
    within_noise: bool = False           # significant, but inside the machine's noise floor

    @classmethod
    def from_dict(cls, data: dict) -> "ABRow":
        known = {f.name for f in fields(cls)}
        row = cls(**{k: v for k, v in data.items() if k in known})
        if "direction" not in data:          # a report written before directions were stored
            row.direction = _direction_of(row)
        return row


@dataclass
class ABReport:
    op: str
    caliber: dict
    sides: dict                          # {"A": {"run_dir", "label"}, "B": {...}}
    rows: list[ABRow]
    unpaired: list[dict] = field(default_factory=list)
    output_mismatches: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    markers: list[str] = field(default_factory=list)
    verdict: str | None = None
    caliber_problems: list[str] = field(default_factory=list)
    broken_by_b: list[str] = field(default_factory=list)   # cases B failed that A ran

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ABReport":
        if not isinstance(data, dict) or not isinstance(data.get("rows", []), list):
            raise ValueError("an op report must be an object with a list of rows")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["rows"] = [ABRow.from_dict(r) for r in data.get("rows", [])]
        values.setdefault("caliber", {})
        values.setdefault("sides", {"A": {}, "B": {}})
        return cls(**values)


def _direction_of(row: ABRow) -> int:
    if not row.significant:
        return 0
    from .stats import ShapeStat, direction
    nan = float("nan")
    return direction(ShapeStat(*(nan if v is None else v for v in (
        row.delta_pct, row.ci_low_pct, row.ci_high_pct, row.p_value)), row.significant))


# ---- files ------------------------------------------------------------------------------
def report_document(root: Path, reports: list[ABReport]) -> dict:
    from .render import to_json
    return {"schema_version": SCHEMA_VERSION, "title": f"zlh ab {Path(root).name}",
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S"), **to_json(reports)}


def write_reports(root: Path, reports: list[ABReport]) -> None:
    from .render import to_csv
    atomic_write_json(Path(root) / "report.json", report_document(root, reports))
    atomic_write_text(Path(root) / "report.csv", to_csv(reports))


def load_report(root) -> tuple[dict, list[ABReport]]:
    """(the report.json document, its op reports), or UsageError naming what is wrong."""
    path = Path(root) / "report.json"
    doc = read_json_object(path, f"{root}: no report.json (run `zlh ab` with this root first)",
                           "a zlh A/B report")
    if not isinstance(doc.get("ops", []), list):
        raise UsageError(f"{path} is not a zlh A/B report (an object with a list `ops` was "
                         f"expected)")
    try:
        reports = [ABReport.from_dict(op) for op in doc.get("ops", [])]
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: an op report is malformed ({exc})") from None
    return doc, reports
