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


def test_twins_that_land_alike_differ_far_less_than_a_process_spreads_and_an_offset_counts():
    rng = np.random.default_rng(7)
    level = rng.normal(0, 0.004, 30)                 # each pair's placement, both twins'
    alike = [[0.023 * math.exp(x + rng.normal(0, 3e-4))] for x in level for _ in "ab"]
    got = run_state.twin_spread(alike)
    assert got["pairs"] == 30 and got["process_sd"] > 0.25 and got["between"] < 0.06
    assert got["r"] > 0.9
    apart = [[0.023 * math.exp(rng.normal(0, 0.004))] for _ in range(60)]
    got = run_state.twin_spread(apart)                # twins that share nothing
    assert 0.6 < got["between"] / got["process_sd"] < 1.5 and abs(got["r"]) < 0.45
    shifted = [[m[0] * (1.003 if k % 2 else 1.0)] for k, m in enumerate(alike)]
    got = run_state.twin_spread(shifted)              # the second twin 0.3 % slower
    assert got["offset"] == pytest.approx(-0.3, abs=0.05) and got["between"] > 0.2


def test_a_failed_twin_leaves_its_pair_out():
    runs = [[0.0227], [0.02271], [0.0229], [0.02289], [], [0.0228], [0.0226], [0.02261]]
    got = run_state.twin_spread(runs)
    assert got["pairs"] == 3
    d = [100 * math.log(a / b) for a, b in ((0.0227, 0.02271), (0.0229, 0.02289),
                                            (0.0226, 0.02261))]
    assert got["between"] == pytest.approx(math.sqrt(np.mean(np.square(d)) / 2))
    assert run_state.twin_spread([[0.02], [], [0.02], [0.021]]) == {}   # one whole pair


def test_the_table_says_each_kind_of_twins_apart():
    """Bare twins and twins with a spare's context made between them: one line each."""
    case = {"latency_ms": 0.023, "calls": 20, "arms": {},
            "fresh_twin": [[0.0227], [0.02271], [0.0229], [0.02289]],
            "fresh_twin-spare": [[0.0227], [0.0229], [0.0229], [0.0227]]}
    lines = run_state.summary({"cases": {"x:1": case}})
    (bare,) = [ln for ln in lines if ln.startswith("  x:1 twins:")]
    (spare,) = [ln for ln in lines if ln.startswith("  x:1 twin-spares:")]
    assert "2 pairs" in bare and "2 pairs" in spare
    between = [float(ln.split("twins differ by ")[1].split(" %")[0]) for ln in (bare, spare)]
    assert between[0] < 0.05 < between[1]
