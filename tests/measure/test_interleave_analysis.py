"""The analysis of the device experiment tests/device/interleave_ab.py on synthetic rounds: the
order of turns, the sign of a round's delta, what an arm's rounds show (found, wrong sign, the
rounds a spread needs) and the table."""
import importlib.util

import numpy as np
import pytest

from conftest import TESTS

spec = importlib.util.spec_from_file_location("interleave_ab", TESTS / "device" /
                                              "interleave_ab.py")
interleave_ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(interleave_ab)


def test_turns_alternate_in_pairs_so_a_drift_falls_on_both_sides():
    order = interleave_ab.turns(8)
    assert "".join(order) == "ABBAABBA"
    assert order.count("A") == order.count("B")


def test_a_slower_side_b_reads_negative():
    assert interleave_ab.round_delta([1.0, 1.0, 5.0], [1.003, 1.003, 0.1]) < 0


def deltas(rng, mean, sd, k):
    return list(mean + sd * rng.standard_normal(k))


def test_a_calm_arm_finds_the_plant_and_a_noisy_one_does_not():
    rng = np.random.default_rng(3)
    calm = interleave_ab.arm_summary(deltas(rng, -0.3, 0.05, 16), 0.3)
    noisy = interleave_ab.arm_summary(deltas(rng, -0.3, 2.0, 16), 0.3)
    assert calm["found"] and not calm["wrong_sign"] and calm["rounds_needed"] <= 4
    assert not noisy["found"] and (noisy["rounds_needed"] or 10**6) > 100
    assert noisy["detectable_pct"] > 1.0 > calm["detectable_pct"]
    backwards = interleave_ab.arm_summary(deltas(rng, +0.3, 0.05, 16), 0.3)
    assert backwards["wrong_sign"] and not backwards["found"]


def test_the_table_counts_what_each_arm_found():
    rng = np.random.default_rng(4)
    doc = {"arms": ["block", "interleaved"], "plant_pct": 0.3, "shapes": {
        f"mm:{n}": {"block": interleave_ab.arm_summary(deltas(rng, -0.3, 2.0, 12), 0.3),
                    "interleaved": interleave_ab.arm_summary(deltas(rng, -0.3, 0.05, 12), 0.3)}
        for n in (2048, 4096)}}
    lines = interleave_ab.table(doc)
    assert lines[-2:] == ["block: planted 0.3 % found on 0 of 2 shapes",
                          "interleaved: planted 0.3 % found on 2 of 2 shapes"]


def test_the_paired_delta_cancels_a_drift_the_ratio_of_medians_does_not():
    drift = np.linspace(1.0, 1.2, 200)              # the card slows by 20 % over the window
    a = list(drift[0::2])                           # turns: neighbours share the drift
    b = list(drift[1::2] * 1.003)                   # B planted 0.3 % slower
    assert interleave_ab.paired_delta(a, b) == pytest.approx(-0.3, abs=0.1)
    assert interleave_ab.round_delta(a[:50], b[50:]) < -5     # halves apart: the drift
