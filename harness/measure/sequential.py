"""How many rounds an A/B needs: the two-stage design of `zlh ab --rounds auto`, its interval,
the smallest change a number of rounds can see, and a simulation of its false-positive rate.

**The design (Stein's two-stage procedure, on the log of each round's ratio A/B).** The first
`pilot` rounds (`--min-rounds`) estimate each shape's per-round spread s (ddof 1). The op then
runs

    N = min(max_rounds, max over shapes of max(pilot, ceil((t(1 - alpha/2, pilot - 1) * s / X)^2)))

rounds, X the target half-width (`--target-pct`). A shape's delta is tested with the mean of
all N rounds and the spread of the pilot only:

    T = mean_N / (s_pilot / sqrt(N)),   T ~ Student's t with pilot - 1 degrees of freedom

and its interval is mean_N ± t(1 - alpha/2, pilot - 1) · s_pilot / sqrt(N) — narrower than X
once N was reached, wider when the cap stopped it first. Why this is exactly level alpha for
normal per-round deltas, whatever N the pilot chose: N depends on the pilot's residuals only
(the deviations from the pilot mean), and for normal data the residuals are independent of
the pilot mean and of every later round; so given N the mean of N rounds is normal with
variance sigma^2 / N, and s_pilot is a chi variable with pilot - 1 degrees of freedom
independent of it. That holds for all shapes of an op at once (N is the maximum over shapes),
and Holm across the shapes keeps the family-wise rate.

**The guard: never narrower than all the rounds show.** The design is exact only while the
rounds are alike; a card's rounds need not be (an A/A's later rounds can spread more than
its first). When the pilot happened to be quieter than the rounds after it,
its spread makes the interval too narrow: on an H200 an A/A called mm 2048² significant at
-0.055 % with a pilot spread of 0.047 % and 0.169 % over all 16 rounds. So a shape's interval
is the wider of two around the same mean — the two-stage one, and the ordinary t interval of
all N rounds (their spread, N - 1 degrees of freedom) — and its p the larger of the two tests'
(an intersection-union test). It rejects only where the exact two-stage test rejects, so for
alike rounds its rate stays at most alpha: nominal where N is the pilot (the two intervals
are then one), simulated 2.5-5 % wherever N exceeds it (`false_positive_rate` simulates this
rule). A shape's `needed` and the op's `stopped_by` still come from the pilot, as the design
chose N; a shape whose later rounds spread more than its pilot can end with a half-width over
the target, and its `half_width_pct` says so.

**Why not "stop when the usual t interval is narrow enough".** That rule tests with the
spread of all rounds, and it stops more often when that spread happens to be low, which makes
the t statistic too large: simulated (200,000 A/As per row, `false_positive_rate(...,
rule="naive")`), its false-positive rate at nominal 5 % reaches 12 % with a 2-round minimum,
9.5 % with 3, 7.5 % with 5 (worst when it stops after 10-20 rounds). The two-stage design pays
for exactness with the pilot's few degrees of freedom: at pilot 6, t(0.975, 5) = 2.571
instead of 1.96, (2.571 / 1.96)^2 = 1.7x the rounds a known spread would need.

**The smallest change N rounds can see** (`stats.detectable_pct`): (t(1 - alpha/2, df)
+ t(power, df)) · s / sqrt(N), the change found significant with probability `power` (before
Holm); df is N - 1 for a fixed number of rounds; for the two-stage design the larger of what
the pilot's spread on pilot - 1 df and all the rounds' spread on N - 1 df give (the guard
tests with both, so this is a lower bound of what it can see).

Pure numbers (numpy and `measure.stats`).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .sample_stats import clean
from .stats import ShapeStat, decided, detectable_pct, holm, rounds_interval
from .student_t import t_critical, t_two_sided_p

PILOT = 6                 # --min-rounds: the spread estimated on 5 degrees of freedom
MAX_ROUNDS = 30           # --max-rounds
TARGET_PCT = 0.15         # --target-pct: a planted 0.3 % is then found ~97 % of the time
POWER = 0.8


MANY_ROUNDS = 10 ** 9    # the most rounds_needed says: far beyond any cap (MAX_ROUNDS)


def log_pct(deltas) -> np.ndarray:
    """Per-round deltas (%) as 100 · log of each round's ratio A/B (≈ the delta for small
    deltas); non-finite and ≤ -100 % values dropped."""
    return 100.0 * np.log1p(_kept(deltas) / 100.0)


def _kept(deltas) -> np.ndarray:
    """The deltas a ratio exists for: finite and above -100 %."""
    d = clean(deltas)
    return d[d > -100.0]


def pilot_sd_pct(deltas, pilot: int) -> float | None:
    """The spread (ddof 1, on the log scale, in %) of the first `pilot` rounds' deltas; None
    with fewer than two of them."""
    logs = log_pct(list(deltas)[:pilot])
    return float(logs.std(ddof=1)) if logs.size >= 2 else None


def rounds_needed(sd_pct: float | None, pilot: int, target_pct: float,
                  alpha: float = 0.05) -> int:
    """Rounds a shape of pilot spread `sd_pct` needs for a half-width ≤ target_pct (two-stage
    design), at least `pilot`. An unknown spread needs no more than the pilot."""
    if sd_pct is None or not math.isfinite(sd_pct) or pilot < 2:
        return max(pilot, 1)
    ratio = t_critical(pilot - 1, alpha) * sd_pct / target_pct
    if not ratio * ratio < MANY_ROUNDS:      # a target far below the spread: more than any cap
        return MANY_ROUNDS                   # (ratio itself may be inf: no square overflows)
    return max(pilot, int(math.ceil(ratio * ratio - 1e-9)))


def planned_rounds(per_shape_deltas: Sequence[Sequence[float]], pilot: int,
                   target_pct: float, max_rounds: int, alpha: float = 0.05) -> int:
    """N for the op: the most any shape needs, capped at max_rounds (never below the pilot
    rounds already run)."""
    needs = [rounds_needed(pilot_sd_pct(d, pilot), pilot, target_pct, alpha)
             for d in per_shape_deltas]
    return max(pilot, min(max_rounds, max(needs, default=pilot)))


def half_width_pct(sd_pct: float | None, rounds: int, df: int,
                   alpha: float = 0.05) -> float | None:
    """t(1 - alpha/2, df) · sd / sqrt(rounds): the interval's half-width (log scale, %)."""
    if sd_pct is None or not math.isfinite(sd_pct) or df < 1 or rounds < 1:
        return None
    return t_critical(df, alpha) * sd_pct / math.sqrt(rounds)


def _pilot_interval(deltas, pilot: int, alpha: float) -> tuple[float, float, float]:
    """(low, high, p) of the two-stage design alone: the mean of all rounds' log ratios, the
    spread of the first `pilot`, Student's t on pilot - 1 degrees of freedom."""
    logs = log_pct(deltas) / 100.0
    sd = pilot_sd_pct(deltas, pilot)
    if sd is None or logs.size < 2:
        return (math.nan, math.nan, math.nan)
    mean, df = float(logs.mean()), min(pilot, logs.size) - 1
    if sd == 0.0:
        value = float(np.expm1(mean) * 100.0)
        return (value, value, 1.0 if mean == 0.0 else 0.0)
    se = sd / 100.0 / math.sqrt(logs.size)
    half = t_critical(df, alpha) * se
    return (float(np.expm1(mean - half) * 100.0), float(np.expm1(mean + half) * 100.0),
            t_two_sided_p(mean / se, df))


def two_stage_interval(deltas, pilot: int,
                       alpha: float = 0.05) -> tuple[float, float, float]:
    """(low, high, p) of one shape, bounds as deltas: the wider of the two-stage interval
    (the pilot's spread, pilot - 1 degrees of freedom) and the ordinary t interval of all its
    rounds, both around the mean of all rounds' log ratios, and the larger of the two p (the
    guard in the module's docstring). Fewer than two pilot rounds: (nan, nan, nan)."""
    staged = _pilot_interval(deltas, pilot, alpha)
    every = rounds_interval(_kept(deltas), alpha)
    if math.isnan(staged[2]) or math.isnan(every[2]):
        return staged
    return (min(staged[0], every[0]), max(staged[1], every[1]), max(staged[2], every[2]))


def two_stage_stats(per_shape_deltas: Sequence[Sequence[float]], pilot: int,
                    alpha: float = 0.05) -> list[ShapeStat]:
    """Every shape of an op under the two-stage design, Holm across the shapes; a shape's
    delta is the estimate its interval is built around — the mean of its rounds' log ratios,
    as a delta (a geometric mean) — so the reported number always lies inside its own
    interval (a median could fall outside it after one outlying round)."""
    between = [two_stage_interval(d, pilot, alpha) for d in per_shape_deltas]
    flags = holm([p for _, _, p in between], alpha=alpha)
    out = []
    for d, (lo, hi, p), flag in zip(per_shape_deltas, between, flags):
        logs = log_pct(d)
        centre = float(np.expm1(logs.mean() / 100.0) * 100.0) if logs.size else math.nan
        out.append(decided(ShapeStat(centre, lo, hi, p, flag)))
    return out


def shape_rounds(deltas, pilot: int | None, target_pct: float | None,
                 alpha: float = 0.05, power: float = POWER) -> dict:
    """What a shape's rounds could see: rounds run, the spread of all of them (`sd_all_pct`)
    and, under the two-stage design, the pilot's (`sd_pct`, on `df` degrees of freedom), the
    interval's half-width and the smallest detectable change (both in %, log scale; under the
    design the wider of what either spread gives, as its test decides), and with a pilot the
    rounds this shape alone needed for the target."""
    logs = log_pct(deltas)
    n = int(logs.size)
    every = float(logs.std(ddof=1)) if n >= 2 else None
    sd, df = (pilot_sd_pct(deltas, pilot), min(pilot, n) - 1) if pilot else (every, n - 1)
    out = {"rounds": n, "sd_pct": sd, "sd_all_pct": every, "df": df,
           "half_width_pct": half_width_pct(sd, n, df, alpha),
           "detectable_pct": detectable_pct(sd, n, alpha, power, df=df)}
    if pilot and sd is not None:       # (no pilot spread: not tested, nothing to widen)
        for key, value in (("half_width_pct", half_width_pct(every, n, n - 1, alpha)),
                           ("detectable_pct", detectable_pct(every, n, alpha, power))):
            if value is not None and (out[key] is None or value > out[key]):
                out[key] = value
    if pilot and target_pct:
        out["needed"] = rounds_needed(sd, pilot, target_pct, alpha)
    return out


# ---- simulation ----------------------------------------------------------------------------
def _t_table(max_df: int, alpha: float) -> np.ndarray:
    table = np.full(max_df + 1, np.inf)
    for df in range(1, max_df + 1):
        table[df] = t_critical(df, alpha)
    return table


def false_positive_rate(sims: int, pilot: int, max_rounds: int, target_pct: float,
                        sd_pct, alpha: float = 0.05, seed: int = 0, shapes: int = 1,
                        rule: str = "two-stage", change_pct: float = 0.0,
                        family: bool = False, later_scale: float = 1.0) -> dict:
    """Simulated A/As (normal per-round log deltas of spread sd_pct — one spread for every
    shape, or one per shape —, `shapes` independent shapes per op; `change_pct` shifts them
    all, for power; `later_scale` widens the rounds after the pilot, rounds that are not
    alike): the share of shape tests called significant (before Holm; with `family`, by Holm
    across each op's shapes as zlh decides), the mean rounds run, and the number of tests.
    `rule`: "two-stage" (this module's design with its guard, as zlh decides), "pilot-only"
    (the design without the guard) or "naive" (stop at the first round ≥ pilot whose
    ordinary t half-width is ≤ target on every shape, test with the t of all rounds run).
    Vectorised: 10,000 A/As take a fraction of a second."""
    rng = np.random.default_rng(seed)
    spread = np.broadcast_to(np.asarray(sd_pct, dtype=float), (shapes,))
    x = rng.standard_normal((sims, max_rounds, shapes)) * spread
    x[:, pilot:, :] *= later_scale
    x += change_pct
    k = np.arange(1, max_rounds + 1, dtype=float)[None, :, None]
    mean = np.cumsum(x, axis=1) / k
    t_table = _t_table(max_rounds, alpha)
    rows = np.arange(sims)
    if rule in ("two-stage", "pilot-only"):
        sd = x[:, :pilot, :].std(axis=1, ddof=1)                          # (sims, shapes)
        need = np.ceil((t_table[pilot - 1] * sd / target_pct) ** 2 - 1e-9).max(axis=1)
        stop = np.clip(need, pilot, max_rounds).astype(int)               # rounds run
        m = mean[rows, stop - 1, :]
        t_all = None
        if rule == "two-stage":
            ran = (np.arange(max_rounds)[None, :] < stop[:, None])[:, :, None]
            var = (((x - m[:, None, :]) ** 2) * ran).sum(axis=1) / (stop - 1)[:, None]
            t_all = np.abs(m) * np.sqrt(stop)[:, None] / np.sqrt(var)
        t_pilot = np.abs(m) * np.sqrt(stop)[:, None] / sd
        reject = _reject(t_pilot, t_all, stop, pilot, alpha, family)
    elif rule == "naive" and not family:
        sq = np.cumsum(x * x, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.maximum(sq - k * mean ** 2, 0.0) / np.maximum(k - 1, 1)
        sd_k = np.sqrt(var)
        crit = t_table[np.maximum(np.arange(max_rounds), 1)][None, :, None]
        narrow = (crit * sd_k / np.sqrt(k) <= target_pct).all(axis=2)     # (sims, rounds)
        narrow[:, :pilot - 1] = False
        narrow[:, -1] = True
        stop = narrow.argmax(axis=1) + 1
        m, s = mean[rows, stop - 1, :], sd_k[rows, stop - 1, :]
        reject = np.abs(m) * np.sqrt(stop)[:, None] / s > t_table[stop - 1][:, None]
    else:
        raise ValueError(f"rule {rule!r}: two-stage, pilot-only or naive (naive without "
                         "family)")
    return {"rate": float(reject.mean()), "tests": int(reject.size),
            "mean_rounds": float(stop.mean()), "rule": rule}


def _reject(t_pilot, t_all, stop, pilot: int, alpha: float, family: bool):
    """Which of the (sims, shapes) tests reject: each shape at alpha alone, or with `family`
    Holm's step-down across each op's shapes (the j-th smallest p against alpha / (m - j)).
    A test passes a level when its pilot |T| clears t(pilot - 1) at that level and, with the
    guard (`t_all` given), its all-rounds |T| clears t(N - 1) at that level too; the larger
    p of the two is the test's p."""
    m = t_pilot.shape[1] if family else 1
    levels = [alpha / (m - j) for j in range(m)]
    passes = t_pilot[..., None] > np.array([t_critical(pilot - 1, a) for a in levels])
    if t_all is not None:
        table = np.array([[t_critical(max(n - 1, 1), a) for a in levels]
                          for n in range(int(stop.max()) + 1)])
        passes &= t_all[..., None] > table[stop][:, None, :]
    fails = m - passes.sum(axis=2)            # a test passes level j exactly when j >= fails
    if not family:
        return fails == 0
    order = np.argsort(fails, axis=1, kind="stable")
    ranked = np.take_along_axis(fails, order, axis=1)
    passed = np.cumprod(ranked <= np.arange(m)[None, :], axis=1).astype(bool)
    reject = np.zeros_like(passed)
    np.put_along_axis(reject, order, passed, axis=1)
    return reject


def binomial_interval(rate: float, n: int, level: float = 0.99) -> tuple[float, float]:
    """The normal-approximation interval a simulated rate of n trials falls in with
    probability `level` when the true rate is `rate`."""
    z = {0.95: 1.959964, 0.99: 2.575829}[level]
    half = z * math.sqrt(rate * (1.0 - rate) / n)
    return (rate - half, rate + half)
