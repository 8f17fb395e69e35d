"""The corpus engine's executor: chosen in one place (make_executor), a lane's units run in
its reused worker or, with fresh_process, each in its own process; a command (a campaign
card) runs to completion with its output in its log."""
from __future__ import annotations

import os
import sys

import pytest

from harness.common.errors import UsageError
from harness.common.process import PARENT_ENV
from harness.corpus.executor import LocalExecutor, make_executor
from harness.corpus.supervisor import Lane, Worker


def test_make_executor_names_the_kinds_it_knows():
    assert isinstance(make_executor(), LocalExecutor)
    with pytest.raises(UsageError, match="executor 'slurm': not one of local, ray"):
        make_executor("slurm")


def test_local_lanes_reuse_a_worker_unless_fresh(tmp_path):
    lane = Lane(python=sys.executable, env=dict(os.environ))
    with make_executor().open_lane(lane, tmp_path / "w.log") as runner:
        assert isinstance(runner.worker, Worker) and not runner.worker.alive
    assert make_executor(fresh_process=True).open_lane(lane, tmp_path / "w.log").worker is None
    assert make_executor().open_lane(lane).worker is None       # no worker log: none


def test_a_command_runs_to_completion_into_its_log(tmp_path):
    lane = Lane(python=sys.executable, env=dict(os.environ))
    log = tmp_path / "card.log"
    cmd = [sys.executable, "-c", f"import os; print(os.environ['{PARENT_ENV}']); exit(3)"]
    with make_executor().open_lane(lane) as runner:
        attempt = runner.run_command(cmd, log)
    assert (attempt.rc, attempt.log, attempt.run_dir) == (3, log, None)
    assert log.read_text() == f"{os.getpid()}\n"      # no command line; ends with this one
