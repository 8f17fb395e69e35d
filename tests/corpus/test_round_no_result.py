"""A side whose new process never comes up (twins: every run is one) fails its round: zlh ab
says why (the worker log's reason, in the run's bench.log), status.tsv records no result
(125), not a stop, so `zlh ab --rescore` fails the op as the A/B did, and no process is left."""
import os
import stat
import sys

import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.runs import NO_RESULT_RC
from harness.cli import main
from harness.corpus.rounds import RUN_LINE, TwinsRounds
from slow_add import slow_add_plan

REFUSAL = "RuntimeError: this interpreter starts no worker"


def wrapped_python(tmp_path, name: str, case: str) -> str:
    """An interpreter that runs everything as sys.executable does, but for the command lines
    the shell `case` item `case` matches."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\ncase \"$*\" in\n  {case};;\nesac\n"
                    f"exec {sys.executable} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def no_worker_python(tmp_path) -> str:
    """An interpreter that runs everything but a worker, which crashes as it starts (zlh's
    import check passes)."""
    crash = "raise RuntimeError('this interpreter starts no worker')"
    return wrapped_python(tmp_path, "python-no-worker",
                          f"*harness.corpus.worker*) exec {sys.executable} -c \"{crash}\"")


@pytest.mark.e2e
def test_a_side_whose_process_never_starts_fails_live_and_rescored(tmp_path):
    runner = TwinsRounds(shift_max_bytes=1 << 16, spares=1)
    plan = slow_add_plan(tmp_path, runner, rounds=2)
    plan.b.python = no_worker_python(tmp_path)
    lines: list[str] = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert code == 1 and not reports, lines
    said = next(line for line in lines if "round 1 side B failed" in line)
    assert f"rc={NO_RESULT_RC}" in said and REFUSAL in said, said
    root = tmp_path / "ab"
    rows = [line.split("\t") for line in (root / "status.tsv").read_text().splitlines()[1:]]
    assert [(r[0], r[2], r[3]) for r in rows] == [("0", "A", "0"), ("1", "A", "0"),
                                                   ("1", "B", str(NO_RESULT_RC))]
    assert REFUSAL in (root / "add" / "r1_B" / "bench.log").read_text()
    ran = [line for line in (root / "worker_B.log").read_text().splitlines()
           if line.startswith(RUN_LINE.format("twins"))]
    assert len(ran) == 1 and "no spare became ready" in ran[0], ran
    again = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert again.exit_code == 1, again.output
    assert "round 1 failed (side B has no run, exit status 125 (its process gave no result))" \
        in again.output, again.output
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and
                _cmdline(pid).count(str(root)) and "harness.corpus.worker" in _cmdline(pid)]


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def bench_python(tmp_path, ending: str) -> str:
    """An interpreter whose `zlh bench` of round 2 says a line and ends with the shell command
    `ending`; everything else (round 1, zlh's checks) runs."""
    return wrapped_python(tmp_path, "python-bench-ends",
                          f"*\" bench \"*/r2_B*) echo 'the op ends here'; {ending}")


@pytest.mark.e2e
@pytest.mark.parametrize("ending, rc, said", [
    # its own 124 is no timeout: no result (125), said in its log
    ("exit 124", NO_RESULT_RC, "its process gave no result"),
    # killed alone (as out of memory) while the A/B went on: a failure, though the last run
    ("kill -9 $$", -9, "exit status -9")])
def test_a_fresh_round_that_ends_by_itself_fails_live_and_rescored(tmp_path, ending, rc, said):
    plan = slow_add_plan(tmp_path, None, rounds=2)
    plan.b.python = bench_python(tmp_path, ending)
    lines: list[str] = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert code == 1 and not reports, lines
    root = tmp_path / "ab"
    rows = [line.split("\t") for line in (root / "status.tsv").read_text().splitlines()[1:]]
    assert [(r[0], r[2], r[3]) for r in rows] == [   # round 2 in ABBA order: B first
        ("1", "A", "0"), ("1", "B", "0"), ("2", "B", str(rc))], rows
    log = (root / "add" / f"r{rows[-1][0]}_B" / "bench.log").read_text().splitlines()
    assert "the op ends here" in log
    if rc == NO_RESULT_RC:
        assert log[-1] == "zlh: the process exited with status 124 without a result"
    again = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert again.exit_code == 1, again.output          # not a report of round 1 alone
    assert "timed out" not in again.output and said in again.output, again.output
