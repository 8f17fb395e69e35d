"""The baton between two sides: samples in ABBA turns that never overlap, both sides ending a
case with as many samples, blocks while either side wants more (at most the cap), a barrier
no side passes alone, and a lost or out-of-step peer named instead of waited for forever."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import ROOT
from harness.measure.baton import Baton, PeerLost


def token() -> str:
    return uuid.uuid4().hex[:12]


def pair(timeout_s: float = 10.0) -> tuple[Baton, Baton]:
    shared = token()
    return Baton(shared, "A", "B", timeout_s), Baton(shared, "B", "A", timeout_s)


def at_once(*calls) -> None:
    """Each (function, *args) in a thread of its own, all at once; every one has ended."""
    threads = [threading.Thread(target=fn, args=args) for fn, *args in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(t.is_alive() for t in threads)


class Sampler:
    """A side's samples: each one logged (side, start, end) in a shared list; wants more until
    it has `wanted` samples."""

    def __init__(self, side: str, log: list, wanted: int):
        self.side, self.log, self.wanted, self.count = side, log, wanted, 0

    def __call__(self) -> bool:
        start = time.monotonic()
        time.sleep(0.001)                     # a sample's device work
        self.count += 1
        self.log.append((self.side, start, time.monotonic()))
        return self.count < self.wanted


def run_case(wanted_a: int, wanted_b: int, max_blocks: int = 100):
    """One case's turns between two threads; (log, taken by A, taken by B)."""
    a, b = pair()
    log: list = []
    taken = {}

    def side(baton: Baton, first: bool, wanted: int) -> None:
        with baton:
            baton.meet("built", 0)
            taken[baton.side] = baton.take_turns(first, Sampler(baton.side, log, wanted), 0,
                                                 max_blocks)
            baton.meet("done", 0)

    at_once((side, a, True, wanted_a), (side, b, False, wanted_b))
    return log, taken["A"], taken["B"]


def test_turns_go_abba_never_overlap_and_end_even():
    log, taken_a, taken_b = run_case(wanted_a=3, wanted_b=3)
    order = "".join(side for side, _, _ in log)
    assert order == "ABBAABBA"                # two blocks: A wanted 3, so a second block
    assert taken_a == taken_b == 4
    for (_, _, end), (_, start, _) in zip(log, log[1:]):
        assert start >= end                   # a sample starts after the previous one ended


@pytest.mark.parametrize("wanted_a, wanted_b, blocks", [(1, 9, 5), (9, 1, 5), (1, 1, 1)])
def test_blocks_go_on_while_either_side_wants_more(wanted_a, wanted_b, blocks):
    log, taken_a, taken_b = run_case(wanted_a, wanted_b)
    assert taken_a == taken_b == 2 * blocks   # the side that wants 9 samples sets the pace
    assert "".join(s for s, _, _ in log) == "ABBA" * blocks


def test_the_cap_ends_the_case_whatever_the_sides_want():
    log, taken_a, taken_b = run_case(wanted_a=1000, wanted_b=1000, max_blocks=3)
    assert taken_a == taken_b == 6 and len(log) == 12


def test_no_side_passes_a_meeting_alone():
    a, b = pair()

    def late_side() -> None:
        with b:
            time.sleep(0.3)
            b.meet("built", 4)

    thread = threading.Thread(target=late_side)
    thread.start()
    started = time.monotonic()
    with a:
        a.meet("built", 4)
    thread.join(10)
    assert time.monotonic() - started >= 0.25  # A waited for B to arrive


def test_a_peer_at_another_case_is_out_of_step():
    a, b = pair()
    with a, b:
        b.send("meet", 2, name="built")
        with pytest.raises(PeerLost, match="out of step: meet of case 2 where meet of case 3"):
            a.meet("built", 3)


def test_a_silent_peer_is_lost_after_the_timeout():
    a, b = pair(timeout_s=0.2)
    with a, b:
        started = time.monotonic()
        with pytest.raises(PeerLost, match="sent nothing for 0.2 s"):
            a.meet("built", 0)
        assert time.monotonic() - started < 5


def test_a_peer_that_never_opens_its_end_is_lost():
    with Baton(token(), "A", "B", timeout_s=0.2) as a:
        with pytest.raises(PeerLost, match="never opened its end"):
            a.send("meet", 0, name="built")


# The follower's side in a process of its own: meets, takes turns, then dies mid-case.
FOLLOWER = r"""
import sys, time
from harness.measure.baton import Baton
shared, die_after = sys.argv[1], int(sys.argv[2])
count = 0
def sample():
    global count
    count += 1
    if count > die_after:
        import os; os._exit(3)              # the process dies between two samples
    time.sleep(0.001)
    return True
with Baton(shared, "B", "A", timeout_s=10) as b:
    b.meet("built", 0)
    b.take_turns(False, sample, 0, 100)
"""


def test_a_peer_process_that_dies_mid_case_is_lost_not_waited_for():
    shared = token()
    child = subprocess.Popen([sys.executable, "-c", FOLLOWER, shared, "3"], cwd=ROOT)
    with Baton(shared, "A", "B", timeout_s=10) as a:
        a.meet("built", 0)
        started = time.monotonic()
        with pytest.raises(PeerLost):
            a.take_turns(True, lambda: True, 0, 100)
        assert time.monotonic() - started < 3    # its end seen, not the 10 s timeout
    assert child.wait(10) == 3


# -- a timer's samples in turns ---------------------------------------------------------------

class Calls:
    """A function under test that logs each call's (side, start, end)."""

    def __init__(self, side: str, log: list):
        self.side, self.log = side, log

    def __call__(self) -> None:
        start = time.monotonic()
        sum(range(2000))
        self.log.append((self.side, start, time.monotonic()))


def timer(turns, samples: int):
    from harness.measure.stopping import StoppingRule
    from harness.measure.stopping import Budget
    from harness.measure.timers import HostTimer
    import backends
    rule = StoppingRule(min_samples=samples, max_samples=samples, min_time_ms=0,
                        max_time_ms=60_000)
    return HostTimer(backends.get_backend("cpu"), 0, rule, Budget(warmup_ms=1, batch_ms=0.0),
                     turns=turns)


def test_two_timers_take_their_samples_in_turns_never_at_once():
    from harness.measure.baton import SampleTurns
    a, b = pair()
    log: list = []
    results = {}

    def side(baton: Baton, first: bool, wanted: int) -> None:
        with baton:
            turns = SampleTurns(baton, first)
            results[baton.side] = (timer(turns, wanted).measure(Calls(baton.side, log)), turns)

    at_once((side, a, True, 6), (side, b, False, 4))
    (ma, ta), (mb, tb) = results["A"], results["B"]
    assert ta.lost is None and tb.lost is None and ta.cases == tb.cases == 1
    assert len(ma.samples_ms) == len(mb.samples_ms) == 6     # the side wanting 6 set the pace
    assert ma.calls_per_sample == mb.calls_per_sample == 1
    sampled = sorted(log, key=lambda call: call[1])[-12:]     # the last 12 calls: the samples
    assert "".join(side for side, _, _ in sampled) == "ABBAABBAABBA"
    for (_, _, end), (_, start, _) in zip(sampled, sampled[1:]):
        assert start >= end


def test_a_timer_whose_peer_is_lost_samples_on_alone():
    from harness.measure.baton import SampleTurns
    a, b = pair(timeout_s=2.0)           # a loaded host may pause a thread for a fraction
    left = threading.Event()            # of a second: B's leaving must be what A sees

    def peer_that_leaves() -> None:
        b.meet("ready", 0)
        b.close()
        left.set()

    def calls() -> None:                     # A's samples wait until B has left (its
        if turns.cases:                      # warm-up, before the meeting, does not)
            assert left.wait(10)
        sum(range(2000))

    thread = threading.Thread(target=peer_that_leaves)
    thread.start()
    with a:
        turns = SampleTurns(a, first=True)
        measured = timer(turns, 8).measure(calls)
    thread.join(10)
    assert "closed its end" in turns.lost
    assert len(measured.samples_ms) == 8                     # the rule met alone


def test_a_side_that_leaves_is_known_at_once_not_after_the_timeout():
    a, b = pair(timeout_s=30)
    with a, b:
        b.leave("its run ended")
        started = time.monotonic()
        with pytest.raises(PeerLost, match=r"went on alone \(its run ended\)"):
            a.meet("ready", 0)
        assert time.monotonic() - started < 5


def test_time_spent_waiting_for_the_peer_is_counted_apart():
    a, b = pair()

    def late() -> None:
        time.sleep(0.5)
        b.meet("ready", 0)

    thread = threading.Thread(target=late)
    with a, b:
        thread.start()
        a.meet("ready", 0)
        thread.join(10)
        assert a.waited_s >= 0.45 and b.waited_s < a.waited_s / 2


def sides_in_turns(body_a, body_b):
    """Run body(SampleTurns) for sides A (first) and B at once; their results."""
    from harness.measure.baton import SampleTurns
    a, b = pair(timeout_s=10)
    results = {}

    def side(baton, first, body):
        with baton:
            turns = SampleTurns(baton, first)
            results[baton.side] = (body(turns), turns)

    at_once((side, a, True, body_a), (side, b, False, body_b))
    return results["A"], results["B"]


def test_sides_measuring_different_cases_go_on_alone_and_say_which():
    def measure(label):
        def body(turns):
            turns.label = label
            turns.begin()
            return turns.collect(lambda: [1.0], lambda taken: len(taken) >= 2)
        return body

    (got_a, ta), (got_b, tb) = sides_in_turns(measure("add|float32|4096"),
                                              measure("add|float32|8192"))
    assert got_a == ([], False) and got_b == ([], False)     # the timers sample on alone
    assert "measures 'add|float32|8192' where this side measures 'add|float32|4096'" in ta.lost
    assert tb.lost is not None


@pytest.mark.parametrize("flags, agreed", [((False, False), False), ((True, False), True),
                                           ((False, True), True)])
def test_a_joint_decision_is_either_sides_flag(flags, agreed):
    (got_a, _), (got_b, _) = sides_in_turns(lambda t: t.agree(flags[0]),
                                            lambda t: t.agree(flags[1]))
    assert got_a == got_b == agreed


def test_a_case_start_waits_past_the_baton_timeout_for_a_peer_still_compiling():
    from harness.measure.baton import SampleTurns
    a, b = pair(timeout_s=0.5)      # the turns after begin() must not lose a paused thread
    lost = {}

    def side(baton, first, delay):
        with baton:
            time.sleep(delay)                  # the case's first call: compiling
            turns = SampleTurns(baton, first)
            turns.begin()
            turns.collect(lambda: [1.0], lambda taken: len(taken) >= 2)
            lost[baton.side] = turns.lost

    at_once((side, a, True, 0.0), (side, b, False, 1.5))
    assert lost == {"A": None, "B": None}
