"""Raw timing samples and the statistics computed from them.

A `Measurement` is a value: the per-call times a timer observed, and how it observed them.
Everything reported (median, spread, sample count, flags) is derived from the raw samples it
carries, with the rules of `measure.stats`, so a row can always be recomputed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from backends.telemetry import ClockReading

from ..common.errors import InvalidValue, UsageError, quoted
from ..common.fields import Fields, check_fields, is_finite_number
from .sample_stats import interquartile_mean, relative_median_error, suspect_flags

UNDERSAMPLED = "undersampled"
# How a measurement of several repeats (placements) gives its one number: the median of their
# medians, or their interquartile mean (`--level-placements`, run/level.py).
MEDIAN, IQM = "median", "interquartile-mean"
CENTERS = (MEDIAN, IQM)

# A stored latency at or above this is no measurement (a damaged or edited row): refused, so
# statistics over it cannot overflow.
MAX_LATENCY_MS = 1e6


@dataclass(frozen=True)
class Measurement:
    samples_ms: tuple[float, ...]
    timer: str                       # "graph", "event" or "host"
    calls_per_sample: int = 1        # calls averaged into each sample (graph unroll, batches)
    warmup_calls: int = 0
    repeats: tuple[float, ...] = ()  # medians of independent repeats, when --repeat > 1
    fallback: str | None = None      # why this was not the requested timer (a marker line)
    clocks: tuple[ClockReading, ...] = ()  # device clock when sampling started and ended
    undersampled: bool = False       # a cap stopped sampling before the sample minimum
    center: str = MEDIAN             # how the repeats' medians give the one number (CENTERS)

    def __post_init__(self):
        """InvalidValue (a UsageError and a ValueError) `Measurement: <field> must be ...`
        for a field of the wrong type or out of range."""
        check_fields(self, {"calls_per_sample": 1, "warmup_calls": 0}, ())
        for name, least in (("samples_ms", 1), ("repeats", 0)):
            values = getattr(self, name)
            if not isinstance(values, (tuple, list)) or len(values) < least or \
                    not all(_latency(v) for v in values):
                what = "a non-empty sequence" if least else "a sequence"
                raise InvalidValue(f"Measurement: {name} must be {what} of finite numbers "
                                   f">= 0 (ms), got {quoted(values, 60)}")
        for name, ok, what in (
                ("timer", isinstance(self.timer, str) and self.timer, "a timer name"),
                ("fallback", self.fallback is None or isinstance(self.fallback, str),
                 "a string or None"),
                ("clocks", isinstance(self.clocks, (tuple, list)) and
                 all(isinstance(c, ClockReading) for c in self.clocks),
                 "a sequence of ClockReading"),
                ("undersampled", isinstance(self.undersampled, bool), "True or False"),
                ("center", self.center in CENTERS, " or ".join(CENTERS))):
            if not ok:
                raise InvalidValue(f"Measurement: {name} must be {what}, "
                                   f"got {quoted(getattr(self, name), 60)}")

    def __repr__(self) -> str:
        """Short: the counts and the median, never the raw samples (thousands of numbers;
        `samples_ms` holds them)."""
        extra = "".join(f", {name}={getattr(self, name)!r}" for name in
                        ("fallback", "undersampled") if getattr(self, name))
        repeats = f", repeats={len(self.repeats)}" if self.repeats else ""
        return (f"Measurement(n={self.n}, median_ms={self.median:.6g}, timer={self.timer!r}, "
                f"calls_per_sample={self.calls_per_sample}{repeats}{extra})")

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def median(self) -> float:
        """The one number: the samples' median; with repeats (placements), the median of
        their medians, or their interquartile mean where `center` says so."""
        if self.repeats:
            if self.center == IQM:
                return interquartile_mean(self.repeats)
            return float(np.median(self.repeats))
        return float(np.median(self.samples_ms))

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples_ms))

    @property
    def iqr(self) -> float:
        q1, q3 = np.percentile(self.samples_ms, [25, 75])
        return float(q3 - q1)

    @property
    def min(self) -> float:
        return float(np.min(self.samples_ms))

    @property
    def rel_iqr(self) -> float:
        """Interquartile range over the median: the spread of single samples."""
        med = self.median
        return self.iqr / med if med > 0 else math.inf

    @property
    def rel_error(self) -> float:
        """Estimated relative standard error of the reported median: from the repeat medians
        when the number is a median of repeats, else from the samples."""
        return relative_median_error(self.repeats if len(self.repeats) > 1 else self.samples_ms)

    @property
    def flags(self) -> tuple[str, ...]:
        """Why this number deserves a second look: `undersampled` (a time or sample cap
        overrode the minimum), `outliers`, `bimodal` (see measure.stats)."""
        return (UNDERSAMPLED,) * self.undersampled + suspect_flags(self.samples_ms)

    def to_dict(self, keep_samples: bool = True) -> dict:
        out = {
            "timer": self.timer,
            "median_ms": self.median,
            "n": self.n,
            "calls_per_sample": self.calls_per_sample,
            "warmup_calls": self.warmup_calls,
            "rel_iqr": round(self.rel_iqr, 6),
            "rel_err": round(self.rel_error, 6),
            "undersampled": self.undersampled,
        }
        if self.repeats:
            out["repeat_medians_ms"] = [_compact(v) for v in self.repeats]
            if self.center != MEDIAN:
                out["repeats_center"] = self.center
        if self.fallback:
            out["fallback"] = self.fallback
        if self.clocks:
            out["clocks"] = [c.to_dict() for c in self.clocks]
        if keep_samples:
            out["samples_ms"] = [_compact(v) for v in self.samples_ms]
        return out

    @classmethod
    def from_dict(cls, data: dict, where: str = "Measurement") -> "Measurement":
        """A measurement from its to_dict(); UsageError `<where>: field F: expected ...` for
        a value that is not an object, a missing field or one of the wrong type or range."""
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected an object, got {quoted(data, 60)}")
        check_measurement(Fields(data, where))
        return cls.from_checked(data)

    @classmethod
    def from_checked(cls, data: dict) -> "Measurement":
        """from_dict for a measurement `check_measurement` has passed (inside a result row
        the row's check covers it)."""
        return cls(samples_ms=tuple(data["samples_ms"]), timer=data["timer"],
                   calls_per_sample=data.get("calls_per_sample", 1),
                   warmup_calls=data.get("warmup_calls", 0),
                   repeats=tuple(data.get("repeat_medians_ms", ())),
                   fallback=data.get("fallback"),
                   clocks=tuple(ClockReading.from_dict(c) for c in data.get("clocks") or ()),
                   undersampled=bool(data.get("undersampled", False)),
                   center=data.get("repeats_center", MEDIAN))


def check_measurement(f: Fields, prefix: str = "") -> None:
    """The fields of a stored measurement (`prefix`: where it sits in a larger object, e.g.
    `torch.`), of the types and ranges zlh writes; `f`'s error names the field."""
    for name, values in (("samples_ms", f.numbers(prefix + "samples_ms")),
                         ("repeat_medians_ms", f.numbers(prefix + "repeat_medians_ms", []))):
        bad = next((v for v in values if not 0 <= v < MAX_LATENCY_MS), None)
        if bad is not None:
            raise f.error(prefix + name, f"latencies from 0 to below {MAX_LATENCY_MS:g} ms",
                          bad)
        if name == "samples_ms" and not values:
            raise f.error(prefix + name, "at least one sample", values)
    f.str(prefix + "timer", empty=False)
    f.int(prefix + "calls_per_sample", 1, low=1)
    f.int(prefix + "warmup_calls", 0, low=0)
    for name, read in (("fallback", f.str), ("undersampled", f.bool), ("clocks", f.objects)):
        if f.get(prefix + name, None) is not None:
            read(prefix + name)
    if f.get(prefix + "repeats_center", MEDIAN) not in CENTERS:
        raise f.error(prefix + "repeats_center", " or ".join(CENTERS),
                      f.get(prefix + "repeats_center"))
    for clock in f.get(prefix + "clocks", None) or ():
        throttle = clock.get("throttle")
        if not all(v is None or is_finite_number(v)
                   for v in (clock.get("sm_clock_mhz"), clock.get("usual_sm_mhz"))) or \
                not (throttle is None or isinstance(throttle, list) and
                     all(isinstance(t, str) for t in throttle)):
            raise f.error(prefix + "clocks", "clock readings (sm_clock_mhz, usual_sm_mhz: "
                                             "numbers or null; throttle: strings)", clock)


def _latency(value) -> bool:
    return is_finite_number(value) and value >= 0


def _compact(value: float) -> float:
    """Six significant digits: enough to recompute statistics, half the bytes."""
    return float(f"{value:.6g}")
