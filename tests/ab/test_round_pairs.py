"""A round in turns gives each shape the delta of its neighbour sample pairs, and a shape timed
on level placements the delta of its placement pairs (measure.paired); any other round the
ratio of the two sides' medians (ab.compare)."""
import math
from pathlib import Path

import numpy as np
import pytest

from harness.ab.compare import compare_runs
from harness.ab.render import render_terminal
from harness.measure.measurement import IQM, Measurement
from harness.measure.paired import paired_delta_pct
from harness.measure.stats import delta_pct
from harness.store.reader import StoredRun
from harness.store.results import SUCCESS, Row

TURNS = {"first": "A", "cases": 1, "lost": None}


def drifting_pair(rng, change: float, n: int = 16):
    """Samples of A and B taken in turns on a card whose clock moves by about 3 % from one
    pair to the next (both neighbours share it), B `change` slower, plus 0.05 % noise of
    each sample's own."""
    drift = np.exp(0.03 * rng.standard_normal(n))
    a = drift * np.exp(0.0005 * rng.standard_normal(n))
    b = drift * (1.0 + change) * np.exp(0.0005 * rng.standard_normal(n))
    return a, b


def run(label: str, samples, turns) -> StoredRun:
    info = {"op": "mm", "status": "complete", "caliber": {"timer": "graph"}}
    if turns is not None:
        info["turns"] = turns
    row = Row(op="mm", dtype="bfloat16", shape=None, shape_detail="4096x4096", status=SUCCESS,
              torch=Measurement(tuple(samples), "graph"),
              gems=Measurement(tuple(samples), "graph"))
    return StoredRun(Path(f"/runs/{label}"), info, [row])


def rounds_of(pairs, turns_a=TURNS, turns_b=TURNS):
    return [(run("A", a, turns_a), run("B", b, turns_b)) for a, b in pairs]


def test_the_paired_delta_cancels_a_drift_both_sides_share():
    steps = np.linspace(0.9, 1.1, 25)                  # a drift over the window, both sides
    got = paired_delta_pct(steps * 1.003, steps)
    assert got == pytest.approx(0.3, abs=1e-9)          # the sign of delta_pct: B faster > 0
    assert delta_pct(1.003, 1.0) == pytest.approx(got)
    # the medians of a drifting pair need not face each other: B's window read slower at its
    # middle sample, so the ratio of medians reads the drift, the pairs do not
    a, b = steps * 1.003, steps.copy()
    b[12] = b[13] * 1.0001                              # B's median moves to a later moment
    assert paired_delta_pct(a, b) == pytest.approx(0.3, abs=1e-9)


@pytest.mark.parametrize("a, b", [([1.0, 1.0, 1.0], [1.0, 1.0]),          # did not end together
                                  ([1.0, 1.0], [1.0, 1.0]),               # too few pairs
                                  ([1.0, 0.0, 1.0], [1.0, 1.0, 1.0]),     # not a time
                                  ([1.0, math.nan, 1.0], [1.0, 1.0, 1.0]),
                                  (None, [1.0, 1.0, 1.0])])
def test_samples_that_do_not_pair_leave_the_ratio_of_medians(a, b):
    assert paired_delta_pct(a, b) is None


def test_rounds_in_turns_take_their_deltas_from_the_neighbour_pairs():
    rng = np.random.default_rng(7)
    pairs = [drifting_pair(rng, 0.003) for _ in range(40)]
    turned = compare_runs(rounds_of(pairs)).rows[0].rounds
    medians = compare_runs(rounds_of(pairs, turns_a=None, turns_b=None)).rows[0].rounds
    assert turned["deltas_pct"] == pytest.approx([paired_delta_pct(a, b) for a, b in pairs])
    assert medians["deltas_pct"] == pytest.approx(
        [delta_pct(float(np.median(a)), float(np.median(b))) for a, b in pairs])
    assert (turned["paired_rounds"], medians["paired_rounds"]) == (40, 0)
    assert turned["level_paired_rounds"] == 0
    # the drift cancels in the pairs: each round reads the planted change closely, and their
    # spread is far below the ratio of medians'
    assert np.std(turned["deltas_pct"]) < np.std(medians["deltas_pct"]) / 2
    assert np.mean(turned["deltas_pct"]) == pytest.approx(-0.3, abs=0.01)


def test_a_round_whose_turns_broke_keeps_the_ratio_of_its_medians():
    rng = np.random.default_rng(8)
    pairs = [drifting_pair(rng, 0.0) for _ in range(3)]
    rounds = rounds_of(pairs)
    broken = {"first": "A", "cases": 1, "lost": "the peer ended"}
    rounds[1] = (run("A", pairs[1][0], TURNS), run("B", pairs[1][1], broken))
    report = compare_runs(rounds)
    got = report.rows[0].rounds
    a, b = pairs[1]
    assert got["deltas_pct"][1] == pytest.approx(delta_pct(float(np.median(a)),
                                                           float(np.median(b))))
    assert got["deltas_pct"][0] == pytest.approx(paired_delta_pct(*pairs[0]))
    assert got["paired_rounds"] == 2 and report.summary["rounds_in_turns"] == 2
    assert "2 of 3 rounds in turns" in render_terminal(report)


def test_the_pairs_are_the_neighbours_not_the_sorted_samples():
    """Sample k of A against sample k of B: sorting either side would pair other samples."""
    a, b = [1.0, 3.0, 2.0], [2.0, 1.0, 3.0]          # neighbour ratios 1/2, 3, 2/3
    assert paired_delta_pct(a, b) == pytest.approx((2.0 / 3.0 - 1.0) * 100.0)


def test_a_shape_whose_samples_do_not_pair_keeps_the_ratio_of_its_medians_in_turns():
    rng = np.random.default_rng(9)
    pairs = [drifting_pair(rng, 0.0) for _ in range(3)]
    pairs[2] = (pairs[2][0], pairs[2][1][:-1])          # B ended one sample short
    report = compare_runs(rounds_of(pairs))
    got = report.rows[0].rounds
    a, b = pairs[2]
    assert report.summary["rounds_in_turns"] == 3 and got["paired_rounds"] == 2
    assert got["deltas_pct"][2] == pytest.approx(delta_pct(float(np.median(a)),
                                                           float(np.median(b))))


LEVELS_US = (47.4, 48.0, 48.6, 49.3)      # the levels a placement of one case can land on


def levelled_round(rng, change: float, placements: int = 64, shared: float = 0.4):
    """One round's level placements, A's and B's medians (ms): placement j of both sides lies
    behind spacers of one size, so with probability `shared` it lands on the same level on
    both, else each draws its own; B `change` slower, plus 0.02 % noise of each placement."""
    a = rng.choice(LEVELS_US, placements)
    b = np.where(rng.random(placements) < shared, a, rng.choice(LEVELS_US, placements))
    noise = np.exp(0.0002 * rng.standard_normal((2, placements)))
    return a * noise[0] / 1000.0, b * (1.0 + change) * noise[1] / 1000.0


def levelled_run(label: str, medians, center: str = IQM) -> StoredRun:
    info = {"op": "layer_norm", "status": "complete", "caliber": {"timer": "graph"}}
    gems = Measurement(tuple(np.repeat(medians, 2)), "graph", repeats=tuple(medians),
                       center=center)
    row = Row(op="layer_norm", dtype="bfloat16", shape=None, shape_detail="20x6x65536",
              status=SUCCESS, torch=gems, gems=gems, extra={"level_placements": len(medians)})
    return StoredRun(Path(f"/runs/{label}"), info, [row])


def test_level_placement_rounds_take_their_deltas_from_the_placement_pairs():
    rng = np.random.default_rng(11)
    pairs = [levelled_round(rng, 0.003) for _ in range(12)]
    report = compare_runs([(levelled_run("A", a), levelled_run("B", b)) for a, b in pairs])
    got = report.rows[0]
    assert got.rounds["deltas_pct"] == pytest.approx([paired_delta_pct(a, b) for a, b in pairs])
    assert got.rounds["paired_rounds"] == got.rounds["level_paired_rounds"] == 12
    assert report.summary["level_paired_shapes"] == 1
    assert "1 shape(s) on level placements" in render_terminal(report)
    # the level each side's placements drew moves the ratio of their interquartile means by
    # far more than the plant; in the pairs the shared levels cancel and the plant shows
    iqm = [delta_pct(levelled_run("A", a).rows[0].gems_ms, levelled_run("B", b).rows[0].gems_ms)
           for a, b in pairs]
    assert np.std(got.rounds["deltas_pct"]) < np.std(iqm) / 3
    assert np.mean(got.rounds["deltas_pct"]) == pytest.approx(-0.3, abs=0.05)
    assert got.significant and got.direction < 0


@pytest.mark.parametrize("center, trim", [("median", 0), (IQM, 1)])
def test_placements_that_are_not_level_pairs_keep_the_ratio_of_the_latencies(center, trim):
    """Ordinary placements (their median of medians) never pair; nor do level placements whose
    counts differ between the sides."""
    rng = np.random.default_rng(12)
    pairs = [levelled_round(rng, 0.003) for _ in range(3)]
    rounds = [(levelled_run("A", a, center), levelled_run("B", b[trim:], center))
              for a, b in pairs]
    report = compare_runs(rounds)
    got = report.rows[0].rounds
    assert got["paired_rounds"] == got["level_paired_rounds"] == 0
    assert report.summary["level_paired_shapes"] == 0
    assert "level placements" not in render_terminal(report)
    assert got["deltas_pct"] == pytest.approx([delta_pct(ra.rows[0].gems_ms, rb.rows[0].gems_ms)
                                              for ra, rb in rounds])
