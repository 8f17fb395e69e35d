"""The second-level dtype rescue: an op that FAILed with no successful case at the requested
dtypes, for a reason that names no dtype, runs once more with its own dtypes (note
dtype_rescue); a failure that keeps failing stays FAIL, and ops without requested dtypes,
TIMEOUTs and CRASHes are not rescued."""
from __future__ import annotations

import pytest

from fake_runs import fake_run
from harness.run.options import BenchOptions
from harness.corpus import batch as batchmod
from harness.corpus.outcome import CRASH, FAIL, PASS, TIMEOUT, Attempt
from harness.corpus.selection import Item


def scripted(monkeypatch, tmp_path, first_rc: int, rescued_rc: int):
    """Attempts with requested dtypes end `first_rc` (a baseline error without 'dtype' in
    it); attempts with the op's own dtypes end `rescued_rc`, rows in a run directory."""
    calls = []

    def attempt(self, op, dtypes, lane, worker, k, replay=None, timer=None,
                compile_cache=None):
        calls.append((dtypes, k))
        log = self.plan.root / f"{k}.log"
        if dtypes:
            return Attempt(first_rc, 0.1, log, None, "zlh: the baseline cannot compile erfcx")
        if rescued_rc:
            return Attempt(rescued_rc, 0.1, log, None, "zlh: still broken")
        return Attempt(0, 0.1, log, fake_run(tmp_path / "runs", f"r{k}", op=op))
    monkeypatch.setattr(batchmod.Batch, "_attempt", attempt)
    return calls


def run(tmp_path, dtypes=("bfloat16",)):
    plan = batchmod.BatchPlan(root=tmp_path / "b", items=[Item("op", dtypes)], devices=[0],
                              options=BenchOptions(backend="cpu"), retries=1,
                              fresh_process=True)
    return batchmod.run_batch(plan, echo=lambda _: None).outcomes["op"]


def test_a_fail_with_no_row_is_rescued_with_the_ops_own_dtypes(tmp_path, monkeypatch):
    calls = scripted(monkeypatch, tmp_path, 1, 0)
    outcome = run(tmp_path)
    assert calls == [(("bfloat16",), 1), (("bfloat16",), 2), (None, 3)]
    assert outcome.status == PASS and "dtype_rescue" in outcome.notes
    assert outcome.attempt == 3


def test_a_rescue_that_fails_too_stays_fail(tmp_path, monkeypatch):
    calls = scripted(monkeypatch, tmp_path, 1, 1)
    outcome = run(tmp_path)
    assert [d for d, _ in calls] == [("bfloat16",), ("bfloat16",), None, None]
    assert outcome.status == FAIL and "dtype_rescue" in outcome.notes


@pytest.mark.parametrize("first_rc, status", [(124, TIMEOUT), (-11, CRASH)])
def test_timeouts_and_crashes_are_not_rescued(tmp_path, monkeypatch, first_rc, status):
    calls = scripted(monkeypatch, tmp_path, first_rc, 0)
    outcome = run(tmp_path)
    assert outcome.status == status and all(d for d, _ in calls)
    assert "dtype_rescue" not in outcome.notes


def test_an_op_without_requested_dtypes_has_nothing_to_rescue(tmp_path, monkeypatch):
    calls = scripted(monkeypatch, tmp_path, 1, 1)
    outcome = run(tmp_path, dtypes=None)
    assert outcome.status == FAIL and len(calls) == 2 and "dtype_rescue" not in outcome.notes
