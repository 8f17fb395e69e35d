"""A SIGTERM that arrives while a run directory is first written is held and delivered inside
the block that finalises the run, so run.json never stays `running` because of it."""
from __future__ import annotations

import json
import os
import signal

import pytest

from harness.common.process import HeldTermination


class Stop(Exception):
    pass


def test_a_signal_held_during_creation_runs_its_handler_on_release():
    seen = []

    def handler(signum, frame):
        seen.append(signum)
        raise Stop()
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        held = HeldTermination().hold()
        os.kill(os.getpid(), signal.SIGTERM)          # arrives "while run.json is written"
        assert seen == []                              # held: nothing unwound yet
        with pytest.raises(Stop):
            held.release()                             # inside the finalising try
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is handler     # restored
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_nothing_held_means_release_only_restores():
    previous = signal.getsignal(signal.SIGINT)
    held = HeldTermination().hold()
    assert signal.getsignal(signal.SIGINT) is not previous
    held.release()
    assert signal.getsignal(signal.SIGINT) is previous


def _terminated_add_run(tmp_path, monkeypatch):
    """`add` run under a SIGTERM handler that raises Terminated, with a SIGTERM sent right
    after the first run.json is written; the run directory it leaves."""
    from harness.common.errors import Terminated
    from harness.run import runner
    from harness.run.options import BenchOptions
    original = runner.OpRun.open

    def open_then_signal(*args, **kwargs):
        run = original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)           # right after the first run.json
        return run

    def raise_terminated(signum, frame):
        raise Terminated(signum)
    monkeypatch.setattr(runner.OpRun, "open", staticmethod(open_then_signal))
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    try:
        with pytest.raises(Terminated):
            runner.run_bench(["add"], BenchOptions.from_flat(
                adapter="builtin", backend="cpu", out=str(tmp_path / "runs"),
                shapes=str(shapes), warmup_ms=1, min_samples=3, min_time_ms=0,
                max_time_ms=20))
        assert signal.getsignal(signal.SIGTERM) is raise_terminated     # restored
    finally:
        signal.signal(signal.SIGTERM, previous)
    (run_dir,) = (tmp_path / "runs").glob("add_*")
    return run_dir


def test_a_run_terminated_at_once_is_recorded_as_interrupted(tmp_path, monkeypatch):
    """SIGTERM the moment run.json exists (no time for the run to enter its body): the run
    directory still ends `interrupted (SIGTERM)`."""
    info = json.loads((_terminated_add_run(tmp_path, monkeypatch) / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("interrupted", "SIGTERM")


def test_a_second_sigterm_during_finalising_does_not_cut_the_files_short(tmp_path, monkeypatch):
    """A dying parent sends SIGTERM once per thread it had (the child is reparented thread
    by thread): the second one, arriving while the interrupted run writes its files, is
    dropped, and run.json, results and shapes are all written."""
    from harness.store.rundir import RunDir
    original_results = RunDir.write_results

    def results_then_signal(self, rows, **how):
        original_results(self, rows, **how)
        os.kill(os.getpid(), signal.SIGTERM)           # the second: while finalising
    monkeypatch.setattr(RunDir, "write_results", results_then_signal)
    run_dir = _terminated_add_run(tmp_path, monkeypatch)
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("interrupted", "SIGTERM")
    assert (run_dir / "shapes.yaml").exists() and (run_dir / "results.csv").exists()
    assert "status: interrupted (SIGTERM)" in (run_dir / "run.log").read_text()
