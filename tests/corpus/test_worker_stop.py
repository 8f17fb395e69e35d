"""A worker stopped between jobs exits at once, without the interpreter's teardown (which
with torch and a device context loaded costs the next run seconds); stopped mid-job it
unwinds as before, and at the end of its jobs (stdin closed) it exits normally."""
import json
import signal
import subprocess
import sys
import textwrap

import pytest

STARTER = textwrap.dedent("""
    import atexit, sys
    atexit.register(lambda: open(sys.argv[1], "w").write("teardown ran"))
    from harness.corpus import worker
    sys.exit(worker.main())
""")


def start(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path / "atexit")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert json.loads(proc.stdout.readline())["ready"]
    return proc


@pytest.mark.parametrize("how", ["sigterm", "eof"])
def test_a_worker_stopped_between_jobs_skips_its_teardown(tmp_path, how):
    proc = start(tmp_path)
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
        proc.stdin.close()
    else:
        proc.stdin.close()
    assert proc.wait(60) == (128 + signal.SIGTERM if how == "sigterm" else 0)
    # stopped: nothing is left to write, the teardown is skipped; its jobs done: a normal end
    assert (tmp_path / "atexit").exists() is (how == "eof")


class _Proc:
    """A launcher.Child stand-in that notes the grace it was stopped with."""

    def __init__(self, graces):
        self.graces = graces

    def stop(self, grace_s):
        self.graces.append(grace_s)


def test_a_worker_gets_the_long_grace_only_mid_job(tmp_path):
    """Mid-job SIGTERM lets the op's run be finalised (GRACE_S); between jobs there is
    nothing to finalise and the worker exits at once, so one whose op left SIGTERM ignored
    is killed after IDLE_GRACE_S, not after the seconds a finalising run gets."""
    from harness.corpus.supervisor import GRACE_S, IDLE_GRACE_S, Lane, Worker
    assert IDLE_GRACE_S < GRACE_S
    graces = []
    worker = Worker(Lane(), tmp_path / "worker.log")
    for busy in (False, True):
        worker.proc, worker.busy = _Proc(graces), busy
        worker.stop()
        assert worker.proc is None and not worker.busy
    worker.proc = _Proc(graces)
    worker.stop(0.5)                                       # a grace given is kept
    assert graces == [IDLE_GRACE_S, GRACE_S, 0.5]
