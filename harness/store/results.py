"""Result rows: one per case, with the raw measurements they were computed from."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..common.errors import UsageError, quoted
from ..common.fields import Fields
from ..common.files import csv_lines, csv_text, to_json
from ..common.schema import stamp
from ..measure.measurement import Measurement, check_measurement

SUCCESS, FAILED, SKIPPED = "SUCCESS", "FAILED", "SKIPPED"
STATUSES = (SUCCESS, FAILED, SKIPPED)

CSV_COLUMNS = ("op", "variant", "dtype", "shape_detail", "occurrence", "status", "reason",
               "torch_ms", "gems_ms", "speedup", "torch_gbps", "gems_gbps", "tflops", "timer",
               "torch_n", "gems_n", "torch_rel_err", "gems_rel_err", "flags", "markers",
               "throttled")


@dataclass
class Row:
    op: str
    dtype: str
    shape: object
    shape_detail: str
    status: str
    reason: str = ""
    occurrence: int = 0                # n-th case with the same (variant, dtype, shape_detail)
    torch: Measurement | None = None
    gems: Measurement | None = None
    metrics: dict = field(default_factory=dict)   # torch_gbps, gems_gbps, tflops (adapter's)
    markers: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    variant: str = ""                  # benchmark/call within the op; "" = the op itself
    throttled: bool | None = None      # measured on a held-back device; None: no clock readings

    def __repr__(self) -> str:
        """Short: what the case is and its two medians (each Measurement's repr), never the
        raw samples."""
        reason = f", reason={self.reason[:60]!r}" if self.reason else ""
        return (f"Row(op={self.op!r}, dtype={self.dtype!r}, shape={self.shape_detail!r}, "
                f"status={self.status!r}{reason}, torch={self.torch!r}, gems={self.gems!r})")

    @property
    def torch_ms(self) -> float | None:
        return self.torch.median if self.torch else None

    @property
    def gems_ms(self) -> float | None:
        return self.gems.median if self.gems else None

    @property
    def speedup(self) -> float | None:
        if self.torch_ms and self.gems_ms:
            return self.torch_ms / self.gems_ms
        return None

    @property
    def timer(self) -> str:
        timers = {m.timer for m in (self.torch, self.gems) if m}
        return "+".join(sorted(timers)) if timers else "-"

    @property
    def flags(self) -> list[str]:
        """`side:flag` for every measurement that deserves a second look, e.g.
        `gems:undersampled`, `torch:outliers` (see Measurement.flags)."""
        return [f"{side}:{flag}" for side, m in (("torch", self.torch), ("gems", self.gems))
                if m is not None for flag in m.flags]

    def gbps(self, which: str) -> float | None:
        return self.metrics.get(f"{which}_gbps")

    @property
    def tflops(self) -> float | None:
        return self.metrics.get("tflops")

    def to_dict(self) -> dict:
        return {
            "op": self.op, "variant": self.variant, "dtype": self.dtype, "shape": self.shape,
            "shape_detail": self.shape_detail, "occurrence": self.occurrence,
            "status": self.status, "reason": self.reason,
            "torch_ms": self.torch_ms, "gems_ms": self.gems_ms, "speedup": self.speedup,
            "torch_gbps": self.gbps("torch"), "gems_gbps": self.gbps("gems"),
            "tflops": self.tflops, "timer": self.timer,
            "flags": self.flags, "markers": list(self.markers), "throttled": self.throttled,
            "torch": self.torch.to_dict() if self.torch else None,
            "gems": self.gems.to_dict() if self.gems else None,
            **({"extra": self.extra} if self.extra else {}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Row":
        """A row from its to_dict(); UsageError `Row: field F: expected ...` for a value
        that is not an object, a missing field or one of the wrong type or range."""
        if not isinstance(data, dict):
            raise UsageError(f"Row: expected an object, got {quoted(data, 60)}")
        check_row(Fields(data, "Row"))
        return cls.from_checked(data)

    @classmethod
    def from_checked(cls, data: dict) -> "Row":
        """from_dict for a row `check_row` has passed (a reader with its own wording)."""
        return cls(
            op=data["op"], dtype=data["dtype"], shape=data.get("shape"),
            shape_detail=data["shape_detail"], status=data["status"],
            reason=data.get("reason", ""), occurrence=data.get("occurrence", 0),
            torch=Measurement.from_checked(data["torch"]) if data.get("torch") else None,
            gems=Measurement.from_checked(data["gems"]) if data.get("gems") else None,
            metrics={k: data[k] for k in ("torch_gbps", "gems_gbps", "tflops")
                     if data.get(k) is not None},
            markers=list(data.get("markers", [])), extra=data.get("extra", {}),
            variant=data.get("variant", ""), throttled=data.get("throttled"),
        )

    def csv_record(self) -> dict:
        d = self.to_dict()
        rec = {k: d.get(k) for k in CSV_COLUMNS}
        rec["torch_n"] = self.torch.n if self.torch else None
        rec["gems_n"] = self.gems.n if self.gems else None
        rec["torch_rel_err"] = round(self.torch.rel_error, 6) if self.torch else None
        rec["gems_rel_err"] = round(self.gems.rel_error, 6) if self.gems else None
        rec["flags"] = " ".join(self.flags)
        rec["markers"] = " | ".join(self.markers)
        return rec


def row_key(row: Row) -> tuple:
    """What names a case across runs: (variant, dtype, shape detail, occurrence)."""
    return (row.variant, row.dtype, row.shape_detail, row.occurrence)


def check_row(f: Fields) -> None:
    """A stored row's fields, of the types and ranges zlh writes; `f`'s error names the
    field (a row edited or damaged on disk is refused, not misread)."""
    for name in ("op", "dtype", "shape_detail"):
        f.str(name)
    for name in ("variant", "reason"):
        f.str(name, "")
    if f.str("status") not in STATUSES:
        raise f.error("status", " or ".join(STATUSES), f.doc["status"])
    f.int("occurrence", 0, low=0)
    f.strs("markers", [])
    f.object("extra", {})
    if f.doc.get("throttled") is not None:
        f.bool("throttled")
    for name in ("torch_gbps", "gems_gbps", "tflops"):
        if f.doc.get(name) is not None:
            f.number(name)
    for side in ("torch", "gems"):
        if f.doc.get(side) is not None:
            f.object(side)
            check_measurement(f, f"{side}.")


def jsonl_line(row: Row) -> str:
    """One results.jsonl line: the row with schema_version and zlh_version."""
    return to_json(stamp(row.to_dict()), indent=None) + "\n"


def csv_line(row: Row) -> str:
    """One results.csv line (no header)."""
    return csv_lines(CSV_COLUMNS, [row.csv_record()])


CSV_HEADER = csv_text(CSV_COLUMNS, [])


def rows_to_jsonl(rows) -> str:
    """One row per line, each carrying schema_version and zlh_version."""
    return "".join(jsonl_line(r) for r in rows)


def rows_to_csv(rows) -> str:
    return CSV_HEADER + "".join(csv_line(r) for r in rows)
