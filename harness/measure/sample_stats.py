"""What zlh reads from one timed function's samples: the sample set itself, the error of its
median and whether its median should be taken at face value. Pure functions on lists of floats;
numpy only. (Comparing two sides' samples is `stats.py`.)
`clean(samples)` is the one reading of a sample set: a float array, non-finite values dropped
(a lost sample, not a time).

**The error of a median** (`relative_median_error`): what a `Measurement` reports as rel_err
and the stopping rule stops on: 1.2533 × the robust sigma (1.4826 × MAD) / sqrt(n), over the
median.

**Suspect samples** (`suspect_flags`): samples whose median should not be taken at face
value: extreme outliers, two modes. A median is robust to a few wild samples, so neither
condition makes a reported number wrong by itself. Both say the process saw something the
number hides — a 16 ms stall among 6.6 µs calls, a clock or a config switching half-way — and
a comparison built on such a case deserves a second look. The rules, on one timed function's
raw samples:

* the robust spread `s` is 1.4826 × the median absolute deviation (the standard deviation a
  normal sample would have), floored at 0.1 % of the median `m`, so that a set measured to
  0.003 % does not make a 1 % wobble look wild;
* `outliers` (n >= 5): some sample is at least OUTLIER_RATIO (2) × the median **and** at least
  OUTLIER_SPREADS (10) robust spreads above it. Either alone is common: heavy-tailed host
  timings reach twice the median within a wide spread, and a 1 % hiccup is ten spreads out
  when the spread is tiny;
* `bimodal` (n >= 10): sort the samples; among the splits that leave at least 10 % of them
  (and at least 3) on each side, take the widest gap between neighbours. Two modes when that
  gap is at least BIMODAL_GAP (5 %) of the median **and** at least GAP_SPREADS (4) times the
  larger robust spread of the two groups it separates: two tight groups far apart, not one
  wide group with a hole in it.
"""
from __future__ import annotations

import math

import numpy as np

MAD_TO_SD = 1.4826            # median absolute deviation -> standard deviation (normal)


def interquartile_mean(values) -> float:
    """The mean of the middle half: a quarter (rounded down) of the values dropped at each
    end. Four values or fewer: their median (for four, the same thing)."""
    ordered = np.sort(np.asarray(values, dtype=float))
    if ordered.size <= 4:
        return float(np.median(ordered))
    cut = ordered.size // 4
    return float(np.mean(ordered[cut:ordered.size - cut]))


def clean(samples) -> np.ndarray:
    """Samples as a float array with non-finite values dropped (a lost sample, not a time)."""
    if samples is None:
        return np.empty(0, dtype=float)
    arr = np.asarray(list(samples), dtype=float).ravel()
    return arr[np.isfinite(arr)]


# ---- the error of a median ----------------------------------------------------------------
# Standard error of the median of n normal samples ~= 1.2533 * sigma / sqrt(n);
# sigma estimated robustly as 1.4826 * MAD.
_MEDIAN_SE_FACTOR = 1.2533 * MAD_TO_SD


def relative_median_error(samples) -> float:
    """Estimated relative standard error of the median of `samples` (inf for fewer than two
    samples or a median that is not positive)."""
    arr = np.asarray(samples, dtype=float)
    if arr.size < 2:
        return math.inf
    med = float(np.median(arr))
    if med <= 0:
        return math.inf
    mad = float(np.median(np.abs(arr - med)))
    return _MEDIAN_SE_FACTOR * mad / math.sqrt(arr.size) / med


# ---- suspect samples ----------------------------------------------------------------------
OUTLIERS, BIMODAL = "outliers", "bimodal"
SPREAD_FLOOR = 0.001          # of the median
OUTLIER_RATIO = 2.0
OUTLIER_SPREADS = 10.0
OUTLIER_MIN_N = 5
BIMODAL_GAP = 0.05            # of the median
GAP_SPREADS = 4.0
BIMODAL_MIN_N = 10
GROUP_MIN_FRACTION, GROUP_MIN_N = 0.10, 3


def robust_spread(values: np.ndarray) -> float:
    med = float(np.median(values))
    return MAD_TO_SD * float(np.median(np.abs(values - med)))


def worst_ratio(samples) -> float:
    """max / median of the samples (nan when the median is not positive)."""
    arr = clean(samples)
    if arr.size == 0:
        return math.nan
    med = float(np.median(arr))
    return float(arr.max() / med) if med > 0 else math.nan


def has_outliers(samples) -> bool:
    arr = clean(samples)
    if arr.size < OUTLIER_MIN_N:
        return False
    med = float(np.median(arr))
    if med <= 0:
        return False
    spread = max(robust_spread(arr), SPREAD_FLOOR * med)
    top = float(arr.max())
    return top >= OUTLIER_RATIO * med and top - med >= OUTLIER_SPREADS * spread


def widest_gap(samples) -> tuple[float, int]:
    """(gap, split index into the sorted samples) of the widest gap between neighbours
    that leaves enough samples on both sides; (0.0, 0) when there is no such split."""
    arr = np.sort(clean(samples))
    least = max(GROUP_MIN_N, math.ceil(GROUP_MIN_FRACTION * arr.size))
    if arr.size < 2 * least:
        return 0.0, 0
    gaps = np.diff(arr)[least - 1: arr.size - least]   # split i: arr[:i] | arr[i:]
    best = int(np.argmax(gaps))
    return float(gaps[best]), best + least


def is_bimodal(samples) -> bool:
    arr = np.sort(clean(samples))
    if arr.size < BIMODAL_MIN_N:
        return False
    med = float(np.median(arr))
    if med <= 0:
        return False
    gap, split = widest_gap(arr)
    if split == 0:
        return False
    spread = max(robust_spread(arr[:split]), robust_spread(arr[split:]), SPREAD_FLOOR * med)
    return gap >= BIMODAL_GAP * med and gap >= GAP_SPREADS * spread


def suspect_flags(samples) -> tuple[str, ...]:
    """The suspect-sample names that apply to one timed function's samples."""
    found = []
    if has_outliers(samples):
        found.append(OUTLIERS)
    if is_bimodal(samples):
        found.append(BIMODAL)
    return tuple(found)
