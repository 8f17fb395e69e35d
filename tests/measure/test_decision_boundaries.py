"""The decision rules at their edges: a significant test whose interval has no direction is
not a decision, the sample cap is 5000, and the error target and the slower gate stop or trip
exactly at their limits as documented (<= target stops; > limit trips, == limit does not)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.ab import gate
from harness.ab.report import ABReport, ABRow
from harness.measure import sample_stats, stats, student_t
from harness.measure.stopping import StoppingRule


def test_a_significant_shape_without_direction_is_not_decided():
    straddles = stats.ShapeStat(delta_pct=-3.0, ci_low_pct=-6.0, ci_high_pct=0.5,
                                p_value=0.01, significant=True)
    assert stats.direction(straddles) == 0
    assert not stats.decided(straddles).significant
    summary = stats.summarize([stats.decided(straddles)])
    assert (summary["slower"], summary["faster"], summary["unchanged"]) == (0, 0, 1)
    clear = stats.ShapeStat(-3.0, -6.0, -0.5, 0.01, True)
    assert stats.decided(clear).significant                     # the decided one stays


def test_the_sample_cap_is_5000_by_default():
    rule = StoppingRule()
    noisy = list(np.random.default_rng(0).lognormal(0.0, 0.5, 5000))
    # well inside the time budget and far from the error target: only the cap stops it
    assert sample_stats.relative_median_error(noisy[:4999]) > rule.target_rel_err
    assert not rule.should_stop(noisy[:500], elapsed_ms=500.0)
    assert not rule.should_stop(noisy[:4999], elapsed_ms=500.0)
    assert rule.should_stop(noisy, elapsed_ms=500.0)
    assert rule.max_samples == 5000


def test_the_error_target_stops_exactly_at_its_value():
    samples = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.03, 0.97, 1.0, 1.01]
    err = sample_stats.relative_median_error(samples)
    at = StoppingRule(min_samples=2, min_time_ms=0.0, max_time_ms=1e9, target_rel_err=err)
    below = StoppingRule(min_samples=2, min_time_ms=0.0, max_time_ms=1e9,
                         target_rel_err=math.nextafter(err, 0.0))
    assert at.should_stop(samples, elapsed_ms=1.0)              # error == target: stop
    assert not below.should_stop(samples, elapsed_ms=1.0)       # a hair above the target
    # the time cap and the minimums at their edges
    cap = StoppingRule(min_samples=2, min_time_ms=0.0, max_time_ms=10.0, target_rel_err=1e-9)
    assert cap.should_stop(samples, elapsed_ms=10.0)
    assert not cap.should_stop(samples, elapsed_ms=math.nextafter(10.0, 0.0))
    least = StoppingRule(min_samples=10, min_time_ms=0.0, max_time_ms=1e9, target_rel_err=1.0)
    assert least.should_stop(samples, 1.0) and not least.should_stop(samples[:9], 1.0)


def _report(delta):
    slower = gate.slower_pct(delta)
    row = ABRow(variant="", dtype="float32", shape_detail="8", occurrence=0, a_ms=1.0,
                b_ms=1.0 + slower / 100.0, delta_pct=delta, ci_low_pct=delta - 1.0,
                ci_high_pct=delta + 0.5, significant=True, direction=-1)
    return ABReport(op="x", caliber={}, sides={"A": {}, "B": {}}, rows=[row])


def test_the_slower_gate_trips_beyond_its_limit_not_at_it():
    limit = gate.Gate.parse("slower:25%")
    at = -20.0                                    # A / B = 0.8: B exactly 25 % slower
    assert gate.slower_pct(at) == pytest.approx(25.0)
    assert gate.violations([limit], [_report(at)]) == []
    assert len(gate.violations([limit], [_report(-20.01)])) == 1
    assert gate.violations([gate.Gate.parse("slower:25.02%")], [_report(-20.01)]) == []


def _geomean_report(speedup, low, high):
    return ABReport(op="x", caliber={}, sides={"A": {}, "B": {}}, rows=[],
                    summary={"n": 1, "geomean_speedup": speedup, "geomean_ci_low": low,
                             "geomean_ci_high": high, "geomean_interval": "rounds"})


def test_the_geomean_gate_trips_only_when_the_whole_interval_is_beyond_its_limit():
    limit = gate.parse_gates(["geomean:25%"])
    # the A/A of tests/ci_example.sh on a noisy host: 0.744, but the interval reaches 1
    assert gate.violations(limit, [_geomean_report(0.744, 0.51, 1.09)]) == []
    # the upper bound exactly at the limit (B 25 % slower at best) does not trip ...
    assert gate.violations(limit, [_geomean_report(0.7, 0.6, 0.8)]) == []
    # ... a hair beyond it does
    (line,) = gate.violations(limit, [_geomean_report(0.7, 0.6, 0.7999)])
    assert line.startswith("REGRESSION gate=geomean limit_pct=25 op=x geomean_speedup=0.7000")
    assert "ci_low=0.6000 ci_high=0.7999" in line
    # a report without an interval is judged on its point
    assert len(gate.violations(limit, [_geomean_report(0.7, None, None)])) == 1
    assert gate.violations(limit, [_geomean_report(0.8, None, None)]) == []


def test_the_geomean_interval_over_rounds_is_t_over_per_round_log_geomeans():
    per_shape = [[-10.0, 5.0, -20.0], [2.0, -4.0, 8.0]]          # [shape][round]
    logs = np.log1p(np.array(per_shape) / 100.0).mean(axis=0)
    half = student_t.t_critical(2) * logs.std(ddof=1) / math.sqrt(3)
    low, high = stats.geomean_rounds_interval(per_shape)
    assert (low, high) == pytest.approx((math.exp(logs.mean() - half),
                                         math.exp(logs.mean() + half)))
    # one shape: the same interval as that shape's own (as a speedup, not a delta)
    lo, hi, _ = stats.rounds_interval(per_shape[0])
    assert stats.geomean_rounds_interval(per_shape[:1]) == pytest.approx(
        (1 + lo / 100, 1 + hi / 100))
    assert all(math.isnan(v) for v in stats.geomean_rounds_interval([[1.0]]))


def test_the_geomean_interval_of_one_round_is_a_bootstrap_of_the_samples():
    rng = np.random.default_rng(3)
    slow = [(rng.normal(1.0, 0.02, 40), rng.normal(2.0, 0.04, 40)) for _ in range(3)]
    low, high = stats.geomean_samples_interval(slow)
    assert 0.45 < low < 0.5 < high < 0.55
    same = [(rng.normal(1.0, 0.02, 40), rng.normal(1.0, 0.02, 40)) for _ in range(3)]
    low, high = stats.geomean_samples_interval(same)
    assert low < 1.0 < high
    assert all(math.isnan(v) for v in stats.geomean_samples_interval([([1.0], [1.0])]))
