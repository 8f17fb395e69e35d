"""The analysis of the device experiment tests/device/run_state.py on synthetic medians: the
spread of a list of medians, the spread inside processes, and the table's arms."""
import importlib.util
import math

import numpy as np
import pytest

from conftest import TESTS

spec = importlib.util.spec_from_file_location("run_state", TESTS / "device" / "run_state.py")
run_state = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_state)


def test_spread_is_relative_and_needs_two_medians():
    assert run_state.log_sd([0.1]) is None
    assert run_state.log_sd([1.0, 1.0, 1.0]) == 0
    # the same relative spread at any scale
    assert run_state.log_sd([0.010, 0.0101]) == pytest.approx(run_state.log_sd([5.0, 5.05]))
    assert run_state.log_sd([1.0, math.e ** 0.01]) == pytest.approx(100 * 0.01 / math.sqrt(2))


def test_the_spread_inside_processes_ignores_the_offsets_between_them():
    within = [[1.0, 1.01], [2.0, 2.02], [4.0, 4.04]]     # each process: 1 % apart
    assert run_state.pooled_sd(within) == pytest.approx(run_state.log_sd([1.0, 1.01]))
    assert run_state.log_sd([p[0] for p in within]) > 50        # across processes: far more
    assert run_state.pooled_sd([[1.0]]) is None


def test_the_table_shows_the_arms_a_document_holds():
    case = {"latency_ms": 0.05, "calls": 20, "fresh": [[0.05, 0.0501], [0.051, 0.0511]],
            "fresh_again": [[0.05], [0.05]]}
    plain = {"cases": {"x:1": dict(case, arms={a: [0.05, 0.0502] for a in run_state.ARMS})}}
    scrambled = {"cases": {"x:1": dict(case, arms={a: [0.05, 0.0502]
                                                   for a in run_state.SCRAMBLE_ARMS})}}
    assert "reload" in run_state.summary(plain)[0]
    head = run_state.summary(scrambled)[0]
    assert "scrambled" in head and "reload" not in head
    assert "  x:1 fresh: 50.00 51.00" in run_state.summary(plain)   # the first window each


def test_twins_spread_between_and_across_pairs_and_a_failed_twin_pairs_with_nothing():
    runs = [[0.0227], [0.02271], [0.0229], [0.02289], [], [0.0228], [0.0226], [0.02261]]
    across, pairs, between = run_state.twin_spread(runs)
    assert pairs == 3                              # the pair with a failed twin left out
    assert between < 0.05 < across
    means = [math.sqrt(a * b) for a, b in ((0.0227, 0.02271), (0.0229, 0.02289),
                                           (0.0226, 0.02261))]
    assert across == pytest.approx(float(np.std(100 * np.log(means), ddof=1)))
    assert run_state.twin_spread([[0.02], []]) == (None, 0, None)
