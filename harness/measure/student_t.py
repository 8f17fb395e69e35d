"""Student's t distribution for integer degrees of freedom: the two-sided tail probability of
a t and the t of a given tail probability, from closed-form series (no scipy). The rounds
interval, `detectable_pct` and the two-stage rounds design all read their t from here."""
from __future__ import annotations

import math


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with integer df >= 1, from the closed-form series
    (Abramowitz & Stegun 26.7.3 / 26.7.4): no special functions needed."""
    if df < 1:
        raise ValueError("df must be at least 1")
    if not math.isfinite(t):
        return 0.0 if math.isinf(t) else math.nan
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, sin, cos = math.cos(theta) ** 2, math.sin(theta), math.cos(theta)
    if df % 2:                                   # odd: 2/pi (theta + sin cos (1 + 2/3 c2 ...))
        series, term = 0.0, 1.0
        if df > 1:
            series = 1.0
            for k in range(1, (df - 3) // 2 + 1):
                term *= c2 * (2 * k) / (2 * k + 1)
                series += term
        inside = 2.0 / math.pi * (theta + sin * cos * series)
    else:                                        # even: sin (1 + 1/2 c2 + 1*3/(2*4) c2^2 ...)
        series, term = 1.0, 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            series += term
        inside = sin * series
    return min(1.0, max(0.0, 1.0 - inside))


def t_critical(df: int, alpha: float = 0.05) -> float:
    """The t with two-sided tail probability alpha (e.g. df=2, alpha=0.05: 4.303)."""
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > alpha:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_two_sided_p(mid, df) > alpha:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0
