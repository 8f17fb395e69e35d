"""--level-placements: a record probes each case's level on short placements; a case whose
level is drawn per placement is timed on many of them (their interquartile mean), and its
replays on as many as the record."""
import dataclasses
import json
import math

import pytest

from conftest import FakeBackend
from harness.ab.compare import compare_runs
from harness.common.errors import UsageError
from harness.measure.measurement import IQM, MEDIAN, Measurement
from harness.measure.sample_stats import interquartile_mean
from harness.measure.stats import delta_pct
from harness.measure.timers import GRAPH
from harness.run import level
from harness.run.runner import run_op
from harness.store.reader import load_run, read_rows
from harness.store.results import SUCCESS
from scripted import plan_for


class Clock:
    def __init__(self):
        self.now = 0.0


class LevelEvent:
    def __init__(self, clock):
        self.clock, self.t = clock, None

    def record(self):
        self.t = self.clock.now

    def synchronize(self):
        pass

    def elapsed_time(self, other) -> float:
        return other.t - self.t


class LevelGraph:
    def __init__(self, backend):
        self.backend = backend

    def replay(self):
        self.backend.clock.now += self.backend.level


class LevelBackend(FakeBackend):
    """A device whose graph replays take the current placement's level (ms, on a virtual
    clock the events read): each new placement (its emptied allocator cache) draws the next
    of `levels`, round and round. `placements` counts them."""

    def __init__(self, levels):
        super().__init__()
        self.levels, self.placements = list(levels), 0
        self.level, self.clock = self.levels[0], Clock()

    def empty_cache(self):
        self.placements += 1
        self.level = self.levels[self.placements % len(self.levels)]

    def event(self):
        return LevelEvent(self.clock)

    def new_graph(self):
        return LevelGraph(self)


WIDE = [1.0, 1.06, 0.97, 1.03, 1.0, 0.95, 1.04, 1.01]     # a level drawn per placement
FLAT = [1.0, 1.0005, 0.9995, 1.0]                         # a level that stays


def run(tmp_path, rule, budget, levels, most, record=None, name="runs", **options):
    backend = LevelBackend(levels)
    plan = plan_for(["ok"], tmp_path / name, rule, budget, backend=backend)
    plan = dataclasses.replace(plan, timer=GRAPH, options=plan.options.replace(
        level_placements=most, **options), replay_dirs={"op": record} if record else {})
    run_dir = run_op(plan, "op", echo=lambda _: None).run_dir
    (row,) = read_rows(run_dir / "results.jsonl")
    assert row.status == SUCCESS
    return backend, row, run_dir


def test_a_record_times_a_case_whose_level_moves_on_many_placements_and_its_replay_as_many(
        tmp_path, sure_rule, fast_budget):
    backend, row, record = run(tmp_path, sure_rule, fast_budget, WIDE, 64)
    spread = row.extra["level_spread_pct"]
    want = level.placements_for(spread, 64)
    assert spread >= level.SPREAD_MIN_PCT and level.PROBE < want <= 64
    assert row.extra["level_placements"] == want == len(row.gems.repeats)
    assert row.gems.center == IQM and len(row.torch.repeats) == want
    assert row.gems.median == pytest.approx(interquartile_mean(row.gems.repeats))
    # the first timing, the probe and the rest of the level placements, each moved once
    assert backend.placements == want
    caliber = json.loads((record / "run.json").read_text())["caliber"]
    assert caliber["level_placements"] == 64
    stored = json.loads((record / "results.jsonl").read_text().splitlines()[0])
    assert stored["gems"]["repeats_center"] == IQM

    replayed, again, _ = run(tmp_path, sure_rule, fast_budget, WIDE, 64, record, "replay")
    assert again.extra["level_placements"] == want and "level_spread_pct" not in again.extra
    assert replayed.placements == want            # no first timing, no probe: the record's count
    capped, fewer, _ = run(tmp_path, sure_rule, fast_budget, WIDE, 16, record, "capped")
    assert fewer.extra["level_placements"] == 16 == capped.placements
    assert fewer.gems.median == pytest.approx(interquartile_mean(fewer.gems.repeats))


def test_a_case_whose_level_stays_is_timed_as_usual_after_its_probe(tmp_path, sure_rule,
                                                                   fast_budget):
    backend, row, record = run(tmp_path, sure_rule, fast_budget, FLAT, 64)
    assert row.extra["level_spread_pct"] < level.SPREAD_MIN_PCT
    assert "level_placements" not in row.extra and row.gems.center == MEDIAN
    assert not row.gems.repeats and backend.placements == level.PROBE
    # its replay probes nothing and times it on its one placement
    replayed, again, _ = run(tmp_path, sure_rule, fast_budget, WIDE, 64, record, "replay")
    assert replayed.placements == 0 and "level_spread_pct" not in again.extra


def test_off_by_default_nothing_is_probed(tmp_path, sure_rule, fast_budget):
    backend, row, run_dir = run(tmp_path, sure_rule, fast_budget, WIDE, 0)
    assert backend.placements == 0 and "level_spread_pct" not in row.extra
    caliber = json.loads((run_dir / "run.json").read_text())["caliber"]
    assert caliber["level_placements"] == 0 and caliber["level_min_us"] == 0   # no floor in force


def test_a_case_under_the_floor_keeps_its_usual_timing(tmp_path, sure_rule, fast_budget):
    # its level moves, but it reads 1 ms: under a 2 ms floor it is neither probed nor moved
    backend, row, run_dir = run(tmp_path, sure_rule, fast_budget, WIDE, 64, level_min_us=2000.0)
    assert backend.placements == 0 and row.gems.center == MEDIAN
    assert "level_spread_pct" not in row.extra and "level_placements" not in row.extra
    assert json.loads((run_dir / "run.json").read_text())["caliber"]["level_min_us"] == 2000
    # at the default floor (20 µs) the same case is probed and flagged
    backend, row, run_dir = run(tmp_path, sure_rule, fast_budget, WIDE, 64, name="default")
    assert row.extra["level_placements"] == backend.placements > level.PROBE
    assert json.loads((run_dir / "run.json").read_text())["caliber"]["level_min_us"] == \
        level.MIN_US == 20
    assert not level.probed(None, 0) and level.probed(0.02, 20) and not level.probed(0.0199, 20)


def test_the_count_aims_at_the_target_and_stays_in_bounds():
    assert level.placements_for(level.SPREAD_MIN_PCT - 0.01, 128) == 0
    assert level.placements_for(2.0, 128) == math.ceil(2 * (2.0 / level.TARGET_PCT) ** 2) == 128
    assert level.placements_for(1.0, 128) == 32
    assert level.placements_for(3.0, 128) == 128 and level.placements_for(1.0, 20) == 20
    assert level.placements_for(5.0, 0) == 0
    assert level.spread_pct([2.0]) == 0.0
    assert level.spread_pct([1.0, math.e ** 0.01]) == pytest.approx(math.sqrt(0.5))


def test_the_interquartile_mean_drops_a_quarter_at_each_end():
    assert interquartile_mean([1, 2, 3, 100]) == 2.5                 # four: the median
    assert interquartile_mean([5, 1, 3]) == 3.0
    assert interquartile_mean([1, 2, 3, 4, 5, 6, 7, 1000]) == 4.5   # 3 4 5 6
    assert interquartile_mean([0, 10, 11, 12, 1000]) == 11.0         # 10 11 12


def test_a_measurement_keeps_how_its_repeats_give_its_number():
    m = Measurement((1.0,) * 8, GRAPH, repeats=(1.0, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 9.0),
                    center=IQM)
    assert m.median == pytest.approx(1.25)
    back = Measurement.from_dict(m.to_dict())
    assert back.center == IQM and back.median == pytest.approx(1.25)
    plain = Measurement((1.0, 2.0), GRAPH, repeats=(1.0, 3.0, 9.0))
    assert "repeats_center" not in plain.to_dict() and plain.median == 3.0
    with pytest.raises(UsageError, match="repeats_center"):
        Measurement.from_dict({**m.to_dict(), "repeats_center": "mode"})
    with pytest.raises(UsageError, match="center"):
        Measurement((1.0,), GRAPH, center="mode")


def test_what_the_first_timing_saw_stays_on_a_row_timed_again_on_level_placements(
        tmp_path, sure_rule, fast_budget, monkeypatch):
    from harness.run.case_timing import PlacedTiming
    real, calls = PlacedTiming._both, []

    def first_held(self):          # the first timing (long windows) ran held by the power cap
        torch_m, gems_m, _, lines = real(self)
        calls.append(True)
        return (torch_m, gems_m, len(calls) == 1, lines + ["SEEN-FIRST"] * (len(calls) == 1))
    monkeypatch.setattr(PlacedTiming, "_both", first_held)
    _, row, _ = run(tmp_path, sure_rule, fast_budget, WIDE, 64)
    assert row.extra["level_placements"] > level.PROBE
    assert row.markers[0] == "SEEN-FIRST" and row.throttled is True


def test_a_probe_that_fails_leaves_the_case_its_first_timing(tmp_path, sure_rule, fast_budget,
                                                              monkeypatch):
    from harness.run.case_timing import PlacedTiming

    def short_of_memory(self):
        raise RuntimeError("CUDA out of memory. Tried to allocate 64.00 MiB")
    monkeypatch.setattr(PlacedTiming, "_short", short_of_memory)
    _, row, record = run(tmp_path, sure_rule, fast_budget, WIDE, 64)
    assert row.gems is not None and not row.gems.repeats
    assert row.extra["level_error"].startswith("CUDA out of memory")
    assert "level_placements" not in row.extra


def test_the_row_counts_the_placements_its_latency_comes_from(tmp_path, sure_rule, fast_budget,
                                                              monkeypatch):
    monkeypatch.setattr(LevelBackend, "memory_free", lambda self, index: 1 << 40)
    _, flat, _ = run(tmp_path, sure_rule, fast_budget, FLAT, 64, placement_memory="new")
    assert "placements_new_memory" not in flat.extra      # one placement; the probe's not its
    _, wide, _ = run(tmp_path, sure_rule, fast_budget, WIDE, 64, name="wide",
                     placement_memory="new")
    assert wide.extra["placements_new_memory"] == wide.extra["level_placements"]


def test_an_ab_over_level_placements_reads_each_round_from_its_placement_pairs(
        tmp_path, sure_rule, fast_budget):
    """Record, then three rounds of replays: placement j of a round lands on one level on both
    sides (one spacer size), but for one placement in eight of B's, which draws a higher one;
    B is 0.3 % slower. The pairs read the plant; the ratio of the interquartile means reads
    the odd placements too."""
    _, _, record = run(tmp_path, sure_rule, fast_budget, WIDE, 64)
    rounds = []
    for number in range(3):
        levels_a = WIDE[number:] + WIDE[:number]      # each round draws other spacers
        levels_b = [1.003 * (1.06 if k == 3 else v) for k, v in enumerate(levels_a)]
        sides = [run(tmp_path, sure_rule, fast_budget, levels, 64, record, f"{side}{number}")
                 for side, levels in (("a", levels_a), ("b", levels_b))]
        rounds.append(tuple(load_run(run_dir) for _, _, run_dir in sides))
    row = compare_runs(rounds).rows[0]
    assert row.rounds["paired_rounds"] == 3
    assert row.rounds["deltas_pct"] == pytest.approx([100 * (1 / 1.003 - 1)] * 3, abs=1e-6)
    by_latency = [delta_pct(a.rows[0].gems_ms, b.rows[0].gems_ms) for a, b in rounds]
    assert min(abs(d - row.rounds["deltas_pct"][0]) for d in by_latency) > 0.1
