import math
from pathlib import Path

import numpy as np
import pytest

from harness.measure.stats import (ShapeStat, bootstrap_delta_ci, delta_pct, geomean, holm,
                                   direction, mann_whitney_p, round_stats, rounds_interval,
                                   shape_stats, side_spread, summarize)
from harness.measure.student_t import t_critical, t_two_sided_p


def _lognormal(rng, median, n, sigma=0.02):
    return median * np.exp(rng.normal(0.0, sigma, size=n))


# --- delta -------------------------------------------------------------------------------

def test_delta_positive_when_b_faster():
    assert delta_pct(1.10, 1.00) == pytest.approx(10.0)
    assert delta_pct(1.00, 1.25) == pytest.approx(-20.0)
    assert delta_pct(2.0, 2.0) == 0.0


def test_delta_nan_for_unusable_inputs():
    assert math.isnan(delta_pct(1.0, 0.0))
    assert math.isnan(delta_pct(math.nan, 1.0))
    assert math.isnan(delta_pct(1.0, -1.0))


# --- Holm --------------------------------------------------------------------------------

def test_holm_hand_computed():
    # sorted: 0.005 <= 0.05/4 yes; 0.01 <= 0.05/3 yes; 0.03 <= 0.05/2 no -> stop.
    assert holm([0.01, 0.04, 0.03, 0.005], alpha=0.05) == [True, False, False, True]


def test_holm_step_down_stops_at_first_failure():
    # 0.02 > 0.05/3 fails, so 0.03 is not rejected even though 0.03 <= 0.05/2
    assert holm([0.02, 0.03, 0.04]) == [False, False, False]
    assert holm([0.001, 0.02, 0.04]) == [True, True, True]   # 0.001<=.0167, .02<=.025, .04<=.05


def test_holm_nan_never_significant_and_not_counted():
    # only two real tests: 0.02 <= 0.05/2 and 0.04 <= 0.05/1
    assert holm([math.nan, 0.02, 0.04, None]) == [False, True, True, False]
    assert holm([]) == []


# --- Mann-Whitney ------------------------------------------------------------------------

def test_mann_whitney_hand_computed_with_ties():
    a = [1, 2, 2, 5]
    b = [2, 3, 4, 6]
    # pooled ranks: 1->1, the three 2s -> (2+3+4)/3 = 3, 3->5, 4->6, 5->7, 6->8
    # R_a = 1 + 3 + 3 + 7 = 14; U = 14 - 4*5/2 = 4; mean U = 4*4/2 = 8
    # tie term: (3^3 - 3) / (8*7) = 24/56; var = 16/12 * (9 - 24/56) = 80/7
    z = (abs(4 - 8) - 0.5) / math.sqrt(80 / 7)
    expected = math.erfc(z / math.sqrt(2))
    assert mann_whitney_p(a, b) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.3005, abs=1e-3)
    assert mann_whitney_p(b, a) == pytest.approx(expected, rel=1e-12)   # two-sided


def test_mann_whitney_fully_separated():
    a = np.arange(10, 20, dtype=float)
    b = np.arange(0, 10, dtype=float)
    # U = 0 or 100, mean 50, var = 100*21/12 -> z = 49.5 / 13.23 = 3.74 -> p ~ 1.8e-4
    p = mann_whitney_p(a, b)
    assert p < 0.001
    assert p == pytest.approx(math.erfc(49.5 / math.sqrt(175) / math.sqrt(2)))


def test_mann_whitney_same_distribution_not_significant():
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert mann_whitney_p(x, list(reversed(x))) == 1.0   # continuity floor -> z = 0
    rng = np.random.default_rng(3)
    assert mann_whitney_p(rng.permutation(np.arange(40.0))[:20],
                          np.arange(40.0)[::2]) > 0.05


def test_mann_whitney_degenerate_cases():
    assert mann_whitney_p([2.0] * 5, [2.0] * 7) == 1.0
    assert math.isnan(mann_whitney_p([1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(mann_whitney_p([], []))


# --- bootstrap ---------------------------------------------------------------------------

def test_bootstrap_ci_covers_planted_five_percent():
    rng = np.random.default_rng(42)
    a = _lognormal(rng, 1.05, 400)      # baseline 5% slower -> delta = +5%
    b = _lognormal(rng, 1.00, 400)
    low, high = bootstrap_delta_ci(a, b, seed=7)
    assert low < 5.0 < high
    assert low > 0.0
    assert high - low < 2.0


def test_bootstrap_ci_identical_distributions_includes_zero():
    rng = np.random.default_rng(5)
    a = _lognormal(rng, 1.0, 300)
    b = _lognormal(rng, 1.0, 300)
    low, high = bootstrap_delta_ci(a, b, seed=0)
    assert low < 0.0 < high


def test_bootstrap_is_deterministic_per_seed():
    rng = np.random.default_rng(1)
    a, b = _lognormal(rng, 1.0, 50), _lognormal(rng, 1.02, 50)
    assert bootstrap_delta_ci(a, b, seed=11) == bootstrap_delta_ci(a, b, seed=11)
    assert bootstrap_delta_ci(a, b, seed=11) != bootstrap_delta_ci(a, b, seed=12)


def test_bootstrap_tiny_samples_give_nan():
    low, high = bootstrap_delta_ci([1.0], [1.0, 1.1])
    assert math.isnan(low) and math.isnan(high)


# --- per-shape stats and summary ---------------------------------------------------------

def _pairs():
    rng = np.random.default_rng(9)
    pairs = []
    for median_a, median_b in [(1.10, 1.00), (1.00, 1.10), (1.00, 1.00)]:
        a = _lognormal(rng, median_a, 200)
        b = _lognormal(rng, median_b, 200)
        pairs.append((a, b, median_a, median_b))
    pairs.append(([1.0], [1.0], 1.0, 1.0))                   # too few samples
    return pairs


def test_shape_stats_uses_given_medians_and_holm():
    stats = shape_stats(_pairs(), seed=0)
    assert [round(s.delta_pct, 6) for s in stats] == [10.0, round(-100 / 11, 6), 0.0, 0.0]
    assert [s.significant for s in stats] == [True, True, False, False]
    assert stats[0].ci_low_pct < 10.0 < stats[0].ci_high_pct
    assert math.isnan(stats[3].p_value) and math.isnan(stats[3].ci_low_pct)
    assert shape_stats(_pairs(), seed=0) == stats          # deterministic


def test_summarize_counts_and_geomean():
    stats = [
        ShapeStat(25.0, 20.0, 30.0, 0.001, True),      # ratio 1.25, faster
        ShapeStat(-20.0, -25.0, -15.0, 0.001, True),   # ratio 0.8, slower
        ShapeStat(3.0, -1.0, 7.0, 0.30, False),        # unchanged
        ShapeStat(8.0, 1.0, 15.0, 0.02, False),        # big but not significant -> unchanged
    ]
    s = summarize(stats)
    assert s["n"] == 4
    assert (s["faster"], s["slower"], s["unchanged"]) == (1, 1, 2)
    assert s["delta_min_pct"] == -20.0 and s["delta_max_pct"] == 25.0
    assert s["delta_median_pct"] == pytest.approx(5.5)
    assert s["geomean_speedup"] == pytest.approx((1.25 * 0.8 * 1.03 * 1.08) ** 0.25)


def test_summarize_explicit_ratios_and_empty():
    stats = [ShapeStat(0.0, math.nan, math.nan, math.nan, False)] * 2
    assert summarize(stats, ratios=[2.0, 0.5])["geomean_speedup"] == pytest.approx(1.0)
    empty = summarize([])
    assert empty["n"] == 0 and math.isnan(empty["geomean_speedup"])
    assert (empty["faster"], empty["slower"], empty["unchanged"]) == (0, 0, 0)
    assert geomean([4.0, 1.0, math.nan, -1.0]) == pytest.approx(2.0)


# --- rounds ------------------------------------------------------------------------------

def test_round_stats_sign_stability():
    per_round = [
        [5.0, -2.0, 3.0, 0.0],
        [2.0, -1.0, -4.0, -1.0],
        [8.0, 0.0, 1.0, 0.0],
    ]
    out = round_stats(per_round)
    assert [r["sign_stable"] for r in out] == [True, True, False, True]
    assert out[0] == {"median_delta_pct": 5.0, "min_delta_pct": 2.0, "max_delta_pct": 8.0,
                      "sign_stable": True, "rounds": 3}
    assert out[2]["min_delta_pct"] == -4.0 and out[2]["max_delta_pct"] == 3.0


def test_round_stats_zero_is_not_positive_and_nan_is_unstable():
    assert round_stats([[0.0], [1.0]])[0]["sign_stable"] is False
    assert round_stats([[1.0], [math.nan]])[0]["sign_stable"] is False
    assert round_stats([]) == []
    with pytest.raises(ValueError):
        round_stats([[1.0, 2.0], [1.0]])


def test_side_spread():
    assert side_spread([1.0, 1.1, 1.05]) == pytest.approx(10.0)
    assert side_spread([2.0]) == 0.0
    assert math.isnan(side_spread([]))


@pytest.mark.parametrize("df, critical", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764),
                                          (9, 2.2622), (30, 2.0423)])
def test_t_critical_values_match_the_table(df, critical):
    assert t_critical(df) == pytest.approx(critical, abs=1e-4)
    assert t_two_sided_p(critical, df) == pytest.approx(0.05, abs=1e-4)   # table: 4 decimals


def test_t_p_values_known_answers():
    assert t_two_sided_p(2.0, 1) == pytest.approx(1 - 2 * math.atan(2.0) / math.pi)   # Cauchy
    assert t_two_sided_p(0.0, 5) == 1.0
    assert t_two_sided_p(2.0, 30) == pytest.approx(0.0546, abs=1e-4)
    assert t_two_sided_p(1e9, 3) < 1e-12


def test_rounds_interval_uses_the_spread_between_rounds():
    lo, hi, p = rounds_interval([-35.1, -34.8, -35.3])           # a real change, every round
    assert hi < 0 and lo > -36 and p < 1e-4
    lo, hi, p = rounds_interval([-1.965, 0.636, -1.1, -0.5, 0.2])  # A/A: process-to-process
    assert lo < 0 < hi and p > 0.2
    assert math.isnan(rounds_interval([1.0])[2])
    assert rounds_interval([0.5, 0.5, 0.5]) == (0.5, 0.5, 0.0)


def test_direction_of_a_significant_change_comes_from_its_interval():
    """Rounds split 5 x -0.1% and 4 x +3%: the median delta is negative, the mean (which the
    t-test is about) positive. The verdict must follow the test, not the median's sign."""
    deltas = [-0.1] * 5 + [3.0] * 4
    low, high, p = rounds_interval(deltas)
    assert low > 0 and p < 0.05
    stat = ShapeStat(delta_pct=float(np.median(deltas)), ci_low_pct=low, ci_high_pct=high,
                     p_value=p, significant=True)
    assert stat.delta_pct < 0 and direction(stat) == 1
    summary = summarize([stat])
    assert summary["faster"] == 1 and summary["slower"] == 0
    straddling = ShapeStat(delta_pct=-2.0, ci_low_pct=-3.0, ci_high_pct=0.5, p_value=0.01,
                           significant=True)
    assert direction(straddling) == 0 and summarize([straddling])["unchanged"] == 1


# --- coverage: the intervals say 95% and mean it ---------------------------------------------
# Each interval is computed on many synthetic shapes whose true ratio is known; a 95% interval
# must contain the truth in 93-97% of them (1,000 seeded trials: the binomial standard error
# is 0.7 points, so a 90% interval, or Student's t replaced by 1.96, falls outside).

TRUE_RATIO = 1.05                       # A is 5% slower than B: delta +5%
TRUE_DELTA = (TRUE_RATIO - 1) * 100


def test_bootstrap_interval_covers_the_true_ratio_95_percent_of_the_time():
    """shape_stats at its default level (the function compare_runs uses for one round), with
    a smaller resample count to stay fast: 400 resamples of 100 samples per side."""
    rng = np.random.default_rng(20261129)
    trials, n = 1000, 100
    b = rng.lognormal(0.0, 0.05, (trials, n))
    a = TRUE_RATIO * rng.lognormal(0.0, 0.05, (trials, n))
    pairs = [(a[i], b[i], float(np.median(a[i])), float(np.median(b[i]))) for i in range(trials)]
    found = shape_stats(pairs, n_boot=400)
    covered = np.mean([s.ci_low_pct <= TRUE_DELTA <= s.ci_high_pct for s in found])
    assert 0.93 <= covered <= 0.97, covered


@pytest.mark.parametrize("rounds", [3, 5])
def test_rounds_interval_covers_the_true_ratio_95_percent_of_the_time(rounds):
    """Through compare_runs: per round, A and B latencies with 1% process-to-process noise
    around the known ratio; each shape's interval is Student's t over its per-round deltas."""
    from harness.ab.compare import compare_runs
    from harness.measure.measurement import Measurement
    from harness.store.reader import StoredRun
    from harness.store.results import SUCCESS, Row

    rng = np.random.default_rng(rounds)
    shapes = 1000
    noise = np.exp(rng.normal(0.0, 0.01, (rounds, 2, shapes)))

    def run(side, latencies):
        rows = [Row(op="x", dtype="float32", shape=None, shape_detail=str(i), status=SUCCESS,
                    torch=Measurement((1.0,), "graph"), gems=Measurement((float(ms),), "graph"))
                for i, ms in enumerate(latencies)]
        return StoredRun(Path(side), {"op": "x", "status": "complete"}, rows)

    pairs = [(run("a", TRUE_RATIO * noise[r, 0]), run("b", noise[r, 1])) for r in range(rounds)]
    report = compare_runs(pairs)
    assert all(row.interval == "rounds" for row in report.rows) and len(report.rows) == shapes
    covered = np.mean([r.ci_low_pct <= TRUE_DELTA <= r.ci_high_pct for r in report.rows])
    assert 0.93 <= covered <= 0.97, covered


@pytest.mark.parametrize("deltas, critical", [([1.0, 2.0, 3.0], 4.302653),
                                              ([1.0, 2.0, 3.0, 4.0, 5.0], 2.776445)])
def test_rounds_interval_half_width_uses_students_t(deltas, critical):
    """3 rounds: df 2, t = 4.302653; 5 rounds: df 4, t = 2.776445 (not the normal 1.96), on
    the log of each round's ratio."""
    low, high, _ = rounds_interval(deltas)
    logs = np.log1p(np.asarray(deltas) / 100.0)
    half = critical * float(np.std(logs, ddof=1)) / math.sqrt(len(deltas))
    assert (np.log1p(high / 100) - np.log1p(low / 100)) / 2 == pytest.approx(half, rel=1e-6)
    assert (np.log1p(high / 100) + np.log1p(low / 100)) / 2 == pytest.approx(float(logs.mean()))


def test_a_large_change_is_significant_however_its_rounds_scatter_in_percent():
    """B 10-35x faster in three rounds: in percent the deltas scatter by thousands (a t
    interval on them would reach below 0), in ratio they agree — a real change."""
    low, high, p = rounds_interval([900.0, 1900.0, 3400.0])
    assert 0 < low < 900 and high > 3400 and p < 0.05
    mean, sd = float(np.mean([900.0, 1900.0, 3400.0])), float(np.std([900.0, 1900.0, 3400.0],
                                                                     ddof=1))
    assert mean - 4.302653 * sd / math.sqrt(3) < 0       # what the percent scale would say
    assert math.isnan(rounds_interval([-100.0, 5.0])[0])  # no ratio: no interval
