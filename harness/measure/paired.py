"""A round's delta from neighbour samples, where the two sides took turns.

When a round's two sides take turns on the device sample by sample (`--round-process turns`,
`turns-fresh`: harness/measure/baton.py), sample k of A and sample k of B were timed one
right after the other, and both sides end with as many samples. A drift that both sides
share — a power-capped card's clock wandering under a long GEMM — then moves A_k and B_k
alike, and cancels in their ratio; in the ratio of the two sides' medians it does not (each
median picks its own moment of the drift). And a placement (`--placements`) that read slow
on one side weighs as its share of the pairs, where the median of four placements' medians
averages the middle two. So such a round's delta is the median over its neighbour pairs of
ln(A_k / B_k), as a delta: on an H200's power-capped GEMMs it spread up to 10 times less from
round to round than the ratio of medians (docs/concepts/rounds.md; tests/device/README.md,
thirty-seventh set). Rounds that did not take turns have no neighbours to pair.

It stays one number per round, so the rounds' test (measure.sequential, stats.rounds_stats)
is as honest as before: whatever the process or the round adds still shows in the spread of
these per-round deltas. Inside a round in turns the order within a pair alternates (blocks of
A B B A), so an effect of going first within a pair cancels; an effect of being the round's
first side does not, for this delta as for the ratio of medians, and cancels across rounds as
the first side alternates (ABBA rounds). Where a round's pair ratios scatter widely (a long
GEMM whose samples move by tens of percent), the median of the pairs is also the more robust
of the two.

The same median of pairs reads a round of a case timed on level placements (run/level.py):
placement j of A against placement j of B, which lie behind spacers of one size (ab.compare).
"""
from __future__ import annotations

import math

import numpy as np

MIN_PAIRS = 3        # fewer neighbour pairs than this: the round keeps the ratio of medians


def paired_delta_pct(samples_a, samples_b, min_pairs: int = MIN_PAIRS) -> float | None:
    """100 · (exp(median over k of ln(A_k / B_k)) − 1): percent by which B beats A, from the
    round's neighbour sample pairs (the sign of stats.delta_pct). None — the caller keeps the
    ratio of medians — where the two sides' sample counts differ (they did not end together),
    there are fewer than `min_pairs`, or a sample is not a positive finite time."""
    if samples_a is None or samples_b is None:
        return None
    a = np.asarray(samples_a, dtype=float)
    b = np.asarray(samples_b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or a.size < min_pairs:
        return None
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and a.min() > 0 and b.min() > 0):
        return None
    return math.expm1(float(np.median(np.log(a / b)))) * 100.0
