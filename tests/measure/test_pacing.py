"""--pace-us: an idle gap after every sample, each sample synchronised on its own; recorded in
the caliber only when on."""
import contextlib
from dataclasses import replace

import pytest

from conftest import FakeBackend, FakeEvent, FakeGraph
from harness.common.errors import UsageError
from harness.measure import timers
from harness.measure.timers import EventTimer, GraphTimer
from harness.run.options import BenchOptions


class Log(FakeBackend):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def synchronize(self):
        super().synchronize()
        self.log.append("sync")


@pytest.mark.parametrize("timer", [GraphTimer, EventTimer])
def test_paced_samples_are_synchronised_one_by_one_with_a_gap(monkeypatch, sure_rule,
                                                              fast_budget, timer):
    log = []
    monkeypatch.setattr(timers.time, "sleep", lambda s: log.append(("sleep", s)))
    paced = timer(Log(log), 0, replace(sure_rule, pace_us=2000.0), fast_budget).measure(
        lambda: sum(range(100)))
    sampling = log[log.index(("sleep", 0.002)) - 1:]        # from the first sample's sync on
    sleeps = [e for e in log if e != "sync"]
    assert sleeps == [("sleep", 0.002)] * (paced.n - 1)
    # every gap follows a sync of its own sample: sync, sleep, sync, sleep, ...
    assert all(a == "sync" and b == ("sleep", 0.002)
               for a, b in zip(sampling[::2], sampling[1::2]))
    log.clear()
    plain = timer(Log(log), 0, sure_rule, fast_budget).measure(lambda: sum(range(100)))
    assert "sync" in log and not [e for e in log if e != "sync"]      # no gap when off
    assert plain.n >= sure_rule.min_samples


def test_pacing_is_recorded_in_the_caliber_only_when_on():
    paced = BenchOptions.from_flat(pace_us=500)
    assert paced.caliber_values()["stopping"]["pace_us"] == 500
    assert "pace_us" not in BenchOptions().caliber_values()["stopping"]
    assert BenchOptions.from_argv(paced.to_argv()).rule.pace_us == 500
    with pytest.raises(UsageError):
        BenchOptions.from_flat(pace_us=-1)


class AloneTurns:
    """A stand-in for baton.SampleTurns whose peer never answers late: samples until enough."""

    label, waited_s = None, 0.0

    def begin(self):
        pass

    def collect(self, take_one, enough):
        samples = []
        while not enough(samples):
            samples.extend(take_one())
        return samples, True


class Spins(Log):
    def has_spin(self):
        return True

    def spin(self, cycles):
        self.log.append("spin")

    def new_graph(self):
        log = self.log

        class Graph(FakeGraph):
            def replay(self):
                log.append("replay")
                super().replay()
        return Graph()

    def event(self):
        log = self.log

        class Event(FakeEvent):
            def record(self):
                log.append("record")
                super().record()
        return Event()


@pytest.mark.parametrize("timer", [GraphTimer, EventTimer])
def test_samples_in_turns_start_behind_a_spin(sure_rule, fast_budget, timer):
    """In turns the device is drained before every sample: a spin queued ahead of the start
    event keeps the host's launch out of the timed window; alone, no spin."""
    log = []
    backend = Spins(log)
    measured = timer(backend, 0, sure_rule, fast_budget, turns=AloneTurns()).measure(
        lambda: log.append("call"))
    sampling = log[log.index("spin"):]
    assert log.count("spin") == measured.n            # one per sample, none elsewhere
    # spin, the same work untimed, start record, the sample, end record, sync: all alike
    step = ["spin", "replay", "record", "replay", "record", "sync"] if timer is GraphTimer \
        else ["spin", "call", "record", "call", "record", "sync"]
    assert [e for e in sampling if e in step] == step * measured.n
    log.clear()
    timer(Spins(log), 0, sure_rule, fast_budget).measure(lambda: sum(range(100)))
    assert "spin" not in log


class Captures(Spins):
    @contextlib.contextmanager
    def graph_capture(self, graph):
        self.log.append("capture")
        with super().graph_capture(graph):
            yield graph
        self.log.append("captured")


def test_a_lead_is_queued_once_a_sample_inside_its_timed_window_for_all_its_calls(sure_rule,
                                                                                  fast_budget):
    """A plant's spin (timers' `lead`): with events, after the start event and before the
    sample's calls, given their number; in a graph, captured ahead of the unrolled calls."""
    log = []
    lead = lambda calls: log.append(("lead", calls))  # noqa: E731
    measured = EventTimer(Captures(log), 0, sure_rule, fast_budget).measure(
        lambda: log.append("call"), calls=7, lead=lead)
    sampling = log[log.index(("lead", 7)) - 1:]
    assert log.count(("lead", 7)) == measured.n and measured.calls_per_sample == 7
    assert [e for e in sampling if e != "sync"] == (
        ["record", ("lead", 7), *["call"] * 7, "record"] * measured.n)
    assert not [e for e in log[:log.index(("lead", 7))] if isinstance(e, tuple)]  # not before
    log.clear()
    graphed = GraphTimer(Captures(log), 0, sure_rule, fast_budget).measure(
        lambda: log.append("call"), lead=lead)
    last = len(log) - log[::-1].index("capture")            # the graph that was timed
    unroll = graphed.calls_per_sample
    assert log[last:last + unroll + 2] == [("lead", unroll), *["call"] * unroll, "captured"]
    assert all(e in ("replay", "record", "sync") for e in log[last + unroll + 2:])
    log.clear()
    EventTimer(Captures(log), 0, sure_rule, fast_budget).measure(lambda: None)
    assert not [e for e in log if isinstance(e, tuple)]     # no lead: nothing queued
