"""What an op's outcome says and what the batch does with it: a Python that cannot import the
adapter's library stops the batch (one PREFLIGHT_FAILED, exit 3, no later op run), and a
passing op that skipped some cases says so (`partial_skip=N`)."""
from __future__ import annotations

import pytest

from fake_runs import fake_run
from harness.run.options import BenchOptions
from harness.common.errors import EXIT_PREFLIGHT, PreflightError
from harness.corpus import batch as batchmod
from harness.corpus.outcome import FAIL, PASS, Attempt, Outcome, judge
from harness.corpus.selection import Item
from harness.measure.measurement import Measurement
from harness.store.results import SKIPPED, SUCCESS, Row
from harness.store.rundir import RunDir

NO_LIBRARY = ("PREFLIGHT_FAILED check=import flag_gems is not importable from "
              "/usr/bin/python3: No module named 'flag_gems'")


def test_an_import_preflight_failure_is_a_machine_wide_check():
    outcome = Outcome(FAIL, EXIT_PREFLIGHT, 0.1, NO_LIBRARY)
    assert outcome.preflight_check == "import"
    # the same words from an op that exited otherwise are the op's own failure
    assert Outcome(FAIL, 1, 0.1, NO_LIBRARY).preflight_check is None


def test_a_python_without_the_adapters_library_stops_the_batch(tmp_path, monkeypatch):
    calls = []

    def attempt(self, op, dtypes, lane, worker, k, replay=None, timer=None,
                compile_cache=None):
        calls.append(op)
        return Attempt(EXIT_PREFLIGHT, 0.1, self.plan.root / f"{op}.log", None, NO_LIBRARY)
    monkeypatch.setattr(batchmod.Batch, "_attempt", attempt)
    plan = batchmod.BatchPlan(root=tmp_path, items=[Item("add"), Item("mm"), Item("softmax")],
                              devices=[0], options=BenchOptions(backend="cpu"),
                              fresh_process=True)
    with pytest.raises(PreflightError) as caught:
        batchmod.run_batch(plan, echo=lambda _: None)
    assert "No module named 'flag_gems'" in str(caught.value)
    assert calls == ["add"]                     # not retried, and no other op run


def test_a_passing_op_that_skipped_cases_notes_partial_skip(tmp_path):
    run_dir = fake_run(tmp_path, "run")
    samples = (1.0, 1.01, 0.99, 1.0, 1.02)
    ok = dict(op="add", dtype="float32", status=SUCCESS, torch=Measurement(samples, "host"),
              gems=Measurement(samples, "host"))
    RunDir(run_dir).write_results([
        Row(shape=[64], shape_detail="64", **ok),
        Row(op="add", dtype="float32", shape=[128], shape_detail="128", status=SKIPPED,
            reason="needs a GPU"),
        Row(op="add", dtype="float32", shape=[256], shape_detail="256", status=SKIPPED,
            reason="needs a GPU")])
    log = tmp_path / "run.log"
    log.write_text("")
    outcome = judge(Attempt(0, 0.1, log, run_dir), 60)
    assert outcome.status == PASS and "partial_skip=2" in outcome.notes, outcome
    RunDir(run_dir).write_results([Row(shape=[64], shape_detail="64", **ok)])
    assert not any(n.startswith("partial_skip") for n in judge(Attempt(0, 0.1, log, run_dir),
                                                                 60).notes)
