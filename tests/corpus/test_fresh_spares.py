"""How many warm spares a turns-fresh side keeps: enough for each run's process to have
started by the time its round comes, within what the host can start at once."""
import os
from types import SimpleNamespace

import pytest

from harness.corpus.rounds import (MAX_FRESH_SPARES, PersistentRounds, SpareSizer, TwinsRounds,
                                   TurnsFreshRounds, host_spare_cap, spares_needed,
                                   usable_cpus)


@pytest.mark.parametrize("start_s, round_s, cap, want", [
    (10.0, 2.6, 7, 5),     # a 10 s start behind 2.6 s rounds: 4 rounds to start, one spare more
    (10.0, 4.0, 7, 4),
    (10.0, 20.0, 7, 2),    # a start shorter than a round: one in flight and one ready
    (60.0, 1.0, 7, 7),     # the host's cap
    (5.0, 0.0, 3, 3),      # no round measured yet
])
def test_spares_cover_a_start_over_the_rounds_it_has(start_s, round_s, cap, want):
    assert spares_needed(start_s, round_s, cap) == want


@pytest.mark.parametrize("cpus, want", [(2, 1), (4, 1), (8, 3), (16, 7), (128, MAX_FRESH_SPARES)])
def test_the_host_cap_leaves_the_runs_their_cpus(cpus, want):
    assert host_spare_cap(cpus) == want


def test_the_depth_grows_one_at_a_time():
    sizer = SpareSizer(first=3, cap=7)
    sizer.ran("mm", "A", 1, 0.0, 30.0, ok=True)
    grown = [sizer.ran("mm", "A", n, float(n), 30.0, ok=True) for n in range(2, 7)]
    assert grown == [4, 5, 6, 7, 7]


def test_the_depth_follows_the_ops_last_five_good_rounds_on_both_sides():
    sizer = SpareSizer(first=3, cap=7)
    assert sizer.depth == 3
    t = 0.0
    for number in range(0, 4):         # the record and round 1 are no rounds; 30 s starts
        for label in "AB":
            sizer.ran("mm", label, number, t, 30.0, ok=True)
        t += 1.0 if number >= 1 else 60.0
    assert sizer.depth == 7            # ceil(30 / 1) + 1, capped, reached one at a time
    assert SpareSizer(first=3, cap=7).ran("mm", "A", 2, 1.0, 30.0, ok=True) == 3  # no round yet
    for number in range(4, 9):         # five rounds of 2.5 s, 10 s starts: the 30 s ones out
        for label in "AB":
            sizer.ran("mm", label, number, t, 10.0, ok=True)
        t += 2.5
    assert sizer.depth == 5 and len(sizer.seen) == SpareSizer.WINDOW
    sizer.ran("mm", "A", 9, t + 100.0, 10.0, ok=False)      # a failed run: not counted
    assert sizer.depth == 5
    sizer.ran("mm", "A", 10, t + 100.1, 0.0, ok=True)       # no start known: not counted
    assert sizer.depth == 5
    depth = sizer.ran("softmax", "A", 0, t + 200.0, 10.0, ok=True)   # a new op
    assert depth == 5 and sizer.seen == [] and sizer.asked == {"A": t + 200.0}


def test_every_run_sizes_both_sides_pools(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.corpus.rounds.usable_cpus", lambda: 16)
    runner = TurnsFreshRounds(settle_s=0.0)
    pools = {label: SimpleNamespace(depth=runner.spares, log=tmp_path / f"w_{label}.log")
             for label in "AB"}
    runner.pools = pools
    monkeypatch.setattr(TurnsFreshRounds, "_pool", lambda self, plan, side: pools[side.label])
    clock = iter(range(0, 10_000, 2))                 # every time.time() 2 s later
    monkeypatch.setattr("harness.corpus.rounds.time.time", lambda: float(next(clock)))

    def job(self, plan, op, number, side, replay_from, turns=None):
        self.workers[side.label] = SimpleNamespace(launched_at=0.0, ready_at=40.0,
                                                   stop=lambda: None)
        return SimpleNamespace(rc=0)
    monkeypatch.setattr(PersistentRounds, "_run_job", job)
    for number in range(4):
        for label in "AB":
            runner._run_job(None, "mm", number, SimpleNamespace(label=label), None)
    # 40 s starts; a side asks every 12 s (three clock reads a run, the sides in turn):
    # ceil(40 / 12) + 1
    assert pools["A"].depth == pools["B"].depth == 5
    lines = pools["B"].log.read_text().splitlines()
    assert len(lines) == 4 and lines[-1].endswith(", spares 5")
    fixed = TurnsFreshRounds(settle_s=0.0, spares=2)
    assert fixed.sizer is None and fixed.spares == 2


def test_the_cpus_counted_are_those_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5, 9}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 3                       # a cpuset of three on a 64-CPU host
    monkeypatch.delattr(os, "sched_getaffinity")    # a system that cannot say
    assert usable_cpus() == 64
    monkeypatch.setattr("harness.corpus.rounds.usable_cpus", lambda: 2)
    assert TurnsFreshRounds(settle_s=0.0).spares == 1        # a two-CPU host: one spare


def test_twins_spares_cover_the_shortest_time_between_a_sides_asks():
    # ABBA one side after the other: side A asked after one run, then after three, …
    asks = {"A": [0.0, 7.8, 10.4, 18.2, 20.8, 28.6, 31.2], "B": [2.6, 5.2, 13.0, 15.6, 23.4,
                                                                 26.0, 33.8]}
    sizers = {"median": SpareSizer(first=1, cap=7), "min": SpareSizer(first=1, cap=7,
                                                                      interval=min)}
    for sizer in sizers.values():
        for number in range(1, 8):
            for label in "AB":
                sizer.ran("mm", label, number, asks[label][number - 1], 10.0, ok=True)
    # a 10 s start: the median ask gap 7.8 s asks for ceil(10 / 7.8) + 1 = 3, the shortest
    # (2.6 s, the back-to-back turn) for ceil(10 / 2.6) + 1 = 5
    assert sizers["median"].depth == 3 and sizers["min"].depth == 5
    assert TwinsRounds.spare_interval([7.8, 2.6]) == 2.6
    assert TurnsFreshRounds.spare_interval([7.8, 2.6, 3.0]) == 3.0
