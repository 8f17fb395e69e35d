"""A later step of an op starts where an earlier one settled (outcome.Settled): a screen's side
B and timed pair take side A's own-dtype fallback and event timing instead of repeating the
attempts that found them (a graph-timed attempt that aborts can hold the device for a whole op
timeout; the timed pair then used two timers), and a batch that times nothing never reruns a
crashed op 'with event timing' — it has no timer to fall back from."""
from __future__ import annotations

import pytest

from harness.corpus import batch as batchmod
from harness.corpus.outcome import CRASH, FAIL, Attempt, Outcome, Settled
from harness.corpus.selection import Item
from harness.run.options import BenchOptions


def test_settled_reads_what_the_earlier_steps_fell_back_to():
    plain = Outcome("PASS", 0, 1.0)
    dtypes = Outcome("PASS", 0, 1.0, notes=["dtype_fallback"])
    rescued = Outcome("PASS", 0, 1.0, notes=["dtype_rescue"])
    evented = Outcome("PASS", 0, 1.0, notes=["timer_fallback=event", "graph_rc=-6"])
    assert Settled.of(plain) == Settled() and Settled().note() == ""
    assert Settled.of(dtypes) == Settled(own_dtypes=True) == Settled.of(rescued)
    assert Settled.of(plain, evented) == Settled(timer="event")
    both = Settled.of(dtypes, evented, None)
    assert both == Settled(True, "event") and both.note() == "settled_by_a=dtypes,timer"


def make_batch(tmp_path, monkeypatch, script, timing=True, graphs=True, retries=0):
    """A batch whose attempts return `script`'s (rc, message) in turn; the calls are kept."""
    monkeypatch.setattr(batchmod, "graph_timed", lambda timer, backend: graphs)
    calls = []

    def attempt(self, op, dtypes, lane, runner, k, replay=None, timer=None, compile_cache=None):
        assert len(calls) < len(script), calls
        rc, message = script[len(calls)]
        calls.append({"dtypes": dtypes, "timer": timer, "k": k})
        return Attempt(rc, 0.1, self.plan.root / f"{k}.log", None, message)
    monkeypatch.setattr(batchmod.Batch, "_attempt", attempt)
    plan = batchmod.BatchPlan(root=tmp_path, items=[Item("op")], devices=[0], retries=retries,
                              options=BenchOptions(backend="cpu", dtypes=["bfloat16"],
                                                   timing=timing))
    return batchmod.Batch(plan, lambda _: None, None, False), calls


def test_a_step_settled_on_own_dtypes_skips_the_requested_ones(tmp_path, monkeypatch):
    batch, calls = make_batch(tmp_path, monkeypatch, [(1, "zlh: boom")])
    outcome = batch.run_item(Item("op"), None, None, settled=Settled(own_dtypes=True))
    # one attempt, with the op's own dtypes; no dtype rescue after it (nothing left to try)
    assert [c["dtypes"] for c in calls] == [None]
    assert outcome.status == FAIL and "settled_by_a=dtypes" in outcome.notes


def test_without_a_settled_start_the_requested_dtypes_come_first(tmp_path, monkeypatch):
    batch, calls = make_batch(tmp_path, monkeypatch, [(1, "zlh: boom"), (1, "zlh: boom")])
    batch.run_item(Item("op"), None, None)
    assert [c["dtypes"] for c in calls] == [("bfloat16",), None]    # the rescue followed


def test_a_step_settled_on_event_timing_starts_there_and_does_not_fall_back_again(
        tmp_path, monkeypatch):
    batch, calls = make_batch(tmp_path, monkeypatch, [(-6, "")])
    outcome = batch.run_item(Item("op"), None, None, settled=Settled(timer="event"))
    assert [c["timer"] for c in calls] == ["event"]
    assert outcome.status == CRASH and not any(n.startswith("timer_fallback")
                                               for n in outcome.notes)
    assert "settled_by_a=timer" in outcome.notes


def test_event_timing_is_taken_over_only_where_the_batch_would_fall_back(tmp_path,
                                                                         monkeypatch):
    # an explicit --timer graph (graph_timed False) is kept as asked
    batch, calls = make_batch(tmp_path, monkeypatch, [(-6, "")], graphs=False)
    outcome = batch.run_item(Item("op"), None, None, settled=Settled(timer="event"))
    assert [c["timer"] for c in calls] == [None] and outcome.status == CRASH
    assert not any(n.startswith("settled_by_a") for n in outcome.notes)


@pytest.mark.parametrize("timing, attempts", [(True, 2), (False, 1)])
def test_a_batch_that_times_nothing_does_not_rerun_a_crash_with_event_timing(
        tmp_path, monkeypatch, timing, attempts):
    batch, calls = make_batch(tmp_path, monkeypatch, [(-6, ""), (-6, "")], timing=timing)
    batch.run_item(Item("op"), None, None)
    assert len(calls) == attempts
    assert [c["timer"] for c in calls] == [None, "event"][:attempts]


def test_requested_dtypes_that_leave_nothing_to_run_are_not_retried(tmp_path, monkeypatch):
    class Runner:
        renewed = 0

        def renew(self):
            self.renewed += 1
    runner = Runner()
    no_dtype = (1, "zlh: dtype bfloat16 not supported by op 'op' on backend cpu")
    batch, calls = make_batch(tmp_path, monkeypatch, [no_dtype, (1, "zlh: boom"),
                                                      (1, "zlh: boom")], retries=2)
    outcome = batch.run_item(Item("op"), None, runner)
    # the fallback at once (no retry of the same refusal, no fresh worker for it); the
    # fallback's own failure is retried as any
    assert [c["dtypes"] for c in calls] == [("bfloat16",), None, None]
    assert runner.renewed == 1 and "dtype_fallback" in outcome.notes
