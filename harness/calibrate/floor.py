"""Statistics of a calibration: per shape, what identical builds differ by on this machine and
the smallest change N rounds can detect; for a planted change, whether it was found.

Input is one shape's per-round deltas (delta_pct = (A / B - 1) * 100, as everywhere in zlh).

* noise floor: median and max of |delta| over the rounds (A/A: both sides the same build);
* spread: s, the standard deviation of the per-round deltas (ddof 1);
* smallest detectable change at N rounds (80 % power, two-sided alpha 0.05), from the same
  Student's t that `zlh ab --rounds N` uses for its interval and p-value:

      detectable = (t(1 - alpha/2, N - 1) + t(power, N - 1)) * s / sqrt(N)

  A real change of this size is called significant in about 4 of 5 comparisons of N rounds
  (before the Holm correction across an op's shapes, which asks a little more when an op has
  many shapes). With N = 3: (4.303 + 1.061) * s / 1.732 = 3.10 s.

Rounds needed to detect a change of D % (`rounds_to_detect`, printed per shape): the smallest
N with detectable(N) ≤ D for the shape's measured s — a fixed `--rounds N` chosen before the
A/B from a calibration's spread, so its t test keeps its level (N - 1 degrees of freedom); more
than MAX_ROUNDS: None (shown as `>1000`). Roughly N ≈ ((1.96 + 0.84) · s / D)² + 2 for large N.

A planted change slows side B, so it is *detected* when the shape is significant with B
slower (direction -1); significant with B faster is the wrong sign.

Pure numbers; numpy and `measure.stats` only (`detectable_pct` lives there, beside the t
test it sizes).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..common.limits import MAX_ROUNDS
from ..measure.sequential import log_pct
from ..measure.sample_stats import clean
from ..measure.stats import detectable_pct

ALPHA = 0.05
POWER = 0.8
TARGET_MIN_MS = 0.02        # the planted-change target counts shapes of at least 20 µs


def shape_floor(deltas: Sequence[float], alpha: float = ALPHA, power: float = POWER) -> dict:
    """Noise floor, spread and detectable change of one shape's per-round deltas; the spread
    on the log of each round's ratio (as `zlh ab` tests rounds: the same detectable change
    in both tables; for deltas of a few percent the two scales agree)."""
    d = clean(deltas)
    if d.size == 0:
        return {"rounds": 0, "noise_median_pct": None, "noise_max_pct": None, "mean_pct": None,
                "sd_pct": None, "detectable_pct": None}
    logs = log_pct(d)
    sd = float(logs.std(ddof=1)) if logs.size >= 2 else None
    return {"rounds": int(d.size),
            "noise_median_pct": float(np.median(np.abs(d))),
            "noise_max_pct": float(np.max(np.abs(d))),
            "mean_pct": float(d.mean()),
            "sd_pct": sd,
            "detectable_pct": detectable_pct(sd, int(d.size), alpha, power)}


def rounds_to_detect(sd: float | None, change_pct: float, alpha: float = ALPHA,
                     power: float = POWER, most: int = MAX_ROUNDS) -> int | None:
    """The fewest rounds (≥ 2) whose detectable change is at most `change_pct` for a per-round
    spread `sd`; None when even `most` rounds are not enough or the spread is unknown."""
    widest = detectable_pct(sd, most, alpha, power)     # None: no spread (unknown, not finite)
    if widest is None or not change_pct > 0 or widest > change_pct:
        return None
    low, high = 2, most                  # detectable(high) <= change; find the first such N
    while low < high:
        mid = (low + high) // 2
        if detectable_pct(sd, mid, alpha, power) <= change_pct:
            high = mid
        else:
            low = mid + 1
    return low


def plant_outcome(row: dict) -> dict:
    """For a planted comparison's row (significant, direction): found with the right sign?"""
    significant = bool(row.get("significant"))
    direction = row.get("direction") or 0
    return {"detected": significant and direction < 0, "wrong_sign": significant and direction > 0}


def op_summary(shapes: Sequence[dict]) -> dict:
    """Over an op's shapes: floor median/max, median detectable change, significant count,
    and for a planted run the detection counts (all shapes, and shapes >= 20 µs)."""
    medians = [s["noise_median_pct"] for s in shapes if s.get("noise_median_pct") is not None]
    maxima = [s["noise_max_pct"] for s in shapes if s.get("noise_max_pct") is not None]
    detect = [s["detectable_pct"] for s in shapes if s.get("detectable_pct") is not None]
    out = {"shapes": len(shapes),
           "noise_median_pct": float(np.median(medians)) if medians else None,
           "noise_max_pct": float(max(maxima)) if maxima else None,
           "detectable_median_pct": float(np.median(detect)) if detect else None,
           "significant": sum(1 for s in shapes if s.get("significant"))}
    if any("detected" in s for s in shapes):
        out["plant"] = _detection(shapes)
        out["plant_target"] = _detection([s for s in shapes
                                          if (s.get("a_ms") or 0) >= TARGET_MIN_MS])
    return out


def _detection(shapes: Sequence[dict]) -> dict:
    n = len(shapes)
    found = sum(1 for s in shapes if s.get("detected"))
    return {"shapes": n, "detected": found,
            "wrong_sign": sum(1 for s in shapes if s.get("wrong_sign")),
            "rate": found / n if n else None}


def overall(op_summaries: Sequence[dict]) -> dict:
    """The whole calibration: shape counts summed, floors pooled, detection rates pooled."""
    out = {"ops": len(op_summaries), "shapes": sum(s["shapes"] for s in op_summaries),
           "significant": sum(s["significant"] for s in op_summaries)}
    for key in ("plant", "plant_target"):
        parts = [s[key] for s in op_summaries if key in s]
        if parts:
            n = sum(p["shapes"] for p in parts)
            found = sum(p["detected"] for p in parts)
            out[key] = {"shapes": n, "detected": found,
                        "wrong_sign": sum(p["wrong_sign"] for p in parts),
                        "rate": found / n if n else None}
    return out
