"""Was a timed function measured on a held-back device? The per-case throttle verdict.

The timing core reads the device clock (`Backend.clock_reading`: SM clock, the usual SM clock,
active reasons) when sampling starts and when it ends; a measurement is *throttled* when, in
any of those readings,

* a slowdown reason was active (power cap, power brake, thermal, hardware slowdown — see
  `backends.telemetry.SLOWDOWN_REASONS`; `gpu_idle` and the like do not count), or
* the SM clock was more than `CLOCK_SLACK` below the usual SM clock — the applications
  (target) clock the driver reports, else its maximum clock: what a busy, unthrottled GPU runs
  at. A clock still ramping up from idle shows here.

No reading (a backend or host without an in-process clock query) means no verdict: the row's
`throttled` stays null, never false.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..common import markers

CLOCK_SLACK = 0.05      # below 95% of the usual SM clock counts as held back


@dataclass
class Verdict:
    throttled: bool | None              # None: no clock readings, nothing to judge
    why: list[str] = field(default_factory=list)
    min_sm_mhz: float | None = None
    usual_sm_mhz: float | None = None
    reasons: list[str] = field(default_factory=list)


def judge_readings(readings) -> Verdict:
    """The verdict over ClockReadings (any order, any number)."""
    readings = [r for r in readings if r is not None]
    if not readings:
        return Verdict(None)
    clocks = [r.sm_clock_mhz for r in readings if r.sm_clock_mhz is not None]
    usual = next((r.usual_sm_mhz for r in readings if r.usual_sm_mhz), None)
    reasons = sorted({s for r in readings for s in r.slowdowns})
    verdict = Verdict(False, min_sm_mhz=min(clocks) if clocks else None, usual_sm_mhz=usual,
                      reasons=reasons)
    if reasons:
        verdict.why.append("reasons " + ",".join(reasons))
    if clocks and usual and min(clocks) < (1.0 - CLOCK_SLACK) * usual:
        verdict.why.append(f"sm clock {min(clocks):.0f} < {100 * (1 - CLOCK_SLACK):.0f}% of "
                           f"{usual:.0f} MHz")
    verdict.throttled = bool(verdict.why)
    return verdict


def judge(measurements: dict) -> dict[str, Verdict]:
    """{name: Verdict} for named measurements (e.g. {"torch": m, "gems": m}); a measurement
    without clock readings is left out."""
    out = {}
    for name, measurement in measurements.items():
        clocks = getattr(measurement, "clocks", ()) if measurement is not None else ()
        if clocks:
            out[name] = judge_readings(clocks)
    return out


def row_flag(verdicts: dict[str, Verdict]) -> bool | None:
    """The row's `throttled`: True when any timed function was, None when none was judged."""
    if not verdicts:
        return None
    return any(v.throttled for v in verdicts.values())


def marker_lines(verdicts: dict[str, Verdict], where: dict, attempt: int, retries_left: int
                 ) -> list[str]:
    """One BENCHMARK_CASE_THROTTLED line per throttled function; `action` says whether the case
    is measured again (retry) or kept as it is (kept)."""
    lines = []
    for name, verdict in verdicts.items():
        if not verdict.throttled:
            continue
        lines.append(markers.marker(
            markers.THROTTLED, **where, fn=name, attempt=attempt,
            action="retry" if retries_left > 0 else "kept",
            sm_mhz=_mhz(verdict.min_sm_mhz), usual_mhz=_mhz(verdict.usual_sm_mhz),
            reasons=",".join(verdict.reasons) or "none", detail="; ".join(verdict.why)))
    return lines


def _mhz(value) -> str:
    return f"{value:.0f}" if value is not None else "-"


POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake"})


def held_by_power(rows) -> list[str]:
    """The cases (`dtype shape`) of stored rows whose timed function ran held back by the
    device's power limit: a BENCHMARK_CASE_THROTTLED line naming a power reason. A clock
    still ramping up, a thermal slowdown or no clock readings at all do not count."""
    cases = []
    for row in rows:
        for line in row.markers:
            name, fields = markers.parse_marker(line)
            if name != markers.THROTTLED:
                continue
            if POWER_REASONS & set(fields.get("reasons", "").split(",")):
                cases.append(f"{fields.get('dtype', '?')} {fields.get('shape', '?')}")
                break
    return cases
