"""The A/B report as typed records, and its files.

`ABRow.direction` (+1 B faster, -1 B slower, 0 no significant change) is decided once,
from the row's interval after the multiple-comparison correction, and every view — the
terminal table, CSV, JSON and HTML — reads it; none re-derives it from the delta's sign.
"""
from __future__ import annotations

import csv
import io
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..common.errors import UsageError, quoted
from ..common.fields import Fields
from ..common.files import (atomic_write_json, atomic_write_text, check_path_text, json_safe,
                            read_json_object)
from ..measure.stats import ShapeStat, direction

SCHEMA_VERSION = 1
INTERVALS = ("samples", "rounds")     # what an interval covers, as the report writes it
CSV_COLUMNS = ("op", "variant", "dtype", "shape_detail", "occurrence", "a_ms", "b_ms",
               "delta_pct", "ci_low_pct", "ci_high_pct", "interval", "p_value", "significant",
               "direction", "rounds_min_delta_pct", "rounds_max_delta_pct", "sign_stable",
               "rounds", "detectable_pct", "rounds_needed", "within_noise", "annotations")


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
    def from_dict(cls, data: dict, where: str = "ABRow") -> "ABRow":
        """A row from its JSON object, every field the views read checked first: UsageError
        `<where>: field F: expected ...`."""
        _check_row(data, where or "ABRow")
        known = {f.name for f in fields(cls)}
        row = cls(**{k: v for k, v in data.items() if k in known})
        if "direction" not in data:          # a report written before directions were stored
            row.direction = direction_of(row)
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
    def from_dict(cls, data: dict, where: str = "ABReport") -> "ABReport":
        """An op report from its JSON object (`where`: the file read back), every field the
        report views read checked first: UsageError `<where>: field F: expected ...`."""
        where = where or "ABReport"
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected an object, got {quoted(data, 60)}")
        _check_report(data, where)
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["rows"] = [ABRow.from_dict(r, f"{where}: rows[{i}]")
                          for i, r in enumerate(data.get("rows", []))]
        values.setdefault("caliber", {})
        values.setdefault("sides", {"A": {}, "B": {}})
        return cls(**values)


def _optional_number(f: Fields, name: str) -> None:
    if f.get(name, None) is not None:
        f.number(name)


def _check_row(data, where: str) -> None:
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected an object, got {quoted(data, 60)}")
    f = Fields(data, where)
    for name in ("variant", "dtype", "shape_detail"):
        f.str(name)
    f.int("occurrence", 0, low=0)
    for name in ("a_ms", "b_ms", "delta_pct", "ci_low_pct", "ci_high_pct", "p_value",
                 "spread_a_pct", "spread_b_pct"):
        _optional_number(f, name)
    for name in ("significant", "within_noise"):
        f.bool(name, False)
    if f.int("direction", 0) not in (-1, 0, 1):
        raise f.error("direction", "-1, 0 or 1", data["direction"])
    for name in ("interval", "timer_a", "timer_b"):
        f.str(name, "-")
    if data.get("interval", "samples") not in INTERVALS:
        raise f.error("interval", " or ".join(INTERVALS), data["interval"])
    f.strs("annotations", [])
    rounds = data.get("rounds")
    if rounds is not None:
        f.object("rounds")
        r = Fields(rounds, f"{where}: rounds")
        for name in ("median_delta_pct", "min_delta_pct", "max_delta_pct"):
            _optional_number(r, name)


def _check_report(data: dict, where: str) -> None:
    f = Fields(data, where)
    f.str("op", empty=False)
    if not isinstance(data.get("rows", []), list):
        raise f.error("rows", "a list of rows", data["rows"])
    f.object("caliber", {})
    sides = f.object("sides", {"A": {}, "B": {}})
    for side in ("A", "B"):
        Fields(sides, f"{where}: sides").object(side)
    for name in ("unpaired", "output_mismatches"):
        for i, entry in enumerate(f.objects(name, [])):
            keys = ("side", "dtype", "shape_detail", "status", "reason") \
                if name == "unpaired" else ("round", "dtype", "shape_detail", "reason")
            for key in keys:
                Fields(entry, f"{where}: {name}[{i}]").get(key)
    for name in ("markers", "caliber_problems", "broken_by_b"):
        f.strs(name, [])
    if f.get("verdict", None) is not None:
        f.str("verdict")
    summary = Fields(f.object("summary", {}), f"{where}: summary")
    for name in ("geomean_speedup", "geomean_ci_low", "geomean_ci_high", "delta_min_pct",
                 "delta_max_pct", "delta_median_pct"):
        _optional_number(summary, name)
    if summary.int("n", 0, low=0):
        for name in ("faster", "slower", "unchanged"):
            summary.int(name, low=0)
    if summary.get("geomean_interval", None) is not None \
            and summary.str("geomean_interval") not in INTERVALS:
        raise summary.error("geomean_interval", " or ".join(INTERVALS),
                            summary.get("geomean_interval"))
    summary.int("within_noise", 0, low=0)
    if summary.int("rounds", 1, low=1) > 1:
        per_round = summary.get("per_round_median_delta_pct")
        if not isinstance(per_round, list) or not all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                for v in per_round):
            raise summary.error("per_round_median_delta_pct", "a list of numbers or nulls",
                                per_round)
        summary.int("sign_unstable", low=0)
        spread = Fields(summary.object("side_spread_median_pct"),
                        f"{where}: summary: side_spread_median_pct")
        for side in ("A", "B"):
            _optional_number(spread, side)


def family_note(summary: dict) -> str:
    """How the op's verdicts were decided, where over more shapes than its own (family.py):
    `; significance by Holm over N shapes of the A/B`, for the end of a summary line; ""
    otherwise. Every view says it so."""
    family = summary.get("family_shapes")
    return (f"; significance by Holm over {family} shapes of the A/B"
            if isinstance(family, int) and family > summary.get("n", 0) else "")


def direction_of(row: ABRow) -> int:
    if not row.significant:
        return 0
    nan = float("nan")
    return direction(ShapeStat(*(nan if v is None else v for v in (
        row.delta_pct, row.ci_low_pct, row.ci_high_pct, row.p_value)), row.significant))


# ---- files ------------------------------------------------------------------------------
def report_document(root: Path, reports: list[ABReport], command: str = "ab") -> dict:
    """report.json: titled by the command that made it (`zlh ab ROOT`, `zlh campaign ROOT`)."""
    return {"schema_version": SCHEMA_VERSION, "title": f"zlh {command} {Path(root).name}",
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S"), **to_json(reports)}


def write_reports(root: Path, reports: list[ABReport], command: str = "ab",
                  done: list[str] | None = None) -> None:
    """report.json and report.csv; `done`: the ops whose rounds ended (reported, or failed or
    refused), kept as `ops_done` so that a reader tells an op cut short from one that
    failed."""
    doc = report_document(root, reports, command)
    if done is not None:
        doc["ops_done"] = list(done)
    atomic_write_json(Path(root) / "report.json", doc)
    atomic_write_text(Path(root) / "report.csv", to_csv(reports))


def reports_so_far(root) -> list[ABReport]:
    """The op reports an A/B root's report.json holds, [] where it has none yet (an A/B or
    calibration cut short before its first op finished)."""
    return load_report(root)[1] if (Path(root) / "report.json").is_file() else []


def load_report(root) -> tuple[dict, list[ABReport]]:
    """(the report.json document, its op reports), or UsageError naming what is wrong."""
    check_path_text(root, "ROOT")
    path = Path(root) / "report.json"
    hint = (f"{root} is a run directory, not an A/B root: `zlh show {root}` prints it"
            if (Path(root) / "run.json").is_file() else
            f"{root}: no report.json yet (a campaign cut short: zlh campaign --resume {root} "
            f"goes on and merges)" if (Path(root) / "campaign.json").is_file() else
            f"{root}: no report.json (run `zlh ab` with this root first)")
    doc = read_json_object(path, hint, "a zlh A/B report")
    if not isinstance(doc.get("ops", []), list):
        raise UsageError(f"{path} is not a zlh A/B report (an object with a list `ops` was "
                         f"expected)")
    try:
        reports = [ABReport.from_dict(op, f"{path}: ops[{i}]")
                   for i, op in enumerate(doc.get("ops", []))]
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: an op report is malformed ({exc})") from None
    return doc, reports


def to_csv(reports: list[ABReport]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n",
                            extrasaction="ignore")
    writer.writeheader()
    for report in reports:
        for row in report.rows:
            r = json_safe(vars(row))
            rounds = row.rounds or {}
            writer.writerow({**r, "op": report.op,
                             "rounds_min_delta_pct": rounds.get("min_delta_pct"),
                             "rounds_max_delta_pct": rounds.get("max_delta_pct"),
                             "sign_stable": rounds.get("sign_stable"),
                             "rounds": rounds.get("rounds"),
                             "detectable_pct": rounds.get("detectable_pct"),
                             "rounds_needed": rounds.get("needed"),
                             "annotations": "; ".join(row.annotations)})
    return buf.getvalue()


def to_json(reports: list[ABReport]) -> dict:
    """One object: every row (with its op, delta_pct and direction), an overall summary, and
    per op; non-finite numbers as null."""
    ops = [report.to_dict() for report in reports]
    rows = [{"op": rep["op"], **r} for rep in ops for r in rep["rows"]]
    summary = ops[0]["summary"] if len(ops) == 1 else {
        "ops": len(ops), "n": sum(rep["summary"].get("n", 0) for rep in ops),
        "faster": sum(rep["summary"].get("faster", 0) for rep in ops),
        "slower": sum(rep["summary"].get("slower", 0) for rep in ops),
        "unchanged": sum(rep["summary"].get("unchanged", 0) for rep in ops)}
    return json_safe({"rows": rows, "summary": summary, "ops": ops})
