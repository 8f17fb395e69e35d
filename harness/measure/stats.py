"""The statistics of comparing two sides' timing samples: deltas, intervals, p-values and
the Holm correction, per shape and per op. Pure functions: lists of floats in, numbers out;
numpy only. What one side's samples say by themselves (their error, suspect flags) is
`sample_stats.py`.

**A/B comparison** of two latency sample sets per shape. Side A is the baseline, side B the
side under test. Every delta in zlh is

    delta_pct = (median_A / median_B - 1) * 100

so a positive delta means B is faster. A single pair of medians cannot say whether a
difference is real, so each shape also gets a confidence interval, a p-value, and a Holm
correction across the shapes of one op (an op with 40 shapes would otherwise show a couple of
"significant" changes from noise alone).

One round (one process per side): bootstrap interval and rank test over the raw samples.
Those samples come from one process each, so they see within-process noise only. Several
rounds: each round's delta is one independent observation, and the interval and p-value are
Student's t over the per-round deltas (on the log of each round's ratio). That is the
honest unit: on an H200, a 1.4 us kernel measured to 0.003% inside each process still moved
by about 2% from one process to the next, which pooled samples would have called a
significant change. An op's geometric-mean speedup gets an interval the same way
(`geomean_rounds_interval`: Student's t over the per-round log geomean ratios;
`geomean_samples_interval`: a bootstrap over the raw samples of one round).
`detectable_pct` turns the same t around: the smallest change N rounds find with 80 % power
(`zlh calibrate`). The two-stage design of `zlh ab --rounds auto` (how many rounds, and its
test on the pilot rounds' spread) is the sibling module `sequential.py`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Sequence

import numpy as np

from .sample_stats import clean
from .student_t import t_critical, t_two_sided_p

# ---- A/B comparison ----------------------------------------------------------------------
# Bootstrap resamples are drawn in blocks so that n_boot x n indices never need more than
# this many entries at once (samples sets can hold thousands of values).
_BOOT_BLOCK_ENTRIES = 4_000_000


def delta_pct(a_ms: float, b_ms: float) -> float:
    """Percent by which B beats A: (a / b - 1) * 100. NaN when either side is unusable."""
    if not (_finite(a_ms) and _finite(b_ms)) or a_ms <= 0 or b_ms <= 0:
        return math.nan
    return (a_ms / b_ms - 1.0) * 100.0


def bootstrap_delta_ci(samples_a, samples_b, n_boot: int = 2000, alpha: float = 0.05,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of delta_pct, from the ratio of resampled medians.

    The two sides are timed independently, so each is resampled independently with
    replacement. The same seed always gives the same interval, which keeps reports
    reproducible. With fewer than two samples on a side there is nothing to resample:
    (nan, nan).
    """
    a = clean(samples_a)
    b = clean(samples_b)
    if a.size < 2 or b.size < 2 or n_boot < 1:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    med_a = _bootstrap_medians(a, n_boot, rng)
    med_b = _bootstrap_medians(b, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        deltas = (med_a / med_b - 1.0) * 100.0
    deltas = deltas[np.isfinite(deltas)]
    if deltas.size == 0:
        return (math.nan, math.nan)
    low, high = np.percentile(deltas, [100.0 * alpha / 2, 100.0 * (1 - alpha / 2)])
    return (float(low), float(high))


def mann_whitney_p(samples_a, samples_b) -> float:
    """Two-sided Mann-Whitney U p-value (normal approximation).

    A rank test, because latency samples are skewed and carry outliers that would dominate a
    t-test. Details, matching the textbook asymptotic test:

    - tied values get the average of their ranks;
    - tie correction: var(U) = n1*n2/12 * ((n+1) - sum(t^3 - t) / (n*(n-1))), with t the
      size of each group of tied values;
    - continuity correction: z = (|U - n1*n2/2| - 0.5) / sd(U), floored at 0;
    - p = erfc(z / sqrt(2)), the two-sided normal tail.

    When every value is the same the ranks carry no information and p is 1.0. With fewer
    than two samples on a side the test is meaningless: nan.
    """
    a = clean(samples_a)
    b = clean(samples_b)
    n1, n2 = a.size, b.size
    if n1 < 2 or n2 < 2:
        return math.nan
    n = n1 + n2
    ranks, tie_sizes = _average_ranks(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    tie_term = float(np.sum(tie_sizes ** 3 - tie_sizes)) / (n * (n - 1))
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0
    z = max(abs(u1 - n1 * n2 / 2.0) - 0.5, 0.0) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))


def detectable_pct(sd: float | None, rounds: int, alpha: float = 0.05,
                   power: float = 0.8, df: int | None = None) -> float | None:
    """Smallest change detectable with `power` at `rounds` rounds, given the per-round spread
    `sd` of the deltas: (t(1 - alpha/2, df) + t(power, df)) * sd / sqrt(N), df = N - 1 by
    default, the same Student's t that `rounds_interval` tests with (calibrate/floor.py says
    more); the two-stage design (measure/sequential.py) passes df = pilot - 1 for its pilot's
    spread and takes the larger of that and the all-rounds value. None for no degrees of
    freedom (fewer than two rounds) or no spread."""
    df = rounds - 1 if df is None else df
    if sd is None or not math.isfinite(sd) or df < 1 or rounds < 1:
        return None
    return (t_critical(df, alpha) + t_critical(df, 2.0 * (1.0 - power))) * sd / math.sqrt(rounds)


def rounds_interval(deltas: Sequence[float], alpha: float = 0.05) -> tuple[float, float, float]:
    """(low, high, p) from one shape's per-round deltas: the t interval of their mean and the
    one-sample t-test against 0, both on the log of each round's ratio A/B (a delta of d %
    is the ratio 1 + d/100): a change multiplies a time, so its spread scales with the ratio
    — on the log scale a 20x and a 1.01x change are tested alike; for deltas of a few percent
    the two scales agree. Bounds are deltas again. Fewer than two finite deltas (or one at
    -100 % or below, no ratio): (nan, nan, nan)."""
    d = clean(deltas)
    if d.size < 2 or (d <= -100.0).any():
        return (math.nan, math.nan, math.nan)
    logs = np.log1p(d / 100.0)
    mean, sd = float(logs.mean()), float(logs.std(ddof=1))
    if sd == 0.0:
        return (float(d[0]), float(d[0]), 1.0 if mean == 0.0 else 0.0)
    half = t_critical(d.size - 1, alpha) * sd / math.sqrt(d.size)
    p = t_two_sided_p(mean / (sd / math.sqrt(d.size)), d.size - 1)
    return (float(np.expm1(mean - half) * 100.0), float(np.expm1(mean + half) * 100.0), p)


def holm(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm-Bonferroni step-down: which hypotheses are rejected at family-wise level alpha.

    The k-th smallest p (k = 0, 1, ...) is compared with alpha / (m - k) and the procedure
    stops at the first failure. m counts only the tests that were actually performed: a nan
    p-value (too few samples) is never significant and does not tighten the others.
    """
    ps = [float(p) if p is not None else math.nan for p in p_values]
    tested = sorted((p, i) for i, p in enumerate(ps) if _finite(p))
    significant = [False] * len(ps)
    m = len(tested)
    for k, (p, index) in enumerate(tested):
        if p > alpha / (m - k):
            break
        significant[index] = True
    return significant


@dataclass(frozen=True)
class ShapeStat:
    """The comparison verdict for one shape: how big, how sure, and whether it counts."""
    delta_pct: float
    ci_low_pct: float
    ci_high_pct: float
    p_value: float
    significant: bool

    @property
    def ratio(self) -> float:
        """median_A / median_B, recovered from the delta (>1 means B is faster)."""
        return 1.0 + self.delta_pct / 100.0

    def to_dict(self) -> dict:
        return asdict(self)


def shape_stats(pairs, alpha: float = 0.05, seed: int = 0,
                n_boot: int = 2000) -> list[ShapeStat]:
    """Statistics for every shape of one op, with Holm applied across the shapes.

    `pairs` holds (samples_a, samples_b, median_a, median_b) per shape. The medians are the
    ones the runs reported (possibly a median of repeat medians), so they, not the raw
    samples, define delta_pct. Every shape is bootstrapped with the same seed so that its
    interval does not change when shapes are added to or removed from the list.
    """
    deltas, intervals, p_values = [], [], []
    for samples_a, samples_b, median_a, median_b in pairs:
        deltas.append(delta_pct(median_a, median_b))
        intervals.append(bootstrap_delta_ci(samples_a, samples_b, alpha=alpha, seed=seed,
                                            n_boot=n_boot))
        p_values.append(mann_whitney_p(samples_a, samples_b))
    flags = holm(p_values, alpha=alpha)
    return [decided(ShapeStat(delta_pct=d, ci_low_pct=lo, ci_high_pct=hi, p_value=p,
                              significant=s))
            for d, (lo, hi), p, s in zip(deltas, intervals, p_values, flags)]


def rounds_stats(per_shape_deltas: Sequence[Sequence[float]],
                 alpha: float = 0.05) -> list[ShapeStat]:
    """Statistics for every shape of one op measured over several rounds, with Holm across
    the shapes. `per_shape_deltas` holds each shape's per-round deltas; a shape's delta is
    their median, its interval and p-value come from `rounds_interval`."""
    between = [rounds_interval(d, alpha) for d in per_shape_deltas]
    flags = holm([p for _, _, p in between], alpha=alpha)
    return [decided(ShapeStat(delta_pct=_finite_median(d), ci_low_pct=lo, ci_high_pct=hi,
                              p_value=p, significant=flag))
            for d, (lo, hi, p), flag in zip(per_shape_deltas, between, flags)]


def decided(stat: ShapeStat) -> ShapeStat:
    """A shape is significant only when the test rejects and its interval has a direction:
    the rank test and the bootstrap interval can disagree near the edge."""
    if stat.significant and direction(stat) == 0:
        return replace(stat, significant=False)
    return stat


def summarize(stats: Sequence[ShapeStat], ratios: Sequence[float] | None = None) -> dict:
    """One op's summary line: geometric-mean speedup, delta range and a verdict count.

    `ratios` (median_A / median_B per shape) default to the ones implied by each delta. The
    geometric mean is the honest average of ratios: a 2x win and a 2x loss cancel to 1.
    Shapes with no usable delta count as unchanged and are left out of the numbers.
    """
    if ratios is None:
        ratios = [s.ratio for s in stats]
    deltas = np.array([s.delta_pct for s in stats], dtype=float)
    deltas = deltas[np.isfinite(deltas)]
    faster = sum(1 for s in stats if s.significant and direction(s) > 0)
    slower = sum(1 for s in stats if s.significant and direction(s) < 0)
    return {
        "n": len(stats),
        "geomean_speedup": geomean(ratios),
        "delta_min_pct": float(deltas.min()) if deltas.size else math.nan,
        "delta_max_pct": float(deltas.max()) if deltas.size else math.nan,
        "delta_median_pct": float(np.median(deltas)) if deltas.size else math.nan,
        "faster": faster,
        "slower": slower,
        "unchanged": len(stats) - faster - slower,
    }


def direction(stat: ShapeStat) -> int:
    """+1 B faster, -1 B slower, 0 undecided — read from the interval where there is one: with
    rounds the reported delta is the median of the per-round deltas while the test is on
    their mean, and the two can disagree in sign when rounds split into two groups."""
    low, high = stat.ci_low_pct, stat.ci_high_pct
    if _finite(low) and _finite(high):
        return 1 if low > 0 else -1 if high < 0 else 0
    if _finite(stat.delta_pct):
        return 1 if stat.delta_pct > 0 else -1 if stat.delta_pct < 0 else 0
    return 0


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of the positive finite values; nan when there are none."""
    arr = np.array([v for v in values if _finite(v) and v > 0], dtype=float)
    if arr.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(arr))))


def geomean_rounds_interval(per_shape_deltas: Sequence[Sequence[float]],
                            alpha: float = 0.05) -> tuple[float, float]:
    """(low, high) of an op's geometric-mean speedup A / B measured over several rounds.

    Each round is one observation: its log geomean ratio is the mean, over the shapes, of
    log(1 + delta / 100) — the log of that round's geomean speedup. The interval is Student's
    t of the mean of those per-round values (N rounds, N - 1 degrees of freedom), the same t
    `rounds_interval` gives one shape, and its bounds are speedups again (exp). Only shapes
    with a usable delta in every round take part, so each round averages the same shapes.
    Fewer than two rounds or no such shape: (nan, nan)."""
    table = [list(map(float, d)) for d in per_shape_deltas]
    if not table:
        return (math.nan, math.nan)
    usable = [d for d in table if len(d) >= 2 and all(_finite(v) and v > -100.0 for v in d)]
    rounds = {len(d) for d in usable}
    if not usable or len(rounds) != 1:
        return (math.nan, math.nan)
    logs = np.log1p(np.array(usable, dtype=float) / 100.0).mean(axis=0)   # one per round
    mean, sd = float(logs.mean()), float(logs.std(ddof=1))
    half = t_critical(logs.size - 1, alpha) * sd / math.sqrt(logs.size) if sd > 0 else 0.0
    return (float(np.exp(mean - half)), float(np.exp(mean + half)))


def geomean_samples_interval(sample_pairs, n_boot: int = 2000, alpha: float = 0.05,
                             seed: int = 0) -> tuple[float, float]:
    """(low, high) of an op's geometric-mean speedup A / B from one round: a percentile
    bootstrap. Each resample draws every shape's two sample sets again with replacement (as
    `bootstrap_delta_ci` does, same seed per shape) and takes the geomean over the shapes of
    the ratio of resampled medians. `sample_pairs` holds (samples_a, samples_b) per shape;
    shapes with fewer than two samples on a side are left out; none left: (nan, nan)."""
    total, used = np.zeros(max(n_boot, 0)), 0
    for samples_a, samples_b in sample_pairs:
        a, b = clean(samples_a), clean(samples_b)
        if a.size < 2 or b.size < 2 or n_boot < 1:
            continue
        rng = np.random.default_rng(seed)
        med_a = _bootstrap_medians(a, n_boot, rng)
        med_b = _bootstrap_medians(b, n_boot, rng)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = total + np.log(med_a / med_b)
        used += 1
    if not used:
        return (math.nan, math.nan)
    logs = total / used
    logs = logs[np.isfinite(logs)]
    if logs.size == 0:
        return (math.nan, math.nan)
    low, high = np.percentile(logs, [100.0 * alpha / 2, 100.0 * (1 - alpha / 2)])
    return (float(np.exp(low)), float(np.exp(high)))


def round_stats(per_round_deltas: Sequence[Sequence[float]]) -> list[dict]:
    """Per-shape view across rounds: median delta, min~max, and whether the sign held.

    Input is [round][shape], shapes in the same order every round. A shape is sign-stable
    when every round agrees that B is faster (all > 0) or that it is not (all <= 0); an
    exact 0 is "not faster". A nan in any round makes the sign unknowable: not stable.
    """
    if not per_round_deltas:
        return []
    widths = {len(r) for r in per_round_deltas}
    if len(widths) != 1:
        raise ValueError(f"every round needs the same shapes; got round widths {sorted(widths)}")
    table = np.array(per_round_deltas, dtype=float).reshape(len(per_round_deltas), -1)
    return [_one_shape_rounds(table[:, j]) for j in range(table.shape[1])]


def side_spread(latencies: Sequence[float]) -> float:
    """How far one side's latency wandered across rounds: (max / min - 1) * 100."""
    arr = clean(latencies)
    if arr.size == 0 or arr.min() <= 0:
        return math.nan
    return float((arr.max() / arr.min() - 1.0) * 100.0)


def _one_shape_rounds(values: np.ndarray) -> dict:
    finite = values[np.isfinite(values)]
    all_finite = finite.size == values.size and values.size > 0
    stable = all_finite and (bool(np.all(finite > 0)) or bool(np.all(finite <= 0)))
    return {
        "median_delta_pct": _finite_median(values),
        "min_delta_pct": float(finite.min()) if finite.size else math.nan,
        "max_delta_pct": float(finite.max()) if finite.size else math.nan,
        "sign_stable": stable,
        "rounds": int(values.size),
    }


def _finite_median(values) -> float:
    finite = clean(values)
    return float(np.median(finite)) if finite.size else math.nan


def _bootstrap_medians(samples: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot resamples with replacement, drawn in memory-bounded blocks."""
    n = samples.size
    block = max(1, _BOOT_BLOCK_ENTRIES // n)
    medians = np.empty(n_boot, dtype=float)
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        medians[start:stop] = np.median(samples[idx], axis=1)
    return medians


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks with ties sharing their average rank, and the size of each tie group."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)                 # last rank held by each group
    group_rank = upper - (counts - 1) / 2.0   # mean of ranks upper-count+1 .. upper
    return group_rank[inverse], counts.astype(float)


def _finite(value) -> bool:
    return isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value)
