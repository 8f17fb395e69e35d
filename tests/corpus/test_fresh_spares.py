"""How many warm spares a turns-fresh side keeps: enough for each run's process to have
started by the time its round comes, within what the host can start at once."""
import os
from types import SimpleNamespace

import pytest

from harness.corpus.rounds import (FRESH_SPARES, MAX_FRESH_SPARES, TurnsFreshRounds,
                                   host_spare_cap, spares_needed, usable_cpus)


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


def test_a_side_resizes_from_its_last_five_runs(monkeypatch):
    monkeypatch.setattr("harness.corpus.rounds.usable_cpus", lambda: 16)
    runner = TurnsFreshRounds(settle_s=0.0)
    assert runner.spares == FRESH_SPARES and not runner.fixed
    pool = SimpleNamespace(depth=runner.spares)
    for start_s, round_s in [(30.0, 1.0)] * 3 + [(10.0, 2.5)] * 5:
        runner._resize(pool, "A", start_s, round_s)
    assert pool.depth == 5                   # the three slow starts are out of the window
    runner._resize(pool, "B", 30.0, 1.0)     # each side on its own
    assert pool.depth == 7 and runner.seen["A"][-1] == (10.0, 2.5)


def test_a_fixed_number_of_spares_is_kept_and_capped_by_nothing(monkeypatch):
    monkeypatch.setattr("harness.corpus.rounds.usable_cpus", lambda: 2)
    assert TurnsFreshRounds(settle_s=0.0).spares == 1          # a two-CPU host: one
    runner = TurnsFreshRounds(settle_s=0.0, spares=4)
    assert runner.fixed and runner.spares == 4


def test_the_cpus_counted_are_those_this_process_may_use():
    want = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert usable_cpus() == want
