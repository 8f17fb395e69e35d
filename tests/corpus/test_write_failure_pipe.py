"""A `zlh bench` child whose run could not write tells its parent why through a pipe: with
--fresh-process (and a product cell), run.json may say nothing (removed with its directory when
the first one could not be written; `running` when the last one fit nowhere), and the op was
judged FAIL or CRASH on a full disk instead of stopping the batch for a resume."""
from __future__ import annotations

import errno
import os
import stat
import sys

from click.testing import CliRunner

from harness.cli import main
from harness.common import parent_pipe
from harness.common.parent_pipe import WRITE_FAILURE_ENV, WriteFailurePipe
from harness.corpus.supervisor import Lane, run_fresh
from harness.store import rundir as rundir_module

from conftest import FAST


def test_a_bench_whose_first_run_json_cannot_be_written_tells_its_parent(tmp_path,
                                                                         monkeypatch):
    def full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    monkeypatch.setattr(rundir_module, "atomic_write_json", full)
    with WriteFailurePipe() as told:
        monkeypatch.setenv(WRITE_FAILURE_ENV, str(told.fds[0]))
        result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin",
                                           "--backend", "cpu", "--out", str(tmp_path / "r"),
                                           *FAST])
        assert result.exit_code == 1 and "disk full" in result.stderr
        assert WRITE_FAILURE_ENV not in os.environ          # its own children: not theirs
        assert told.reason() == "disk full"
        assert not list((tmp_path / "r").glob("*/run.json"))   # nothing else would say so
    parent_pipe.take_from_environment()                     # (this process: none again)


def test_run_fresh_takes_the_reason_the_child_told(tmp_path):
    """A child that tells (here a stand-in for `zlh bench`) and leaves no run directory: the
    attempt is a write failure; one that tells nothing is judged as before."""
    child = tmp_path / "child.py"
    child.write_text("#!" + sys.executable + "\n"
                     "import os, sys\n"
                     "sys.path.insert(0, " + repr(os.getcwd()) + ")\n"
                     "from harness.common import parent_pipe\n"
                     "parent_pipe.take_from_environment()\n"
                     "if os.environ.get('TELL'):\n"
                     "    parent_pipe.tell_parent(os.environ['TELL'])\n"
                     "sys.exit(1)\n")
    child.chmod(child.stat().st_mode | stat.S_IXUSR)
    told = run_fresh(Lane(str(child), {**os.environ, "TELL": "Read-only file system"}),
                     "add", [], 60, tmp_path / "a.log", tmp_path / "a")
    assert (told.rc, told.run_dir, told.write_failure) == (1, None, "Read-only file system")
    silent = run_fresh(Lane(str(child), dict(os.environ)), "add", [], 60, tmp_path / "b.log",
                       tmp_path / "b")
    assert (silent.rc, silent.write_failure) == (1, "")
