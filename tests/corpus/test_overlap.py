"""Overlap on a device lane (--overlap): a warm spare makes a replacement free, two ops (or
--overlap-width) run at once, timed sections kept apart, units start in order, an attempt that
ran beside another and failed runs again alone, and the fault ops keep their statuses."""
from __future__ import annotations

import csv
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FAST, FAULT_OP_TIMEOUT, ROOT
from harness.cli import main
from harness.common.errors import EXIT_OK, EXIT_POISONED
from harness.corpus import standby
from harness.corpus.executor import OpWork, make_executor
from harness.corpus.units import OverlapLane
from harness.corpus.outcome import CRASH, FAIL, PASS, TIMEOUT, TIMEOUT_RC, Attempt
from harness.corpus.supervisor import Lane
from harness.measure.device_lock import LOCK_DIR_ENV
from harness.run.options import BenchOptions

# Enough cases per op that two ops whose workers became ready a second apart still overlap.
SHAPES = ("add: [[64], [128], [256], [512], [1024], [2048], [4096], [8192]]\n"
          "softmax: [[4, 64], [8, 64], [16, 64], [32, 64], [64, 64], [128, 64]]\n"
          "mm: [[16, 16, 16], [32, 32, 32]]\n")
ONE_CASE = "add: [[64]]\nsoftmax: [[4, 64]]\nmm: [[16, 16, 16]]\n"   # runs timed one at a time


@pytest.fixture(autouse=True)
def private_locks(tmp_path, monkeypatch):
    """The device locks of these tests' lanes in their own folder (not the machine's)."""
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))


def shapes(tmp_path: Path, text: str = SHAPES) -> Path:
    (tmp_path / "shapes.yaml").write_text(text)
    return tmp_path / "shapes.yaml"


def work(tmp_path: Path, op: str, name: str) -> OpWork:
    out = tmp_path / name
    out.mkdir(parents=True, exist_ok=True)
    options = BenchOptions.from_flat(adapter="builtin", backend="cpu", shapes=str(shapes(tmp_path)),
                                     warmup_ms=1.0, min_samples=3, min_time_ms=0.0,
                                     max_time_ms=20.0, out=str(out))
    return OpWork(op, options, out / "run.attempt1.log", out, 300.0)


def test_a_replaced_worker_is_the_warm_spare_and_costs_no_start(tmp_path):
    lane = Lane(python=sys.executable, env={**os.environ, "PYTHONPATH": str(ROOT)})
    with make_executor(overlap=True).open_lane(lane, tmp_path / "w.log") as runner:
        assert isinstance(runner, OverlapLane) and runner.slots == 2
        first = runner.run_op(work(tmp_path, "add", "one"))
        assert first.rc == EXIT_OK, first.log.read_text()
        assert runner.pool.spare_ready.wait(240)     # the spare has said it is ready
        runner.renew()                               # a retry: the next op needs a new worker
        second = runner.run_op(work(tmp_path, "add", "two"))
        assert second.rc == EXIT_OK, second.log.read_text()
        assert second.worker_pid != first.worker_pid
        assert second.start_s < 0.5 < first.start_s  # promoted: nothing left to start
        assert first.import_s < 0.5                  # the spare imported before it was ready
        assert runner.pool.starts == 3               # the first, its spare, the spare's spare
        spans = [line.split() for line in (tmp_path / "w.log").read_text().splitlines()
                 if line.startswith(standby.SPARE_LINE)]
        assert second.worker_pid in [int(words[4]) for words in spans]   # its start, logged
        assert all(float(words[6]) <= float(words[8]) for words in spans)  # from … to …
        info = json.loads((second.run_dir / "run.json").read_text())
        assert info["device_lock"]["key"] == "cpu-index 0"


def test_a_cold_worker_says_what_its_first_op_spent_importing(tmp_path):
    lane = Lane(python=sys.executable, env={**os.environ, "PYTHONPATH": str(ROOT)})
    with make_executor().open_lane(lane, tmp_path / "w.log") as runner:
        first = runner.run_op(work(tmp_path, "add", "one"))
        second = runner.run_op(work(tmp_path, "add", "two"))
    assert first.rc == second.rc == EXIT_OK
    assert first.import_s > 0.1 and second.import_s < 0.05     # torch came with the first


def test_ops_that_time_run_one_at_a_time_with_overlap(tmp_path):
    """A run that times has no neighbour: under --overlap a timed batch's runs never cross
    (what overlaps is untimed work only: the screen's verdict pass, test_screen_timing)."""
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                       "--shapes", str(shapes(tmp_path)), *FAST, "--overlap",
                                       "--ops", "add,softmax,mm", "--out",
                                       str(tmp_path / "b"), "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b/batch.json").read_text())["overlap"] is True
    runs = [json.loads(p.read_text()) for p in (tmp_path / "b").glob("*/*/run.json")]
    assert len(runs) == 3
    spans = sorted(run["device_lock"]["run_span"] for run in runs)
    assert all(one[1] <= after[0] for one, after in zip(spans, spans[1:])), spans
    assert len({run["pid"] for run in runs}) == 1      # one worker (a spare stays behind it)


def test_a_unit_that_times_waits_for_its_neighbours_and_starts_none_beside_it(tmp_path):
    """OverlapLane: an untimed unit runs beside a running one; a timed unit waits until
    nothing runs, and nothing starts beside it."""
    lane = OverlapLane(Lane(python=sys.executable, env={}), None, slots=2)
    log, release = [], {name: threading.Event() for name in ("slow", "timed", "late")}

    def once(work):
        log.append(("start", work.op))
        release[work.op].wait(30)
        log.append(("end", work.op))
        return Attempt(EXIT_OK, 0.0, work.log, None)
    lane._once = once

    def unit(op, timing):
        item = work(tmp_path, "add", op)
        item = OpWork(op, item.options.replace(timing=timing), item.log, item.out, 300.0)
        return threading.Thread(target=lane.run_op, args=(item,))
    threads = [unit("slow", False), unit("timed", True), unit("late", False)]
    threads[0].start()
    wait_for(lambda: ("start", "slow") in log)
    threads[1].start()
    wait_for(lambda: lane.turns._queued == 1)          # the timed unit waits for "slow"
    threads[2].start()                                 # queued behind the timed unit
    for name in ("slow", "timed", "late"):
        release[name].set()
    for thread in threads:
        thread.join(30)
    # the timed unit started once "slow" had ended; "late" once the timed one had
    assert log == [("start", "slow"), ("end", "slow"), ("start", "timed"), ("end", "timed"),
                   ("start", "late"), ("end", "late")]


def wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.time() + seconds
    while not condition() and time.time() < deadline:
        time.sleep(0.001)
    assert condition()


@pytest.mark.e2e
def test_the_fault_ops_keep_their_statuses_with_overlap(tmp_path):
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                       "--shapes", str(shapes(tmp_path, ONE_CASE)), *FAST,
                                       "--overlap", "--ops", "add,fault_raise,fault_abort,"
                                       "fault_hang,softmax", "--op-timeout", FAULT_OP_TIMEOUT,
                                       "--out", str(tmp_path / "b")])
    assert result.exit_code == 1, result.output
    with open(tmp_path / "b/ops_status.csv", newline="") as handle:
        rows = {r["op"]: r for r in csv.DictReader(handle)}
    assert list(rows) == ["add", "fault_raise", "fault_abort", "fault_hang", "softmax"]
    assert {op: r["status"] for op, r in rows.items()} == {
        "add": PASS, "fault_raise": FAIL, "fault_abort": CRASH, "fault_hang": TIMEOUT,
        "softmax": PASS}
    assert rows["fault_raise"]["notes"] == "retry_rc=1->1"
    assert rows["fault_abort"]["notes"] == "retry_rc=-6->-6"
    assert "SIGABRT" in rows["fault_abort"]["reason"]


# ---- the lane's bookkeeping, without processes ------------------------------------------
def test_units_start_in_order_two_at_a_time():
    started, release, order = threading.Event(), threading.Event(), []

    def one(item) -> bool:
        order.append(item)
        if item == 1:
            started.set()
            assert release.wait(30)          # item 2 starts while item 1 still runs
        if item == 2:
            assert started.is_set()
            release.set()
        return item != 4                     # a False answer: nothing after 4 starts
    standby.in_order([1, 2, 3, 4, 5, 6], 2, one, threading.Event())
    assert order[:2] == [1, 2] and sorted(order) == [1, 2, 3, 4, 5][:len(order)]
    assert 6 not in order


def test_which_attempts_run_again_alone():
    turns = standby.Turns()
    a, b = turns.begin(), turns.begin()
    turns.end(a, 1)
    turns.end(b, EXIT_OK)
    assert standby.second_look(a) and not standby.second_look(b)
    alone = turns.begin()
    turns.end(alone, 1)
    assert not standby.second_look(alone)              # nothing ran beside it
    slow, clean = turns.begin(), turns.begin()
    turns.end(clean, EXIT_OK)
    turns.end(slow, TIMEOUT_RC)
    assert not standby.second_look(slow)  # its own time ran out: waits for the device apart
    stall, clean = turns.begin(), turns.begin()
    turns.end(clean, EXIT_OK)
    turns.end(stall, TIMEOUT_RC)   # (the stall rule)
    assert not standby.second_look(stall)      # waiting beats: a stall is the op's own ...
    slow2, crashed = turns.begin(), turns.begin()
    turns.end(crashed, -9)                       # a neighbour killed by a signal
    turns.end(slow2, TIMEOUT_RC)
    assert standby.second_look(slow2)            # beside a crash: not surely its own
    stall2, poisoned = turns.begin(), turns.begin()
    turns.end(poisoned, EXIT_POISONED)
    turns.end(stall2, TIMEOUT_RC)   # (the stall rule)
    assert standby.second_look(stall2) and standby.second_look(poisoned)   # ... or theirs
    usage, other = turns.begin(), turns.begin()
    turns.end(usage, 2)
    turns.end(other, 1)
    assert not standby.second_look(usage)


def timed_out_attempt(folder: Path, lock: dict | None) -> Attempt:
    """A TIMEOUT attempt whose interrupted run.json has `lock` as its device_lock (None: the
    run was killed before writing one)."""
    run = folder / f"run{len(list(folder.iterdir()))}"
    run.mkdir()
    if lock is not None:
        (run / "run.json").write_text(json.dumps({"op": "conv", "status": "interrupted",
                                                  "device_lock": lock}))
    return Attempt(TIMEOUT_RC, 95.0, run / "log", run)


def test_a_timeout_spent_on_its_own_compiles_keeps_its_status(tmp_path):
    """Beside a neighbour that timed out, a TIMEOUT runs again alone only when its run did
    enough on the device for that neighbour to have held it up (run.json's device_lock)."""
    def attempt(lock):
        return timed_out_attempt(tmp_path, lock)
    compiling = attempt({"held_s": 12.5, "wait_s": 25.7})     # 77 s of compiles, its own
    assert not standby.could_be_held_up(compiling, 90.0, 360.0)
    assert standby.could_be_held_up(attempt({"held_s": 30.0, "wait_s": 0.0}), 90.0, 360.0)
    assert standby.could_be_held_up(attempt({"held_s": 1.0, "wait_s": 360.0}), 90.0, 360.0)
    assert standby.could_be_held_up(attempt(None), 90.0, 360.0)      # killed before: not known
    turns = standby.Turns()
    slow, neighbour = turns.begin(), turns.begin()
    turns.end(neighbour, TIMEOUT_RC)
    turns.end(slow, TIMEOUT_RC)
    assert standby.second_look(slow) and not standby.second_look(slow, held_up=lambda: False)
    failed, other = turns.begin(), turns.begin()
    turns.end(other, TIMEOUT_RC)
    turns.end(failed, 1)
    def never_asked() -> bool:
        raise AssertionError("only a TIMEOUT is judged by its time")
    assert standby.second_look(failed, held_up=never_asked)


def test_a_timeout_that_held_the_device_little_is_no_hang_to_its_neighbours(tmp_path):
    """Seven linalg_lu ops compiled for 159 s each beside each other, holding the device a
    few seconds: their TIMEOUTs are no hang, so a neighbour's own TIMEOUT beside them keeps its
    status, while beside a TIMEOUT that held the device long (or left no figures) it does
    not."""
    def attempt(lock):
        return timed_out_attempt(tmp_path, lock)
    compiling = attempt({"held_s": 6.5, "wait_s": 69.7})
    hung = attempt({"held_s": 40.0, "wait_s": 0.0})
    assert not standby.held_device_long(compiling, 90.0)
    assert standby.held_device_long(hung, 90.0) and standby.held_device_long(attempt(None), 90.0)
    for neighbour, again in ((compiling, False), (hung, True), (attempt(None), True)):
        turns = standby.Turns()
        mine, other = turns.begin(), turns.begin()
        turns.end(other, TIMEOUT_RC, standby.held_device_long(neighbour, 90.0))
        turns.end(mine, TIMEOUT_RC)          # its own figures unknown: it could be held up
        assert standby.second_look(mine) is again
    turns = standby.Turns()
    mine, crashed = turns.begin(), turns.begin()
    turns.end(crashed, -9, held_long=False)   # a crash is bad whatever it held
    turns.end(mine, TIMEOUT_RC)
    assert standby.second_look(mine)


def test_alone_waits_for_what_runs_and_holds_back_new_starts():
    turns = standby.Turns()
    running = turns.begin()
    entered, began = threading.Event(), threading.Event()

    def solo():
        with turns.alone():
            entered.set()
            assert not began.is_set()            # nothing started beside it
    thread = threading.Thread(target=solo)
    thread.start()
    wait_for(lambda: turns._queued == 1)         # it waits for `running`
    assert not entered.is_set()
    late = threading.Thread(target=lambda: (turns.end(turns.begin(), EXIT_OK), began.set()))
    late.start()
    turns.end(running, EXIT_OK)
    thread.join(30)
    late.join(30)
    assert entered.is_set() and began.is_set()


def test_a_screen_overlaps_its_pairs_and_a_resume_switches_it_off(tmp_path):
    cli = ["screen", "--adapter", "builtin", "--backend", "cpu", "--shapes",
           str(shapes(tmp_path, ONE_CASE)), *FAST]
    result = CliRunner().invoke(main, [*cli, "--ops", "add,softmax", "--switch", "X=0,1",
                                       "--overlap", "--root", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert ("timing all, a warm spare worker per side (every run times: one at a time, each "
            "after a cool-down of the device)") in result.output
    assert json.loads((tmp_path / "s/screen.json").read_text())["batch"]["overlap"] is True
    rows = (tmp_path / "s/screen.tsv").read_text().splitlines()[1:]
    assert sorted(r.split("\t")[0] for r in rows) == ["add", "softmax"]
    infos = [json.loads(p.read_text()) for p in (tmp_path / "s").glob("[AB]/*/*/run.json")]
    assert len(infos) == 4 and all("device_lock" in i for i in infos)
    assert len({i["pid"] for i in infos}) == 2       # every run times: a worker per side
    result = CliRunner().invoke(main, ["screen", "--resume", str(tmp_path / "s"),
                                       "--no-overlap"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "s/screen.json").read_text())["batch"]["overlap"] is False
    for side in "AB":
        assert json.loads((tmp_path / "s" / side / "batch.json").read_text())["overlap"] is False
    result = CliRunner().invoke(main, ["screen", "--resume", str(tmp_path / "s"), "--overlap",
                                       "--overlap-width", "3"])
    assert result.exit_code == 0, result.output
    batch = json.loads((tmp_path / "s/screen.json").read_text())["batch"]
    assert (batch["overlap"], batch["overlap_width"]) == (True, 3)
    for side in "AB":
        plan = json.loads((tmp_path / "s" / side / "batch.json").read_text())
        assert (plan["overlap"], plan["overlap_width"]) == (True, 3)


def test_a_batch_resume_switches_overlap_and_records_it(tmp_path):
    cli = ["batch", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes(tmp_path)),
           *FAST, "-q"]
    result = CliRunner().invoke(main, [*cli, "--ops", "mm", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b/batch.json").read_text())["overlap"] is False
    result = CliRunner().invoke(main, ["batch", "--resume", str(tmp_path / "b"), "--overlap"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b/batch.json").read_text())["overlap"] is True


def test_units_start_in_order_as_many_at_a_time_as_the_width():
    """--overlap-width 3: three units run at once, the fourth waits for one of them."""
    running, peak, guard = [0], [0], threading.Lock()
    three, release = threading.Barrier(3, timeout=30), threading.Event()

    def one(item) -> bool:
        with guard:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        if item <= 3:
            three.wait()                     # 1, 2 and 3 all started before any ends
            release.set()
        with guard:
            running[0] -= 1
        return True
    standby.in_order([1, 2, 3, 4, 5], 3, one, threading.Event())
    assert peak[0] == 3 and release.is_set()
    lane = Lane(python=sys.executable, env=dict(os.environ))
    assert make_executor(overlap=True, overlap_width=3).open_lane(lane).slots == 3


def test_the_overlap_width_is_recorded_and_switched_on_resume(tmp_path):
    cli = ["batch", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes(tmp_path)),
           *FAST, "-q"]
    result = CliRunner().invoke(main, [*cli, "--ops", "mm", "--overlap-width", "3",
                                       "--out", str(tmp_path / "no")])
    assert result.exit_code == 2 and "add --overlap" in result.output
    assert not (tmp_path / "no").exists()
    result = CliRunner().invoke(main, [*cli, "--ops", "add,softmax,mm", "--overlap",
                                       "--overlap-width", "3", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    plan = json.loads((tmp_path / "b/batch.json").read_text())
    assert (plan["overlap"], plan["overlap_width"]) == (True, 3)
    runs = [json.loads(p.read_text()) for p in (tmp_path / "b").glob("*/*/run.json")]
    sections = [(run["pid"], s) for run in runs for s in run["device_lock"]["sections"]]
    assert len(runs) == 3 and not any(
        a[0] != b[0] and a[1][0] < b[1][1] and b[1][0] < a[1][1]
        for a in sections for b in sections)              # timed sections never cross
    result = CliRunner().invoke(main, ["batch", "--resume", str(tmp_path / "b"),
                                       "--overlap-width", "4"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b/batch.json").read_text())["overlap_width"] == 4
    result = CliRunner().invoke(main, ["batch", "--resume", str(tmp_path / "b"),
                                       "--no-overlap", "--overlap-width", "2"])
    assert result.exit_code == 2 and "add --overlap" in result.output


@pytest.mark.parametrize("command", ["batch", "screen"])
def test_overlap_is_refused_on_ray(tmp_path, command):
    """A Ray actor holds its GPU alone: overlap's lock on this host does not go with it."""
    where = ["--out" if command == "batch" else "--root", str(tmp_path / "r")]
    switch = ["--switch", "X=0,1"] if command == "screen" else []
    result = CliRunner().invoke(main, [command, "--adapter", "builtin", "--backend", "cpu",
                                       "--ops", "add", *switch, "--executor", "ray",
                                       "--overlap", "--overlap-width", "3", *where])
    assert result.exit_code == 2 and "--executor local only" in result.output, result.output
    assert not (tmp_path / "r").exists()


def test_a_refused_resume_writes_nothing(tmp_path):
    """--overlap-width on a resume of a root without overlap, or overlap on a resume that runs
    on Ray: refused (exit 2) before batch.json changes."""
    cli = ["batch", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes(tmp_path)),
           *FAST, "-q"]
    result = CliRunner().invoke(main, [*cli, "--ops", "mm", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    before = (tmp_path / "b/batch.json").read_text()
    for extra, said in ((["--overlap-width", "4"], "add --overlap"),
                        (["--overlap", "--executor", "ray"], "add --no-overlap")):
        result = CliRunner().invoke(main, ["batch", "--resume", str(tmp_path / "b"), *extra])
        assert result.exit_code == 2 and said in result.output, result.output
        assert (tmp_path / "b/batch.json").read_text() == before
