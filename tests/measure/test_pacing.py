"""--pace-us: an idle gap after every sample, each sample synchronised on its own; recorded in
the caliber only when on."""
from dataclasses import replace

import pytest

from conftest import FakeBackend
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
