"""A machine's noise floor (calibration.json from an A/A `zlh calibrate`), read back, and
`zlh ab --noise-floor`: a significant delta whose size lies within the floor of its shape is
labelled `within noise`.

A shape's floor is the largest |delta| the A/A calibration saw for it over its rounds
(`noise_max_pct`): identical builds already differed by that much on this machine, so a
"significant" change of that size or less is not evidence of a real one. Shapes are matched
by op, variant, dtype, shape detail and occurrence; a shape the calibration did not measure
gets no label.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import UsageError
from ..common.schema import check_readable

KIND = "calibration"


def shape_key(op: str, row) -> tuple:
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k)
    return (op, get("variant") or "", get("dtype"), get("shape_detail"),
            int(get("occurrence") or 0))


@dataclass
class NoiseFloor:
    path: str
    floors: dict = field(default_factory=dict)      # shape_key -> floor in percent
    machine: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path) -> "NoiseFloor":
        """From a calibration.json; UsageError naming what is wrong."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"--noise-floor {path}: no such file (run zlh calibrate first)") \
                from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UsageError(f"--noise-floor {path} cannot be read: "
                             f"{str(exc).splitlines()[0]}") from None
        check_readable(doc, f"--noise-floor {path}")
        if not isinstance(doc, dict) or doc.get("kind") != KIND or \
                not isinstance(doc.get("ops"), list):
            raise UsageError(f"--noise-floor {path} is not a zlh calibration.json")
        if doc.get("plant_pct"):
            raise UsageError(f"--noise-floor {path} is a planted-change self-test, not an A/A "
                             f"noise floor; run zlh calibrate without --plant-pct")
        floors = {}
        for op in doc["ops"]:
            for shape in op.get("shapes") or ():
                value = shape.get("noise_max_pct")
                if isinstance(value, (int, float)):
                    floors[shape_key(op.get("op"), shape)] = float(value)
        return cls(str(path), floors, doc.get("machine") or {})

    def floor_for(self, op: str, row) -> float | None:
        return self.floors.get(shape_key(op, row))

    def label(self, report) -> int:
        """Mark the report's significant rows within their floor (`within_noise`, a note);
        the count goes to the summary. Returns it."""
        count = 0
        for row in report.rows:
            floor = self.floor_for(report.op, row)
            if floor is None or not row.significant or row.delta_pct is None:
                continue
            if abs(row.delta_pct) <= floor:
                row.within_noise = True
                row.annotations = sorted(set(row.annotations) | {
                    f"within noise (floor {floor:.3g}%)"})
                count += 1
        report.summary["within_noise"] = count
        return count
