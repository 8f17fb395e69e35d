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

from dataclasses import dataclass, field

from ..common.documents import loads_json
from ..common.errors import UsageError
from ..common.fields import Fields
from ..common.files import read_text
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
            doc = loads_json(read_text(path))
        except FileNotFoundError:
            raise UsageError(f"--noise-floor {path}: no such file (run zlh calibrate first)") \
                from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else \
                str(exc).splitlines()[0]
            raise UsageError(f"--noise-floor {path} cannot be read: {why}") from None
        check_readable(doc, f"--noise-floor {path}")
        if not isinstance(doc, dict) or doc.get("kind") != KIND or \
                not isinstance(doc.get("ops"), list):
            raise UsageError(f"--noise-floor {path} is not a zlh calibration.json")
        if doc.get("plant_pct"):
            raise UsageError(f"--noise-floor {path} is a planted-change self-test, not an A/A "
                             f"noise floor; run zlh calibrate without --plant-pct")
        f = Fields(doc, f"--noise-floor {path}")
        floors = {}
        for number, op in enumerate(f.objects("ops")):
            of = f.at("ops", number)
            name = of.str("op")
            for index, shape in enumerate(of.objects("shapes", [])):
                sf = of.at("shapes", index)
                for key in ("dtype", "shape_detail"):
                    sf.str(key)
                sf.str("variant", "")
                sf.int("occurrence", 0, low=0)
                value = shape.get("noise_max_pct")
                if value is not None:
                    floors[shape_key(name, shape)] = sf.number("noise_max_pct", low=0)
        return cls(str(path), floors, f.object("machine", {}))

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
