"""`harness.compare_callables`: a quick A/B of two callables inside this process.

Both callables are timed by the same timing core, in rounds whose order alternates (A then B,
B then A, ...). Every number comes from this one process, so the interval covers this
process's noise only: it cannot see what changes from one process, or one build, to the
next (on an H200, a microsecond kernel measured to ±0.003% within a process moved by up to
2% between processes). Each result says so. For a claim about two builds, use run
directories and `zlh ab --rounds N`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

from ..common.errors import UsageError
from ..common.limits import MAX_ROUNDS
from ..measure import stats
from ..measure.measurement import Measurement
from .timing import check_callable, open_device, time_callable

WITHIN_PROCESS = "within-process"
NOTE = ("within one process: the interval covers this process's noise only, not the "
        "variation from one process or build to the next; for that compare run directories "
        "with `zlh ab --rounds N`")


@dataclass(frozen=True)
class CallableComparison:
    """delta_pct = (A / B - 1) x 100, positive: B faster. `interval` says what the
    interval is computed from ("rounds": per-round deltas; "samples": one round's samples);
    `scope` is always "within-process"."""
    a: tuple[Measurement, ...]
    b: tuple[Measurement, ...]
    per_round_delta_pct: tuple[float, ...]
    delta_pct: float
    ci_low_pct: float
    ci_high_pct: float
    p_value: float
    significant: bool
    direction: int                       # +1 B faster, -1 B slower, 0 no significant change
    interval: str
    scope: str = WITHIN_PROCESS
    note: str = NOTE

    @property
    def a_ms(self) -> float:
        return _median([m.median for m in self.a])

    @property
    def b_ms(self) -> float:
        return _median([m.median for m in self.b])

    def summary(self) -> str:
        verdict = {1: "B faster", -1: "B slower", 0: "no significant change"}[self.direction]
        timers = "+".join(sorted({m.timer for m in (*self.a, *self.b)}))
        return (f"A {self.a_ms:.6g} ms, B {self.b_ms:.6g} ms ({timers} timer, "
                f"{len(self.a)} rounds): delta {_pct(self.delta_pct)} "
                f"[{_pct(self.ci_low_pct)}, {_pct(self.ci_high_pct)}] by {self.interval}, "
                f"p={self.p_value:.3g}: {verdict}; {self.note}")

    __str__ = summary

    def to_dict(self, keep_samples: bool = False) -> dict:
        out = asdict(self)
        out["a"] = [m.to_dict(keep_samples) for m in self.a]
        out["b"] = [m.to_dict(keep_samples) for m in self.b]
        out["a_ms"], out["b_ms"] = self.a_ms, self.b_ms
        return out


def compare_callables(fa: Callable[[], Any], fb: Callable[[], Any], *, rounds: int = 3,
                      alpha: float = 0.05, **timing) -> CallableComparison:
    """Time `fa` (side A) and `fb` (side B), both taking no arguments, `rounds` times each in
    alternating order, with `measure`'s timing keywords. Two rounds or more: Student's t over
    the per-round deltas (log ratios); one round: bootstrap and rank test over the two
    sample sets."""
    check_callable(fa, "fa")
    check_callable(fb, "fb")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= MAX_ROUNDS:
        raise UsageError(f"rounds must be an integer from 1 to {MAX_ROUNDS}, got {rounds!r}")
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1, got {alpha!r}")
    device = open_device(**timing)
    a: list[Measurement] = []
    b: list[Measurement] = []
    for number in range(rounds):
        sides = [(fa, a, "A"), (fb, b, "B")]
        for fn, out, label in (sides if number % 2 == 0 else sides[::-1]):
            out.append(time_callable(device, fn, label))
    deltas = tuple(stats.delta_pct(x.median, y.median) for x, y in zip(a, b))
    if rounds > 1:
        (stat,) = stats.rounds_stats([list(deltas)], alpha)
    else:
        (stat,) = stats.shape_stats([(a[0].samples_ms, b[0].samples_ms, a[0].median,
                                      b[0].median)], alpha=alpha)
    return CallableComparison(
        a=tuple(a), b=tuple(b), per_round_delta_pct=deltas, delta_pct=stat.delta_pct,
        ci_low_pct=stat.ci_low_pct, ci_high_pct=stat.ci_high_pct, p_value=stat.p_value,
        significant=stat.significant,
        direction=stats.direction(stat) if stat.significant else 0,
        interval="rounds" if rounds > 1 else "samples")


def _median(values) -> float:
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return math.nan
    mid = len(finite) // 2
    return finite[mid] if len(finite) % 2 else (finite[mid - 1] + finite[mid]) / 2


def _pct(value: float) -> str:
    return f"{value:+.3f}%" if math.isfinite(value) else "n/a"
