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


def no_worker_python(tmp_path) -> str:
    """An interpreter that runs everything but a worker, which crashes as it starts (zlh's
    import check passes)."""
    path = tmp_path / "python-no-worker"
    crash = "raise RuntimeError('this interpreter starts no worker')"
    path.write_text(f"#!/bin/sh\nif [ \"$2\" = harness.corpus.worker ]; then\n"
                    f"  exec {sys.executable} -c \"{crash}\"\nfi\n"
                    f"exec {sys.executable} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


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


def exits_124_python(tmp_path) -> str:
    """An interpreter whose `zlh bench` says a line and exits 124 itself, as an op's
    os._exit(124) would; everything else (zlh's checks) runs."""
    path = tmp_path / "python-exit-124"
    path.write_text(f"#!/bin/sh\nif [ \"$3\" = bench ]; then\n  echo 'the op ends here'\n"
                    f"  exit 124\nfi\nexec {sys.executable} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.e2e
def test_a_fresh_round_that_exits_124_itself_gave_no_result_and_did_not_time_out(tmp_path):
    plan = slow_add_plan(tmp_path, None, rounds=2)
    plan.b.python = exits_124_python(tmp_path)
    lines: list[str] = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert code == 1 and not reports, lines
    root = tmp_path / "ab"
    rows = [line.split("\t") for line in (root / "status.tsv").read_text().splitlines()[1:]]
    assert (rows[-1][2], rows[-1][3]) == ("B", str(NO_RESULT_RC)), rows
    log = (root / "add" / f"r{rows[-1][0]}_B" / "bench.log").read_text().splitlines()
    assert log[-2:] == ["the op ends here",
                        "zlh: the process exited with status 124 without a result"]
    again = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert again.exit_code == 1, again.output
    assert "timed out" not in again.output and "its process gave no result" in again.output
