import math

import numpy as np
import pytest

from harness.measure.measurement import Measurement
from harness.measure.sample_stats import relative_median_error
from harness.measure.stopping import StoppingRule


def test_measurement_statistics_from_raw_samples():
    m = Measurement((1.0, 2.0, 3.0, 4.0, 100.0), "event")
    assert m.median == 3.0
    assert m.n == 5
    assert m.min == 1.0
    assert m.iqr == pytest.approx(2.0)            # q1=2, q3=4
    assert m.rel_iqr == pytest.approx(2.0 / 3.0)


def test_repeat_median_is_median_of_repeat_medians():
    m = Measurement((1.0,) * 9, "event", repeats=(3.0, 1.0, 2.0, 9.0, 5.0))
    assert m.median == 3.0
    # the error of that median comes from the repeats, not from the (constant) samples
    assert m.rel_error == pytest.approx(relative_median_error([3.0, 1.0, 2.0, 9.0, 5.0]))
    assert m.rel_error > 0.1


def test_relative_median_error_formula():
    samples = [10.0, 10.0, 11.0, 9.0]
    mad = 0.5   # |x - 10| = 0, 0, 1, 1 -> median 0.5
    expected = 1.2533 * 1.4826 * mad / math.sqrt(4) / 10.0
    assert relative_median_error(samples) == pytest.approx(expected)
    assert relative_median_error([1.0]) == math.inf


def test_round_trip_keeps_samples():
    m = Measurement((0.1234567, 0.2, 0.3), "graph", calls_per_sample=7, warmup_calls=3)
    d = m.to_dict()
    assert d["samples_ms"][0] == 0.123457        # six significant digits
    back = Measurement.from_dict(d)
    assert back.calls_per_sample == 7 and back.n == 3 and back.timer == "graph"


def test_empty_measurement_rejected():
    with pytest.raises(ValueError):
        Measurement((), "host")


def test_stopping_needs_both_minimums():
    rule = StoppingRule(min_samples=10, min_time_ms=5, max_time_ms=100, target_rel_err=0.5)
    steady = [1.0] * 10
    assert not rule.should_stop(steady[:9], 50)     # too few samples
    assert not rule.should_stop(steady, 1)          # too little time
    assert rule.should_stop(steady, 10)             # converged


def test_stopping_waits_for_precision_until_cap():
    rule = StoppingRule(min_samples=5, min_time_ms=0, max_time_ms=100, max_samples=1000,
                        target_rel_err=0.001)
    noisy = list(np.random.default_rng(0).uniform(1, 2, 20))
    assert not rule.should_stop(noisy, 10)
    assert rule.should_stop(noisy, 100)              # time cap
    assert rule.should_stop([1.0] * 1000, 1)         # sample cap


def test_stopping_rule_validates():
    with pytest.raises(ValueError):
        StoppingRule(min_samples=10, max_samples=5)
    with pytest.raises(ValueError):
        StoppingRule(min_time_ms=10, max_time_ms=5)
