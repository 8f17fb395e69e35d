"""`zlh ab --fail-on`: regression gates for CI, and exit status 6 when one trips.

    slower:PCT    a shape significantly slower on B (its `direction` is -1: decided from its
                  interval after the Holm correction) by more than PCT percent
    geomean:PCT   an op's geometric-mean latency on B more than PCT percent above A's over
                  its whole interval: the interval's upper bound of the geomean speedup
                  (`summary.geomean_ci_high`, Student's t over the per-round log geomean
                  ratios, or a bootstrap of one round's samples; measure/stats.py) must itself
                  be slower than PCT, so a noisy A/A whose interval reaches 1 stays quiet
    broken        B failed a case that A ran (SUCCESS on A, FAILED on B)

"Slower by X %" is B's latency against A's: (B / A - 1) x 100, so `slower:100%` means "twice
as slow", the opposite sign of zlh's delta % (A / B - 1) x 100. A significant delta labelled
`within noise` by --noise-floor does not trip `slower`. The gates read the typed report only;
they never re-derive a direction.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..common import markers
from ..common.errors import EXIT_FAILED_CASES, EXIT_OK, EXIT_REGRESSION, UsageError
from .report import ABReport

REGRESSION = "REGRESSION"
KINDS = ("slower", "geomean", "broken")
_SPEC = re.compile(r"^(slower|geomean):\s*([0-9]*\.?[0-9]+)\s*%?$|^(broken)$")


@dataclass(frozen=True)
class Gate:
    kind: str                    # slower | geomean | broken
    pct: float | None = None

    @classmethod
    def parse(cls, text: str) -> "Gate":
        match = _SPEC.match(str(text).strip().lower())
        if not match:
            raise UsageError(f"{text!r}: expected slower:PCT, geomean:PCT or broken "
                             f"(e.g. slower:2%)")
        if match.group(3):
            return cls("broken")
        pct = float(match.group(2))
        if not math.isfinite(pct):
            raise UsageError(f"{text!r}: {pct} is not a finite percentage")
        return cls(match.group(1), pct)

    def __str__(self) -> str:
        return self.kind if self.pct is None else f"{self.kind}:{self.pct:g}%"


def parse_gates(values) -> list[Gate]:
    """`--fail-on` values (repeatable, or comma-separated) as gates. A value that names no
    gate ('' or ',,') is refused: it would otherwise leave the gate off without a word."""
    gates = []
    for value in values or ():
        parts = [part for part in str(value).split(",") if part.strip()]
        if not parts:
            raise UsageError(f"{value!r} names no gate: expected slower:PCT, geomean:PCT or "
                             f"broken (e.g. slower:2%)")
        gates.extend(Gate.parse(part) for part in parts)
    return gates


def slower_pct(delta_pct: float | None) -> float | None:
    """B's latency against A's, (B / A - 1) x 100, from delta % = (A / B - 1) x 100."""
    if delta_pct is None or not math.isfinite(delta_pct) or delta_pct <= -100.0:
        return None
    return (100.0 / (100.0 + delta_pct) - 1.0) * 100.0


def violations(gates: list[Gate], reports: list[ABReport]) -> list[str]:
    """One marker line per tripped gate and shape (or op), in report order."""
    found = []
    for report in reports:
        for gate in gates:
            found += _check(gate, report)
    return found


def _check(gate: Gate, report: ABReport) -> list[str]:
    if gate.kind == "slower":
        lines = []
        for row in report.rows:
            slower = slower_pct(row.delta_pct)
            if row.direction < 0 and not row.within_noise and slower is not None \
                    and slower > gate.pct:
                lines.append(markers.marker(
                    REGRESSION, gate=gate.kind, limit_pct=f"{gate.pct:g}", op=report.op,
                    variant=row.variant or "-", dtype=row.dtype, shape=row.shape_detail,
                    slower_pct=f"{slower:.2f}", delta_pct=f"{row.delta_pct:+.2f}",
                    ci_low_pct=_num(row.ci_low_pct), ci_high_pct=_num(row.ci_high_pct)))
        return lines
    if gate.kind == "geomean":
        return _check_geomean(gate, report)
    return [markers.marker(REGRESSION, gate=gate.kind, op=report.op, detail=case)
            for case in broken_cases(report)]


def _speedup_slower(speedup) -> float | None:
    """B's geomean latency against A's in percent, from a geomean speedup A / B."""
    if not isinstance(speedup, (int, float)) or isinstance(speedup, bool) \
            or not math.isfinite(speedup) or speedup <= 0:
        return None
    return slower_pct((speedup - 1.0) * 100.0)


def _check_geomean(gate: Gate, report: ABReport) -> list[str]:
    """Trips when the whole interval of the op's geomean speedup is beyond the limit: even
    its upper bound (the best B could be) is more than PCT percent slower. A report without
    an interval (one round with fewer than two samples a side) is judged on its point."""
    summary = report.summary
    geomean = summary.get("geomean_speedup")
    slower = _speedup_slower(geomean)
    if slower is None:
        return []
    low, high = summary.get("geomean_ci_low"), summary.get("geomean_ci_high")
    best = _speedup_slower(high)
    has_interval = best is not None and _speedup_slower(low) is not None
    judged = best if has_interval else slower
    if judged <= gate.pct:
        return []
    return [markers.marker(REGRESSION, gate=gate.kind, limit_pct=f"{gate.pct:g}",
                           op=report.op, geomean_speedup=f"{geomean:.4f}",
                           slower_pct=f"{slower:.2f}",
                           ci_low=f"{low:.4f}" if has_interval else "-",
                           ci_high=f"{high:.4f}" if has_interval else "-",
                           least_slower_pct=f"{judged:.2f}")]


def broken_cases(report: ABReport) -> list[str]:
    """`dtype shape` of every case B failed that A ran, as the report found them (any round;
    reports written before `broken_by_b` existed: from the unpaired list)."""
    if report.broken_by_b:
        return list(report.broken_by_b)
    unusable_a = {_key(u) for u in report.unpaired if u.get("side") == "A"}
    cases = []
    for u in report.unpaired:
        if (u.get("side") == "B" and u.get("status") == "FAILED"
                and u.get("reason") != "no such case on side A" and _key(u) not in unusable_a):
            where = f" round {u['round']}" if u.get("round", 1) != 1 else ""
            cases.append(f"{u.get('dtype')} {u.get('shape_detail')}{where}")
    return cases


def _key(u: dict) -> tuple:
    return (u.get("variant"), u.get("dtype"), u.get("shape_detail"), u.get("occurrence"),
            u.get("round", 1))


def exit_code(code: int, found: list[str], echo) -> int:
    """The A/B's exit status with the gates applied: 6 when a gate tripped, unless the A/B
    already ended with bad input, a preflight failure, a refusal or a poisoned device (2-5:
    the comparison itself is incomplete); 6 replaces 0 and 1."""
    for line in found:
        echo(f"!!! {line}")
    if not found:
        return code
    if code not in (EXIT_OK, EXIT_FAILED_CASES):
        return code
    echo(f"!!! --fail-on: {len(found)} regression(s); exit status {EXIT_REGRESSION}")
    return EXIT_REGRESSION


def to_json(gates: list[Gate], found: list[str]) -> dict:
    """What --json output carries about the gates."""
    return {"gates": [str(g) for g in gates], "regressions": found, "tripped": bool(found)}


def _num(value) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:+.2f}"
