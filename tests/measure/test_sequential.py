"""The two-stage rounds design (`zlh ab --rounds auto`): rounds needed, its interval on the
pilot's spread, what a shape's rounds could see, and its false-positive rate by simulation."""
import math

import numpy as np
import pytest

from harness.measure import sequential, stats, student_t


def test_rounds_needed_follows_the_pilot_t():
    # t(0.975, 5) = 2.571: sd 0.15 % at a target of 0.15 % needs ceil(2.571^2) = 7 rounds
    assert sequential.rounds_needed(0.15, 6, 0.15) == 7
    assert sequential.rounds_needed(0.01, 6, 0.15) == 6          # never fewer than the pilot
    assert sequential.rounds_needed(None, 6, 0.15) == 6
    # the op takes the widest shape, capped
    quiet, noisy = [0.01, -0.01] * 3, [1.0, -1.0] * 3
    assert sequential.planned_rounds([quiet], 6, 0.15, 30) == 6
    assert sequential.planned_rounds([quiet, noisy], 6, 0.15, 30) == 30
    assert sequential.planned_rounds([quiet, [0.2, -0.2] * 3], 6, 0.5, 30) == 6


def test_two_stage_interval_uses_the_pilot_spread_and_its_degrees_of_freedom():
    pilot = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0]
    later = [1.05, 0.95, 1.0, 1.0]                 # later rounds alike: the pilot's interval
    low, high, p = sequential.two_stage_interval(pilot + later, 6)
    logs = np.log1p(np.array(pilot + later) / 100)
    sd = np.log1p(np.array(pilot) / 100).std(ddof=1)
    se = sd / math.sqrt(10)
    assert p == pytest.approx(student_t.t_two_sided_p(logs.mean() / se, 5))
    assert math.log1p(high / 100) - logs.mean() == pytest.approx(student_t.t_critical(5) * se)
    assert low > 0                                  # a 1 % change, clearly seen
    out = sequential.shape_rounds(pilot + later, 6, 0.15)
    assert out["rounds"] == 10 and out["df"] == 5
    assert out["sd_pct"] == pytest.approx(100 * sd)
    assert out["sd_all_pct"] == pytest.approx(100 * logs.std(ddof=1))
    assert out["half_width_pct"] == pytest.approx(100 * student_t.t_critical(5) * se, rel=1e-3)
    assert out["detectable_pct"] > out["half_width_pct"]
    assert out["needed"] == sequential.rounds_needed(out["sd_pct"], 6, 0.15)
    fixed = sequential.shape_rounds(pilot, None, None)       # fixed rounds: N - 1 df
    assert fixed["df"] == 5 and "needed" not in fixed


def test_rounds_wider_than_their_pilot_widen_the_interval():
    """The guard: a pilot quieter than the rounds after it cannot narrow the interval below
    the ordinary t interval of all the rounds (the H200 A/A that called mm 2048² at -0.055 %
    significant on a pilot spread of 0.047 %), and the p is the larger of the two tests'."""
    deltas = [-0.128, -0.035, -0.113, -0.064, -0.049, -0.031, -0.157, -0.110,   # the pilot
              -0.217, 0.442, 0.078, -0.096, -0.336, -0.149, 0.098, -0.006]
    low, high, p = sequential.two_stage_interval(deltas, 8)
    every = stats.rounds_interval(deltas)
    assert (low, high, p) == pytest.approx(every)
    assert low < 0 < high and p > 0.05
    (stat,) = sequential.two_stage_stats([deltas], 8)
    assert not stat.significant
    out = sequential.shape_rounds(deltas, 8, 0.1)
    assert out["sd_all_pct"] > 3 * out["sd_pct"]
    logs = np.log1p(np.array(deltas) / 100)
    assert out["half_width_pct"] == pytest.approx(
        100 * student_t.t_critical(15) * logs.std(ddof=1) / 4, rel=1e-3)
    pilot_only = sequential.half_width_pct(out["sd_pct"], 16, 7)
    assert out["half_width_pct"] > 2 * pilot_only
    assert out["detectable_pct"] > out["half_width_pct"]


def test_a_shape_without_a_pilot_spread_is_neither_tested_nor_widened():
    """Fewer than two usable pilot rounds: the shape is not tested, and what its rounds could
    see stays unknown rather than taken from the later rounds alone."""
    deltas = [math.nan] * 5 + [0.1, 0.2, 0.3]
    assert all(math.isnan(v) for v in sequential.two_stage_interval(deltas, 6))
    out = sequential.shape_rounds(deltas, 6, 0.15)
    assert out["sd_pct"] is None and out["sd_all_pct"] == pytest.approx(0.1, rel=1e-2)
    assert out["half_width_pct"] is None and out["detectable_pct"] is None


@pytest.mark.parametrize("sd_pct", [0.05, 0.2, 0.6])      # stops at the pilot, midway, at the cap
@pytest.mark.parametrize("shapes", [1, 4])
def test_two_stage_false_positive_rate_is_nominal(sd_pct, shapes):
    """10,000 simulated A/As per case: the design alone calls significant a share in the
    binomial 99 % interval around alpha = 0.05; with the guard, as zlh decides, the share is
    no higher, and the same where the pilot alone stops the rounds."""
    bare = sequential.false_positive_rate(10_000, pilot=6, max_rounds=30, target_pct=0.15,
                                          sd_pct=sd_pct, shapes=shapes, seed=11,
                                          rule="pilot-only")
    out = sequential.false_positive_rate(10_000, pilot=6, max_rounds=30, target_pct=0.15,
                                         sd_pct=sd_pct, shapes=shapes, seed=11)
    low, high = sequential.binomial_interval(0.05, out["tests"])
    assert low <= bare["rate"] <= high, bare
    if bare["mean_rounds"] == 6:                 # no round past the pilot: one interval
        assert out["rate"] == bare["rate"]
    else:                                        # more rounds: at most alpha, not far below
        assert 0.02 <= out["rate"] <= high, out
    assert 6 <= out["mean_rounds"] <= 30


def test_the_guard_keeps_the_rate_when_later_rounds_spread_more():
    """Rounds after the pilot that spread three times as much (a card that heats), an op run
    to the cap by its noisy shape: the design alone calls far more than alpha significant, the
    guard stays within alpha."""
    common = dict(sims=10_000, pilot=8, max_rounds=16, target_pct=0.1, sd_pct=[0.05, 1.0],
                  shapes=2, seed=3, later_scale=3.0)
    bare = sequential.false_positive_rate(rule="pilot-only", **common)
    out = sequential.false_positive_rate(**common)
    high = sequential.binomial_interval(0.05, out["tests"])[1]
    assert bare["mean_rounds"] == out["mean_rounds"] == 16
    assert bare["rate"] > 3 * high, bare
    assert out["rate"] <= high, out


def test_the_simulated_decisions_are_holm_on_the_larger_p():
    """The vectorised rejections (`_reject`: the guard's two conditions per Holm level) are
    the decisions zlh makes: Holm (stats.holm) over each op's shapes on p = max(two-stage p,
    all-rounds p), and each shape at alpha alone without the family."""
    rng = np.random.default_rng(8)
    sims, shapes, pilot, cap = 300, 5, 6, 12
    x = rng.standard_normal((sims, cap, shapes)) * [0.05, 0.1, 0.2, 0.4, 0.8]
    x[:, pilot:, :] *= 2.0
    x += 0.15
    stop = rng.integers(pilot, cap + 1, size=sims)
    t_pilot, t_all, p = np.empty((sims, shapes)), np.empty((sims, shapes)), []
    for i in range(sims):
        n = int(stop[i])
        ran = x[i, :n, :]
        m, sp, sa = ran.mean(axis=0), x[i, :pilot, :].std(axis=0, ddof=1), ran.std(axis=0,
                                                                                   ddof=1)
        t_pilot[i], t_all[i] = np.abs(m) * np.sqrt(n) / sp, np.abs(m) * np.sqrt(n) / sa
        p.append([max(student_t.t_two_sided_p(a, pilot - 1), student_t.t_two_sided_p(b, n - 1))
                  for a, b in zip(t_pilot[i], t_all[i])])
    family = sequential._reject(t_pilot, t_all, stop, pilot, 0.05, family=True)
    alone = sequential._reject(t_pilot, t_all, stop, pilot, 0.05, family=False)
    assert family.tolist() == [stats.holm(row) for row in p]
    assert alone.tolist() == [[q <= 0.05 for q in row] for row in p]
    assert 0 < family.sum() < alone.sum() < family.size      # both kinds of decision met


def test_stopping_on_the_usual_t_interval_inflates_the_rate():
    """Why the design: stopping when the ordinary t interval is narrow enough, and testing with
    the spread of all rounds, calls more than alpha significant."""
    naive = sequential.false_positive_rate(10_000, pilot=6, max_rounds=30, target_pct=0.15,
                                           sd_pct=0.2, seed=11, rule="naive")
    assert naive["rate"] > sequential.binomial_interval(0.05, naive["tests"])[1], naive


def test_a_real_change_is_found_by_the_stopped_design():
    """The power side: a 0.3 % change with sd 0.15 % and the default target is found in
    (nearly) every simulated comparison with the right sign."""
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(200):
        deltas = list(0.3 + 0.15 * rng.standard_normal(30))
        n = sequential.planned_rounds([deltas], 6, sequential.TARGET_PCT, 30)
        (stat,) = sequential.two_stage_stats([deltas[:n]], 6)
        found += stat.significant and stats.direction(stat) > 0
    assert found >= 190


def test_a_shapes_delta_lies_inside_its_own_interval_after_an_outlying_round():
    """The interval is built around the mean of the rounds' log ratios: the delta reported
    beside it is that estimate, not the median, which one outlying round after the pilot
    can push outside the interval."""
    deltas = [-31.0, -31.2, -30.9, -31.1, -31.0, -30.8, -40.0, -39.5]   # pilot 6, then two more
    (stat,) = sequential.two_stage_stats([deltas], pilot=6)
    geomean = float(np.expm1(np.log1p(np.array(deltas) / 100).mean()) * 100)
    assert stat.delta_pct == pytest.approx(geomean)
    assert abs(stat.delta_pct - float(np.median(deltas))) > 1.0
    assert stat.ci_low_pct <= stat.delta_pct <= stat.ci_high_pct, stat
    low, high, _ = sequential._pilot_interval(deltas, 6, 0.05)   # the design's own interval
    assert low <= stat.delta_pct <= high
    assert not low <= float(np.median(deltas)) <= high           # what the median showed


def test_holm_over_an_ops_shapes_keeps_the_family_rate():
    """With Holm across 20 shapes (as zlh decides), the simulated ops call a shape
    significant at most alpha / 20 of the time per test, within simulation."""
    out = sequential.false_positive_rate(10_000, 8, 24, 0.1, 0.2, shapes=20, seed=5,
                                         family=True)
    assert 0 < out["rate"] <= sequential.binomial_interval(0.05 / 20, out["tests"])[1], out


def test_a_longer_pilot_finds_more_where_the_rounds_reach_the_cap():
    """Rounds that run to the cap anyway cost no more with a longer pilot, and its degrees of
    freedom find more (spreads like the H200 plants', Holm over 20 shapes, planted 0.3 %)."""
    sds = [0.05] * 6 + [0.1] * 6 + [0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 1.0]
    found = {pilot: sequential.false_positive_rate(
        10_000, pilot, 24, 0.1, sds, shapes=20, seed=5, change_pct=0.3, family=True)
        for pilot in (8, 16)}
    assert found[8]["mean_rounds"] == found[16]["mean_rounds"] == 24
    assert found[16]["rate"] > found[8]["rate"] + 0.03, found
