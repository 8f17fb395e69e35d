"""`telemetry.tsv`: one line per sample of one pinned device, and reading it back.

Columns (tab-separated, header first):

    time           Unix time of the sample, seconds (3 decimals)
    device         the logical device index, as zlh names it (--device)
    physical       what the vendor tool was pinned to: its index or the device UUID
    sm_clock_mhz   SM (graphics) clock now
    mem_clock_mhz  memory clock now
    temp_c         GPU temperature
    power_w        board power draw
    util_pct       share of the last sample period in which a kernel ran
    throttle       active clock-limiting reasons, comma-separated stable names
                   (backends.telemetry: sw_power_cap, hw_slowdown, sw_thermal, hw_thermal,
                   hw_power_brake, gpu_idle, ...); `none` when none, NA when not reported
    source         nvml, nvidia-smi, mthreads-gmi, amdsmi or rocm-smi
    cost_us        host time this sample took to read (the sampler's own cost)

A value the tool did not report is NA.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from backends.telemetry import SLOWDOWN_REASONS

from ..common.files import read_text

FILE = "telemetry.tsv"
ERROR_FILE = "telemetry.err"
COLUMNS = ("time", "device", "physical", "sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w",
           "util_pct", "throttle", "source", "cost_us")
_NUMBERS = ("sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w", "util_pct", "cost_us")


@dataclass(frozen=True)
class Point:
    """One line of telemetry.tsv, read back."""
    time: float
    device: str
    physical: str
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    temp_c: float | None
    power_w: float | None
    util_pct: float | None
    throttle: tuple[str, ...] | None
    source: str
    cost_us: float | None

    @property
    def slowdowns(self) -> tuple[str, ...]:
        return tuple(r for r in self.throttle or () if r in SLOWDOWN_REASONS)

    def to_dict(self) -> dict:
        out = {c: getattr(self, c) for c in COLUMNS}
        out["throttle"] = list(self.throttle) if self.throttle is not None else None
        return out


def header() -> str:
    return "\t".join(COLUMNS) + "\n"


def line(when: float, device, physical: str, sample, source: str, cost_us: float) -> str:
    """One TSV line from a backends TelemetrySample."""
    throttle = ("NA" if sample.throttle is None
                else ",".join(sample.throttle) if sample.throttle else "none")
    values = [f"{when:.3f}", str(device), physical or "NA",
              *(_fmt(getattr(sample, c)) for c in _NUMBERS[:-1]), throttle, source,
              f"{cost_us:.0f}"]
    return "\t".join(values) + "\n"


def read(path) -> list[Point]:
    """The points of a telemetry.tsv (lines that do not parse are skipped); [] when absent."""
    try:
        lines = read_text(path).splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    points = []
    for text in lines[1:]:
        cells = text.split("\t")
        if len(cells) != len(COLUMNS):
            continue
        row = dict(zip(COLUMNS, cells))
        try:
            when = float(row["time"])
        except ValueError:
            continue
        if not math.isfinite(when):          # nan/inf: no place on a time axis
            continue
        throttle = (None if row["throttle"] == "NA" else () if row["throttle"] == "none"
                    else tuple(row["throttle"].split(",")))
        points.append(Point(when, row["device"], row["physical"],
                            *(_num(row[c]) for c in _NUMBERS[:-1]), throttle, row["source"],
                            _num(row["cost_us"])))
    return points


def summarize(points: Sequence[Point]) -> dict:
    """Samples, time span, SM clock min/median/max, samples with a slowdown reason, and the
    sampler's own cost per sample (median, max, in µs)."""
    if not points:
        return {"samples": 0}
    clocks = [p.sm_clock_mhz for p in points if p.sm_clock_mhz is not None]
    costs = [p.cost_us for p in points if p.cost_us is not None]
    reasons = sorted({r for p in points for r in p.slowdowns})
    return {
        "samples": len(points),
        "span_s": round(points[-1].time - points[0].time, 3),
        "sm_clock_mhz": _spread(clocks),
        "temp_c": _spread([p.temp_c for p in points if p.temp_c is not None]),
        "power_w": _spread([p.power_w for p in points if p.power_w is not None]),
        "slowdown_samples": sum(1 for p in points if p.slowdowns),
        "slowdown_reasons": reasons,
        "sample_cost_us": {"median": float(np.median(costs)), "max": float(max(costs))}
        if costs else None,
    }


def _spread(values) -> dict | None:
    if not values:
        return None
    return {"min": float(min(values)), "median": float(np.median(values)),
            "max": float(max(values))}


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "NA"
    return f"{value:g}"


def _num(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
