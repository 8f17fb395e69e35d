"""The stall rule: an op that finishes no case and compiles nothing for --stall-timeout seconds
ends as TIMEOUT then, with a stated reason and what it measured kept; an op that keeps
finishing cases, however slowly, is left alone; --op-timeout stays the hard cap."""
from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.corpus.batch import BatchPlan
from harness.corpus.outcome import PASS, TIMEOUT, TIMEOUT_RC, judge
from harness.corpus.stall import DEFAULT_STALL_S, StallWatch, run_watched
from harness.corpus.supervisor import Lane, Worker
from harness.run.heartbeat import HEARTBEAT
from harness.run.options import BenchOptions
from conftest import FAST, ROOT
from stand_in import stand_in_worker as make_stand_in
from cut_short_cases import CASES

# A stand-in worker speaking the worker protocol: `beats` heartbeats `every` seconds apart in
# a run directory of its own under the job's `out` (with `waiting`, its lock-wait file says
# it spent them waiting for the device's lock), then (unless `hang`) its answer.
STAND_IN = textwrap.dedent("""
    import json, os, sys, time
    print(json.dumps({"ready": True, "pid": os.getpid(), "protocol": 2}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        run = os.path.join(job["out"], job["op"] + "_1")
        os.makedirs(run)
        with open(os.path.join(run, "run.json"), "w") as handle:
            json.dump({"op": job["op"], "status": "running"}, handle)
        for k in range(job["beats"]):
            open(os.path.join(run, "heartbeat"), "a").close()
            os.utime(os.path.join(run, "heartbeat"))
            if job.get("waiting"):    # all of it spent waiting for the device's lock,
                with open(os.path.join(run, "lock-wait.tmp"), "w") as handle:
                    handle.write(str(k * job["every"]))     # replaced whole, as zlh's runs do
                os.replace(os.path.join(run, "lock-wait.tmp"), os.path.join(run, "lock-wait"))
            time.sleep(job["every"])
        while job.get("hang"):
            time.sleep(1)
        print(json.dumps({"op": job["op"], "rc": 0, "message": "", "pid": os.getpid(),
                          "write_failure": ""}), flush=True)
""")


def stand_in(tmp_path) -> Worker:
    return make_stand_in(tmp_path, STAND_IN)


def job(tmp_path: Path, op: str, **fields):
    out = tmp_path / op
    out.mkdir()
    log = tmp_path / f"{op}.log"
    log.write_text("")
    return {"op": op, "args": [], "log": str(log), "out": str(out), **fields}, log, out


# The stall timeout of these stand-ins is STALL_S against beats 0.2-0.3 s apart: a loaded host
# may pause a process for a good part of a second, which must not read as a stall.
STALL_S = 2.0


def test_a_slow_op_that_keeps_beating_is_not_stalled_and_a_silent_one_is(tmp_path):
    worker = stand_in(tmp_path)
    try:
        slow, log, out = job(tmp_path, "slow", beats=10, every=0.3)     # 3 s, never 2 s idle
        attempt = worker.run(slow, 60, log, out, stall_s=STALL_S)
        assert attempt.rc == 0 and attempt.stalled_s is None and attempt.elapsed_s > STALL_S
        hang, log, out = job(tmp_path, "hang", beats=2, every=0.2, hang=True)
        started = time.time()
        attempt = worker.run(hang, 60, log, out, stall_s=STALL_S)
        assert time.time() - started < 20 and attempt.rc == TIMEOUT_RC
        assert attempt.stalled_s == STALL_S and not worker.alive
    finally:
        worker.stop()
    info = json.loads((out / "hang_1/run.json").read_text())
    assert info["reason"] == "stalled: no case finished and no compile for 2 s"
    assert info["stalled_s"] == STALL_S
    outcome = judge(attempt, 60)
    assert outcome.status == TIMEOUT
    assert outcome.reason.startswith("stalled: no case finished and no compile for 2 s "
                                     "(the op timeout is 60 s)")


def test_the_op_timeout_stays_the_cap_and_no_stall_timeout_means_none(tmp_path):
    worker = stand_in(tmp_path)
    try:
        beating, log, out = job(tmp_path, "beating", beats=100, every=0.2)
        attempt = worker.run(beating, 1.5, log, out, stall_s=STALL_S)
        assert attempt.rc == TIMEOUT_RC and attempt.stalled_s is None
        assert "op timeout" in judge(attempt, 1.5).reason
        quiet, log, out = job(tmp_path, "quiet", beats=1, every=2.0)
        assert worker.run(quiet, 60, log, out, stall_s=None).rc == 0
    finally:
        worker.stop()


def test_time_spent_waiting_for_the_device_does_not_count_against_the_op_timeout(tmp_path):
    """Under overlap an op may wait for a neighbour's device work: its runs' lock-wait files
    move the op timeout's deadline; the same op without waits times out."""
    worker = stand_in(tmp_path)
    try:
        waiting, log, out = job(tmp_path, "waiting", beats=10, every=0.25, waiting=True)
        attempt = worker.run(waiting, 1.5, log, out, stall_s=60, wait_cap_s=60)
        assert attempt.rc == 0 and attempt.elapsed_s > 2.2          # past 1.5 s, not cut
        busy, log, out = job(tmp_path, "busy", beats=10, every=0.25)
        assert worker.run(busy, 1.5, log, out, stall_s=60, wait_cap_s=60).rc == TIMEOUT_RC
        # what it forgives is capped (a holder that never lets go cannot keep an op forever)
        capped, log, out = job(tmp_path, "capped", beats=40, every=0.25, waiting=True)
        attempt = worker.run(capped, 1.0, log, out, stall_s=60, wait_cap_s=1.0)
        assert attempt.rc == TIMEOUT_RC and 2.0 <= attempt.elapsed_s < 6
        # without overlap (no cap given) the op timeout is the op's whole time
        plain, log, out = job(tmp_path, "plain", beats=10, every=0.25, waiting=True)
        assert worker.run(plain, 1.0, log, out, stall_s=60).rc == TIMEOUT_RC
    finally:
        worker.stop()
    out = tmp_path / "fresh"
    out.mkdir()
    wait = (f"mkdir -p {out}/r; i=0; while [ $i -lt 10 ]; do echo $i.25 > {out}/r/lock-wait; "
            f"sleep 0.25; i=$((i+1)); done")
    ended = run_watched(["sh", "-c", wait], dict(os.environ), tmp_path / "f.log", 1.5,
                        StallWatch(out, set(), None, wait_cap_s=60))
    assert ended.rc == 0 and ended.elapsed_s > 2.2


def test_a_fresh_process_is_held_to_the_same_rule(tmp_path):
    out = tmp_path / "op"
    out.mkdir()
    beat = (f"mkdir -p {out}/r; i=0; while [ $i -lt 10 ]; do touch {out}/r/{HEARTBEAT}; "
            f"sleep 0.3; i=$((i+1)); done")                         # 3 s, never 2 s idle
    watch = StallWatch(out, set(), STALL_S)
    ended = run_watched(["sh", "-c", beat], dict(os.environ), tmp_path / "a.log", 60, watch)
    assert ended.rc == 0 and not watch.fired
    watch = StallWatch(out, {out / "r"}, STALL_S)
    ended = run_watched(["sh", "-c", f"mkdir -p {out}/s; touch {out}/s/{HEARTBEAT}; sleep 60"],
                        dict(os.environ), tmp_path / "b.log", 60, watch)
    assert ended.rc == TIMEOUT_RC and watch.fired and ended.elapsed_s < 20


def test_a_batch_records_its_stall_timeout_and_an_older_root_gets_the_default(tmp_path):
    plan = BatchPlan(root=tmp_path, items=[], devices=[0], options=BenchOptions(),
                     stall_timeout_s=42.0)
    doc = plan.to_dict()
    assert BatchPlan.from_dict(tmp_path, doc).stall_timeout_s == 42.0
    del doc["stall_timeout_s"]
    assert BatchPlan.from_dict(tmp_path, doc).stall_timeout_s == DEFAULT_STALL_S




@pytest.mark.e2e
def test_real_hangs_end_in_seconds_with_their_finished_cases_kept(tmp_path):
    """fault_hang (builtin) and an op that hangs in its third case, in a real worker: each
    ends as TIMEOUT once nothing happened for the stall timeout, far below the op timeout;
    the cases finished before the hang stay in its results."""
    (tmp_path / "hang_cases.py").write_text(CASES)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    worker = Worker(Lane(python=sys.executable, env=env), tmp_path / "worker.log")
    builtin = ["--adapter", "builtin", "--backend", "cpu", *FAST]
    user = ["--cases", "hang_cases:cases", "--backend", "cpu", *FAST]
    attempts = {}
    try:
        for op, args, stall_s in (("add", builtin, None), ("fault_hang", builtin, 3.0),
                                  ("fault_raise", builtin, None), ("hang_late", user, 3.0)):
            out = tmp_path / op
            log = tmp_path / f"{op}.log"
            job = {"op": op, "args": [*args, "--out", str(out)], "log": str(log)}
            started = time.time()
            attempts[op] = worker.run(job, 300, log, out, stall_s=stall_s)
            attempts[op].elapsed_s = time.time() - started
    finally:
        worker.stop()
    assert judge(attempts["add"], 300).status == PASS
    for op in ("fault_hang", "hang_late"):
        outcome = judge(attempts[op], 300)
        assert outcome.status == TIMEOUT and attempts[op].elapsed_s < 60, (op, outcome)
        assert "stalled: no case finished and no compile for 3 s" in outcome.reason
        info = json.loads((outcome.run_dir / "run.json").read_text())
        assert info["stalled_s"] == 3.0 and info["reason"].startswith("stalled")
    kept = judge(attempts["hang_late"], 300)
    assert kept.rows_success == 2 and kept.rows_total == 2


def test_a_batch_hands_its_stall_timeout_to_every_attempt(tmp_path):
    from harness.corpus.batch import Batch
    from harness.corpus.executor import LaneRunner
    from harness.corpus.outcome import Attempt

    class Recorder(LaneRunner):
        def __init__(self):
            super().__init__(Lane())
            self.works = []

        def run_op(self, work):
            self.works.append(work)
            return Attempt(0, 0.1, work.log, None)

        def run_command(self, cmd, log, timeout_s=None):
            raise AssertionError("no command here")

    options = BenchOptions(adapter="builtin", backend="cpu")
    for stall_s, handed in ((42.0, 42.0), (0.0, None)):
        plan = BatchPlan(root=tmp_path / str(stall_s), items=[], devices=[0], options=options,
                         stall_timeout_s=stall_s)
        runner = Recorder()
        Batch(plan, lambda _: None, None, resume=False)._attempt("add", None, Lane(), runner, 1)
        assert runner.works[0].stall_s == handed


def test_a_screen_side_that_stalled_says_so_in_its_verdict():
    from harness.corpus.outcome import Outcome
    from harness.corpus.verdict import NO_ROWS, decide
    stalled = Outcome(TIMEOUT, TIMEOUT_RC, 3.0, "stalled: no case finished and no compile "
                      "for 2 s (the op timeout is 90 s): a hang, not a verdict on the op")
    v = decide("op", stalled, None)
    assert v.verdict == NO_ROWS and v.note.startswith("side A stalled: a time problem")


def test_progress_is_a_heartbeat_that_moved_whatever_clock_stamped_it(tmp_path):
    now = [1000.0]
    run = tmp_path / "op" / "r"
    run.mkdir(parents=True)
    beat = run / HEARTBEAT
    beat.touch()
    watch = StallWatch(tmp_path / "op", set(), 5.0, clock=lambda: now[0])
    os.utime(beat, ns=(1, 1))                  # stamped by a clock decades behind
    assert not watch.stalled()
    now[0] += 4
    os.utime(beat, ns=(2, 2))                  # it moved: progress
    assert not watch.stalled()
    now[0] += 4
    assert not watch.stalled()                 # 4 s since it moved
    now[0] += 1.5
    assert watch.stalled() and watch.fired
