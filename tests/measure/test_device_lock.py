"""The per-device measurement lock: two processes on one device never time at once, a second
one waits for the first's timed section, different devices do not block each other, an
uncontended acquire costs well under a millisecond, and a run records what it waited."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import CPU_FAST, ROOT, lock_free
from harness.measure import device_lock
from harness.measure.device_lock import DeviceLock, for_device, lock_file_name

# A process that takes the lock of KEY under FOLDER on each line it reads: `hold [shared]`
# takes it (exclusive, or shared) and says "held", `release` lets it go; `sections N MS` times N sections of MS busy
# milliseconds each and writes their (enter, exit) to OUT.
HOLDER = r"""
import json, sys, time
from harness.measure.device_lock import for_device
folder, key, out = sys.argv[1:4]
lock = for_device(key, {"ZLH_DEVICE_LOCK_DIR": folder})
print("ready", flush=True)
for line in sys.stdin:
    words = line.split()
    if words[0] == "hold":
        print("waiting", flush=True)
        lock.acquire(shared=words[1:] == ["shared"])
        print("held", flush=True)
    elif words[0] == "release":
        lock.release()
        print("released", flush=True)
    elif words[0] == "sections":
        spans = []
        for _ in range(int(words[1])):
            with lock.section():
                enter = time.time()
                end = time.perf_counter() + float(words[2]) / 1e3
                while time.perf_counter() < end:
                    pass
                spans.append((enter, time.time()))
        json.dump({"spans": spans, "waited": lock.waited_s}, open(out, "w"))
        print("done", flush=True)
"""


def holder(tmp_path: Path, key: str, name: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "locks"), key,
                             str(tmp_path / f"{name}.json")], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "ready"
    return proc


def say(proc: subprocess.Popen, line: str) -> None:
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def test_two_processes_on_one_device_never_time_at_once(tmp_path):
    a, b = holder(tmp_path, "cpu-index 0", "a"), holder(tmp_path, "cpu-index 0", "b")
    say(a, "sections 40 2")
    say(b, "sections 40 2")
    assert a.stdout.readline().strip() == "done" and b.stdout.readline().strip() == "done"
    for proc in (a, b):
        proc.stdin.close()
        proc.wait(30)
    spans_a = json.loads((tmp_path / "a.json").read_text())["spans"]
    spans_b = json.loads((tmp_path / "b.json").read_text())["spans"]
    assert len(spans_a) == len(spans_b) == 40
    overlaps = [(x, y) for x in spans_a for y in spans_b if x[0] < y[1] and y[0] < x[1]]
    assert overlaps == []


def test_a_second_process_waits_and_another_device_does_not(tmp_path):
    first, second = holder(tmp_path, "dev-A", "first"), holder(tmp_path, "dev-A", "second")
    other = holder(tmp_path, "dev-B", "other")
    say(first, "hold")
    assert first.stdout.readline().strip() == "waiting"
    assert first.stdout.readline().strip() == "held"
    say(other, "hold")                        # another device: not blocked by `first`
    assert other.stdout.readline().strip() == "waiting"
    assert other.stdout.readline().strip() == "held"
    say(second, "hold")
    assert second.stdout.readline().strip() == "waiting"
    blocked_on_flock(second.pid)              # it waits in the kernel for `first`
    say(first, "release")
    assert first.stdout.readline().strip() == "released"
    assert second.stdout.readline().strip() == "held"
    for proc in (first, second, other):
        proc.stdin.close()
        proc.wait(30)


def blocked_on_flock(pid: int, seconds: float = 30.0) -> None:
    """Until /proc/locks shows `pid` waiting for a FLOCK (a `->` line): an event, no sleep
    guess."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        lines = Path("/proc/locks").read_text().splitlines()
        if any("->" in ln and "FLOCK" in ln and f" {pid} " in f" {ln} " for ln in lines):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never waited for the lock")


def test_an_uncontended_acquire_costs_far_less_than_a_millisecond(tmp_path):
    lock = DeviceLock(tmp_path / lock_file_name("x"), "x")
    with lock.section():
        pass                                  # the file is opened once, on the first use
    costs = []
    for _ in range(200):
        started = time.perf_counter()
        with lock.section():
            pass
        costs.append(time.perf_counter() - started)
    costs.sort()
    assert costs[len(costs) // 2] < 1e-3
    assert lock.acquires == 201 and lock.contended == 0 and lock.waited_s == 0.0
    with lock.section(), lock.section():      # re-entrant: a sweep inside a timed section
        assert lock.acquires == 202
    lock.close()


def test_no_folder_no_lock(monkeypatch):
    monkeypatch.delenv(device_lock.LOCK_DIR_ENV, raising=False)
    assert for_device("cuda-GPU-1") is None
    assert lock_file_name("cuda-GPU-1234/5 x") == "device-cuda-GPU-1234_5_x.lock"


HELD_AFTER_BLOCK_S = 0.05


def test_a_run_waits_for_the_device_and_records_the_wait(tmp_path):
    """`zlh bench` under ZLH_DEVICE_LOCK_DIR, its device's lock held by another process
    (here the test) until the run waits for it: run.json says how long it waited, and its
    device work comes after the other's, in one hold."""
    folder = tmp_path / "locks"
    held = for_device("cpu-index 0", {device_lock.LOCK_DIR_ENV: str(folder)})
    held.acquire()
    env = {**os.environ, "PYTHONPATH": str(ROOT), device_lock.LOCK_DIR_ENV: str(folder),
           "TRITON_INTERPRET": "1"}
    child = subprocess.Popen([sys.executable, "-m", "harness", "bench", "add", *CPU_FAST,
                              "--out", str(tmp_path / "out"), "-q"], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        blocked_on_flock(child.pid, 120)
        # held a known stretch more once the child waits (seen at once, its wait so far may
        # be under the record's millisecond): the wait recorded must cover it
        time.sleep(HELD_AFTER_BLOCK_S)
        released = time.time()
        held.release()
        assert child.wait(120) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
    info = json.loads(next((tmp_path / "out").glob("add_*/run.json")).read_text())
    assert info["lock_wait_s"] >= HELD_AFTER_BLOCK_S - 0.001
    assert info["device_lock"]["contended"] == 1
    assert info["device_lock"]["key"] == "cpu-index 0"
    sections = info["device_lock"]["sections"]
    assert sections and all(enter >= released - 0.01 for enter, _ in sections)
    # one hold for the run's device work (inputs, checks, every case's timed section), not
    # one per case: nothing compiles under the interpreter, so it is never let go
    assert info["device_lock"]["acquires"] == 1 and len(sections) == 1
    assert info["device_lock"]["asides"] == 0
    run_dir = next((tmp_path / "out").glob("add_*"))
    assert len((run_dir / "results.jsonl").read_text().splitlines()) > 1
    # the wait, for a supervisor's op timeout (which does not count it), as it ended
    assert float((run_dir / "lock-wait").read_text()) == pytest.approx(info["lock_wait_s"],
                                                                       abs=0.01)
    assert info["measure_s"] > 0 and info["compile_s"] >= 0 and "sweep_s" in info


def test_a_lock_folder_that_cannot_hold_the_lock_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1",
           device_lock.LOCK_DIR_ENV: str(tmp_path / "file" / "sub")}
    done = subprocess.run([sys.executable, "-m", "harness", "bench", "add", *CPU_FAST, "--out",
                           str(tmp_path / "out"), "-q"], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"zlh: {device_lock.LOCK_DIR_ENV}={tmp_path / 'file' / 'sub'}: cannot create the "
        f"device's measurement lock there")
    assert not list((tmp_path / "out").glob("add_*"))       # no run directory left behind


def test_an_ab_side_naming_a_lock_folder_that_cannot_be_is_refused_before_any_run(tmp_path):
    """Side B's environment names the folder: the A/B's checks of that side refuse it (exit
    2) before side A has run anything, as any bad input."""
    from click.testing import CliRunner
    from harness.cli import main
    (tmp_path / "file").write_text("")
    bad = tmp_path / "file" / "sub"
    done = CliRunner().invoke(main, ["ab", "add", "--adapter", "builtin", *CPU_FAST,
                                     "--env-b", f"{device_lock.LOCK_DIR_ENV}={bad}",
                                     "--root", str(tmp_path / "ab")])
    assert done.exit_code == 2, done.output
    assert f"{device_lock.LOCK_DIR_ENV}={bad}: cannot create the device's measurement lock" \
        in done.output, done.output
    assert not (tmp_path / "ab").exists()


def test_a_process_waiting_for_the_lock_keeps_saying_so(tmp_path):
    """While another process holds the device's lock, the waiting one calls `while_waiting`
    about once a second (the run's heartbeat: the stall rule must not take a wait for a
    hang), and stops calling it once it holds the lock."""
    path = tmp_path / "device-x.lock"
    holder = DeviceLock(path)
    holder.open()
    held = threading.Event()
    released = threading.Event()
    told: list[float] = []

    def hold():
        fd = os.open(path, os.O_RDWR)        # another open file description: another holder
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.set()
        released.wait(10)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    other = threading.Thread(target=hold)
    other.start()
    assert held.wait(10)
    waiter = DeviceLock(path)
    waiter.while_waiting = lambda: (told.append(time.monotonic()), len(told) >= 2 and released.set())
    waiter.acquire()                     # returns once the holder let go (after two calls)
    waiter.release()
    other.join(10)
    assert len(told) >= 2 and waiter.contended == 1
    assert not any(t.name == "zlh-lock-wait" for t in threading.enumerate())   # it stopped


def test_stepping_aside_lets_the_lock_go_and_takes_it_back_at_the_same_depth(tmp_path):
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    with lock.stepped_aside():                  # not held: nothing to let go
        assert lock._depth == 0
    with lock.section(), lock.section():        # a timed section inside a run's hold
        assert not lock_free(lock.path)
        with lock.stepped_aside():
            assert lock._depth == 0 and lock_free(lock.path)
        assert lock._depth == 2 and not lock_free(lock.path)
    assert lock._depth == 0 and lock_free(lock.path)
    # one section entered, cut in two where it stepped aside: counted as an aside
    assert (lock.acquires, lock.asides, len(lock.sections)) == (1, 1, 2)
    seen = []

    def from_another_thread():
        with lock.stepped_aside():              # it holds nothing: nothing is let go
            seen.append((lock._depth, lock_free(lock.path)))
    with lock.section():
        helper = threading.Thread(target=from_another_thread)
        helper.start()
        helper.join()
    assert seen == [(1, False)]
    lock.close()


def test_one_lock_object_per_lock_file_in_a_process(tmp_path):
    """A worker's job and the run inside it meet on the same object: two open files of one
    lock in one process would block each other."""
    env = {device_lock.LOCK_DIR_ENV: str(tmp_path / "locks")}
    assert for_device("cuda-GPU-1", env) is for_device("cuda-GPU-1", env)
    assert for_device("cuda-GPU-1", env) is not for_device("cuda-GPU-2", env)


def test_a_run_reports_what_came_after_its_mark_the_held_stretch_up_to_now(tmp_path):
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    with lock.section():
        pass                                  # an earlier run's: not this one's
    lock.acquire()                            # a worker's job holds it as the run begins
    mark = lock.mark()
    with lock.section(), lock.stepped_aside():
        time.sleep(0.02)                      # the run lets it go once (a compile)
    fields = lock.run_fields(mark)
    assert (fields["acquires"], fields["asides"], fields["contended"]) == (0, 1, 0)
    assert 0.02 - 1e-3 <= fields["aside_s"] < 1.0
    (a1, b1), (a2, b2) = fields["sections"]   # before the aside (from the mark), and now
    assert round(mark.at, 6) <= a1 <= b1 <= a2 <= b2      # (run.json's microseconds)
    assert fields["run_span"][0] == round(mark.at, 6)
    assert fields["held_s"] == round((b1 - a1) + (b2 - a2), 3)
    lock.release()
    assert len(lock.run_fields(mark)["sections"]) == 2     # released: the same two stretches
    lock.close()


def test_each_run_keeps_its_own_stretches_however_many_came_before(tmp_path, monkeypatch):
    """A warm worker serves many runs: a run's stretches are its own, not cut off by the cap
    that earlier runs filled."""
    monkeypatch.setattr(device_lock, "MAX_SECTIONS", 3)
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    for _ in range(5):                        # an earlier run: 5 stretches, 3 kept
        with lock.section():
            pass
    mark = lock.mark()
    with lock.section():
        time.sleep(0.01)
    fields = lock.run_fields(mark)
    assert len(fields["sections"]) == 1 and fields["held_s"] >= 0.01 - 1e-3
    for _ in range(4):                        # past the cap: held time from the counter
        with lock.section():
            time.sleep(0.005)
    fields = lock.run_fields(mark)
    assert len(fields["sections"]) == 3 and fields["held_s"] >= 0.03 - 1e-3
    lock.close()


def test_an_interrupt_after_the_wait_leaves_the_lock_free(tmp_path, monkeypatch):
    """Taken after a wait, then interrupted before the hold is recorded (the wait's heartbeat
    stopping): the flock is let go, not kept by a process that thinks it holds nothing."""
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    lock.open()
    other = os.open(lock.path, os.O_RDWR)                # another holder (its own open file)
    fcntl.flock(other, fcntl.LOCK_EX)

    @contextlib.contextmanager
    def interrupted_after():
        threading.Timer(0.05, fcntl.flock, (other, fcntl.LOCK_UN)).start()   # let go soon
        yield
        raise KeyboardInterrupt
    monkeypatch.setattr(lock, "_telling_while_waiting", interrupted_after)
    with pytest.raises(KeyboardInterrupt):
        lock.acquire()
    assert lock._depth == 0
    assert lock_free(lock.path)                          # nobody holds it
    lock.close()
    os.close(other)


def test_shared_holders_work_side_by_side_and_an_exclusive_one_alone_first(tmp_path):
    """Runs that time nothing hold the lock shared, beside each other; a timing run waits for
    them and, while it waits, a new shared holder waits behind it (it is not starved)."""
    a, b, timer, late = (holder(tmp_path, "dev", name) for name in ("a", "b", "timer", "late"))
    for proc in (a, b):                       # both at once: neither waits for the other
        say(proc, "hold shared")
        assert proc.stdout.readline().strip() == "waiting"
        assert proc.stdout.readline().strip() == "held"
    say(timer, "hold")
    assert timer.stdout.readline().strip() == "waiting"
    blocked_on_flock(timer.pid)
    say(late, "hold shared")
    assert late.stdout.readline().strip() == "waiting"
    blocked_on_flock(late.pid)                # behind the exclusive waiter, not beside a and b
    say(a, "release")
    assert a.stdout.readline().strip() == "released"
    say(b, "release")
    assert b.stdout.readline().strip() == "released"
    assert timer.stdout.readline().strip() == "held"
    say(timer, "release")
    assert timer.stdout.readline().strip() == "released"
    assert late.stdout.readline().strip() == "held"
    for proc in (a, b, timer, late):
        proc.stdin.close()
        proc.wait(30)


def test_an_exclusive_block_in_a_shared_hold_converts_for_its_length(tmp_path):
    """A sweep (or a timed section) inside a run that times nothing holds the device alone for
    its length, then the run is back to sharing; each letting go first settles this process's
    device work (the backend's synchronize); the shared time is counted."""
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    settled = []
    lock.settle = lambda: settled.append(lock._exclusive)
    mark = lock.mark()
    with lock.section(shared=True):
        assert lock_free(lock.path, shared=True) and not lock_free(lock.path, shared=False)
        with lock.section():                  # converted: nobody else, not even shared
            assert not lock_free(lock.path, shared=True)
            with lock.section(shared=True):   # a shared block inside: stays exclusive
                assert not lock_free(lock.path, shared=True)
            with lock.stepped_aside():        # a compile: let go, then exclusive again
                assert lock_free(lock.path, shared=False)
            assert lock._exclusive and not lock_free(lock.path, shared=True)
        assert lock_free(lock.path, shared=True) and lock._exclusive is False
        time.sleep(0.01)
    assert lock._depth == 0 and lock_free(lock.path, shared=False)
    # let go as shared (for the block), exclusive (the compile), exclusive (the block's end),
    # shared (the run's end)
    assert settled == [False, True, True, False]
    fields = lock.run_fields(mark)
    assert (fields["acquires"], fields["asides"]) == (1, 1) and len(fields["sections"]) == 4
    assert 0.01 - 1e-3 <= fields["shared_s"] <= fields["held_s"]
    lock.close()


def test_an_untimed_run_shares_the_device_and_a_timed_one_waits(tmp_path):
    """`zlh bench --no-timing` works while another process holds the device shared (its own
    hold shared: run.json's shared_s is its whole hold); a timed run waits for that holder."""
    folder = tmp_path / "locks"
    held = for_device("cpu-index 0", {device_lock.LOCK_DIR_ENV: str(folder)})
    held.acquire(shared=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), device_lock.LOCK_DIR_ENV: str(folder),
           "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-m", "harness", "bench", "add", *CPU_FAST, "-q"]
    try:
        untimed = subprocess.run([*command, "--no-timing", "--out", str(tmp_path / "u")],
                                 cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert untimed.returncode == 0, untimed.stderr
        info = json.loads(next((tmp_path / "u").glob("add_*/run.json")).read_text())
        lock = info["device_lock"]
        assert lock["contended"] == 0 and lock["wait_s"] == 0.0
        assert lock["shared_s"] == lock["held_s"] > 0
        timed = subprocess.Popen([*command, "--out", str(tmp_path / "t")], cwd=ROOT, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        blocked_on_flock(timed.pid, 120)
    finally:
        held.release()
    assert timed.wait(120) == 0, timed.stderr.read()
    info = json.loads(next((tmp_path / "t").glob("add_*/run.json")).read_text())
    assert info["device_lock"]["contended"] == 1 and info["device_lock"]["shared_s"] == 0.0


def test_what_a_waiting_run_reports_grows_through_the_gate_and_the_lock(tmp_path):
    """The wait a run reports while it waits (for the supervisor's op timeout) counts the
    wait at the gate (behind an exclusive waiter) and then at the lock, never going back."""
    sharer, first = holder(tmp_path, "dev", "sharer"), holder(tmp_path, "dev", "first")
    say(sharer, "hold shared")
    assert [sharer.stdout.readline().strip() for _ in "ab"] == ["waiting", "held"]
    say(first, "hold")                        # waits at the lock, holding the gate
    assert first.stdout.readline().strip() == "waiting"
    blocked_on_flock(first.pid)
    lock = DeviceLock(tmp_path / "locks" / lock_file_name("dev"), "dev")
    reports, waiting = [], threading.Event()

    def report():
        reports.append(lock.waited_s + lock.waiting_s())
        waiting.set()
    lock.while_waiting = report
    taker = threading.Thread(target=lambda: (lock.acquire(), lock.release()))
    taker.start()
    assert waiting.wait(30)                   # waiting at the gate
    say(sharer, "release")                    # `first` takes the lock, lets the gate go:
    assert first.stdout.readline().strip() == "held"      # this one now waits at the lock
    assert sharer.stdout.readline().strip() == "released"
    seen = len(reports)
    while len(reports) < seen + 2:            # two more reports from the second wait
        time.sleep(0.05)
    say(first, "release")
    assert first.stdout.readline().strip() == "released"
    taker.join(30)
    assert lock.acquires == 1 and reports == sorted(reports)
    assert reports[-1] == pytest.approx(lock.waited_s) and lock.waited_s >= 2.0
    lock.close()
    for proc in (sharer, first):
        proc.stdin.close()
        proc.wait(30)


def test_a_shared_hold_that_spans_the_mark_counts_only_what_came_after(tmp_path):
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    lock.acquire(shared=True)
    time.sleep(0.2)                           # before the run's mark: not the run's
    mark = lock.mark()
    with lock.section():                      # converted: the shared stretch ends here
        time.sleep(0.1)
    fields = lock.run_fields(mark)
    assert fields["shared_s"] < 0.05 and fields["held_s"] >= 0.1 - 1e-3
    lock.release()
    lock.close()


def test_a_hold_alone_right_after_another_holders_leaves_the_device_idle_first(tmp_path):
    """A long kernel timed straight after a neighbour's timed section inherits its heat: a new
    exclusive hold after another holder's waits out the cool time (holding the lock), counts
    it, and owes nothing after its own hold, after a shared one, or once the time has passed."""
    path = tmp_path / lock_file_name("x")
    first, second = DeviceLock(path, "x"), DeviceLock(path, "x")
    slept: list[float] = []
    for lock in (first, second):
        lock.cool_s, lock.sleep = 5.0, slept.append
    mark = second.mark()
    with first.section():
        pass
    with second.section():
        assert second._exclusive                     # idle while holding: no one else may work
    assert len(slept) == 1 and 4.0 < slept[0] <= 5.0
    assert second.run_fields(since=mark)["cooled_s"] == round(slept[0], 3)
    with second.section():                           # after its own hold: nothing owed
        pass
    with first.section(shared=True):                 # a shared hold times nothing: nothing owed
        with first.section():                        # an exclusive block in it (a sweep)
            pass
    assert len(slept) == 1
    fd = os.open(path, os.O_RDWR)
    os.pwrite(fd, b"someone-else 1.0".ljust(device_lock.MARK_BYTES), 0)
    os.close(fd)
    with second.section():                           # that hold ended long ago
        pass
    assert len(slept) == 1
    first.close(), second.close()


def test_the_cool_time_comes_from_the_environment_with_a_default():
    assert device_lock.cool_seconds({}) == device_lock.COOL_S == 2.0
    assert device_lock.cool_seconds({device_lock.COOL_ENV: "0.5"}) == 0.5
    assert device_lock.cool_seconds({device_lock.COOL_ENV: "-3"}) == 0.0
    assert device_lock.cool_seconds({device_lock.COOL_ENV: "soon"}) == 2.0
