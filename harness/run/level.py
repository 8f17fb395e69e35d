"""Cases whose level is drawn per placement (`--level-placements MAX`).

Most kernels read alike wherever their inputs lie: a run's placements agree to a few tenths
of a percent, and rounds average what is left. A few do not. On an H200 and an H100,
layer_norm 20×6×65536 (bf16, about 50 µs) lands on one of several levels each time its inputs
move: a run's sixteen placements spread over 47.96–53.34 µs (sd 2.3 %) while each
placement's own samples agree to 0.05 % (tests/device/README.md, thirty-ninth set). A round
at one placement then differs by two draws (sd 2.3–4.4 %), which no affordable number of
rounds narrows to a few tenths. Such a case needs many placements in every run, and each can
be short: its level is what varies, not its samples.

So, with `--level-placements MAX`:

- a run that records (no `--replay`) times each case as usual, then probes its level: the
  function under test on PROBE more placements at a short budget (`short_timing`).
  The sd of their medians (100·ln) is the row's `level_spread_pct`. Where it reaches
  SPREAD_MIN_PCT, the case is timed again on `placements_for(spread, MAX)` placements at
  that budget (the probe's among them), which replace its first timing; the row says how
  many (`level_placements`) and its latency is their interquartile mean (IQM), not their
  median: a case's levels come in clusters, and a median jumps from one to the next where a
  mean of the middle half moves smoothly (on the H100's saved runs a round's sd was 0.64 %
  with the median of sixteen placements, 0.38 % with their mean);
- a replay never probes: a case its record timed on N level placements is timed on
  min(N, MAX) of them, every other case as usual. Both sides of an A/B replaying one record
  (or a record and its replay) so time every case alike.

The count aims a run's level at TARGET_PCT: N = 2·(spread / TARGET_PCT)², so that the two
sides' IQMs differ by about TARGET_PCT from the level alone (the IQM is taken as efficient
as the mean; both sides' draws count).

Only a case whose first timing reads at least `--level-min-us` (MIN_US, 20 µs, by default) is
probed. A level placement's set-up — the allocator's cache emptied, a spacer, the inputs
moved, a new graph captured — costs 30–47 ms whatever the kernel, against its 2–5 ms of
samples. On an H100 (forty-first set) the probe flagged one of sum's cases in a planted
record and three in an A/A's, all of 1.4–8.9 µs (sum's case ≥ 20 µs, 0.7 ms, was not): a
round's period went from about 3 s to 7.5 and 14.8 s, and sum's rounds took 120–152 s
against 43–46 s at one placement and 58.7 s for three fresh rounds. The flagged shapes'
smallest detectable change moved both ways (1048576: 0.36 → 0.21 % and 0.25 → 0.13 %; 64×64
0.52 → 0.29 %; 4096² 0.07 → 0.49 %). So by default a case under 20 µs — where zlh's
planted-change target starts counting — keeps its usual timing; `--level-min-us 0` probes
every case.

PROBE and SPREAD_MIN_PCT, from that layer_norm shape on an H100 (fortieth set): a run's 64
placements spread 1.5–2.6 % (19 runs); drawing 8 of them fell under 1 % in 3.6 % of draws
(one real probe of 8 read 0.92 % and missed it), 12 under 0.75 % in 0.4 %. The twins ops'
other cases probed 0.07–0.53 % (the largest on 1–3 µs kernels), so a case flagged by
mistake is a small one timed on a few more short placements (both sides alike), while a
case missed keeps its rounds' spread of several percent.

An A/B of several rounds reads such a case's round from its placements in pairs
(ab/compare.py): placement j of A against placement j of B, which lie behind spacers of one
size. The IQM averages the levels each side drew; the pairs cancel the level the two
placements share. On an H200 (forty-fifth set) a fresh plant of 0.3 % read −0.299 % in
pairs over 8 rounds, sd 0.051 % (+0.007 %, sd 0.451 %, from the two IQMs), and an A/A
−0.008 %, sd 0.054 % (+0.027 %, sd 0.327 %).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from ..measure.stopping import Budget, StoppingRule

PROBE = 12                 # placements a record's probe times
SPREAD_MIN_PCT = 0.75      # a probe spread from here on: the case's level is drawn per placement
TARGET_PCT = 0.25          # what the level alone may leave between two sides' runs
MIN_US = 20.0              # --level-min-us's default: a shorter case is not probed
# A level placement's short budget: a few samples (a graph replay is about a millisecond)
# after a short warm-up; the run's other settings (its error target, its pacing) kept.
SHORT = {"min_samples": 3, "min_time_ms": 2.0, "max_time_ms": 5.0}
SHORT_WARMUP_MS = 1.0


def short_timing(rule: StoppingRule, budget: Budget) -> tuple[StoppingRule, Budget]:
    """The run's stopping rule and budget shortened for one level placement."""
    return replace(rule, **SHORT), replace(budget, warmup_ms=SHORT_WARMUP_MS)


def spread_pct(medians: Sequence[float]) -> float:
    """The sd (ddof 1) of 100·ln of placements' medians: their spread in percent; 0 for
    fewer than two."""
    if len(medians) < 2:
        return 0.0
    return float(np.std(100.0 * np.log(np.asarray(medians, dtype=float)), ddof=1))


def probed(latency_ms: float | None, min_us: float) -> bool:
    """Whether a record probes a case whose first timing read `latency_ms` (the function
    under test's; None: not timed): from `min_us` on."""
    return latency_ms is not None and 1000.0 * latency_ms >= min_us


def placements_for(spread: float, most: int) -> int:
    """Level placements for a case whose probe spread `spread` %: 0 (time it as usual) below
    SPREAD_MIN_PCT, else 2·(spread / TARGET_PCT)², at least PROBE, at most `most`."""
    if spread < SPREAD_MIN_PCT or most < 1:
        return 0
    return int(min(most, max(PROBE, math.ceil(2.0 * (spread / TARGET_PCT) ** 2))))
