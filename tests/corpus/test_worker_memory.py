"""A reused worker that still holds device memory after an op's reset is replaced before the
next op, and the op's notes say so. The worker here is a stand-in speaking the worker
protocol (a CPU has no device allocator to fill)."""
from __future__ import annotations

import os
import stat
import textwrap

from conftest import CPU_FAST
from harness.corpus.outcome import CRASH_RC, GIB, MEMORY_HELD_LIMIT, judge
from harness.corpus.supervisor import Lane, Worker, held_too_much
from harness.run.options import BenchOptions
from stand_in import stand_in_worker as make_stand_in

STAND_IN = textwrap.dedent("""
    import json, os, sys
    print(json.dumps({"ready": True, "pid": os.getpid(), "protocol": 1}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        held = {"hold": 2 << 30, "small": 64 << 20}.get(job["op"], 0)
        print(json.dumps({"op": job["op"], "rc": 0, "message": "", "pid": os.getpid(),
                          "write_failure": "", "held_bytes": held}), flush=True)
""")


def stand_in_worker(tmp_path) -> Worker:
    return make_stand_in(tmp_path, STAND_IN)


def run(worker, tmp_path, op):
    log = tmp_path / f"{op}.log"
    log.write_text("")
    return worker.run({"op": op, "args": [], "log": str(log)}, 20, log, tmp_path / op)


def test_a_worker_holding_memory_after_an_op_is_replaced_and_the_op_noted(tmp_path):
    worker = stand_in_worker(tmp_path)
    try:
        first = run(worker, tmp_path, "add")
        small = run(worker, tmp_path, "small")        # under the limit: the worker stays
        assert small.worker_pid == first.worker_pid and small.memory_held == 0
        held = run(worker, tmp_path, "hold")
        assert held.worker_pid == first.worker_pid    # the op itself ran in the same worker
        assert held.memory_held == 2 << 30
        assert not worker.alive                       # ...which is gone before the next op
        after = run(worker, tmp_path, "add")
        assert after.worker_pid != first.worker_pid and after.memory_held == 0
    finally:
        worker.stop()
    notes = judge(held, 60).notes
    assert "memory_held=2.0GiB" in notes
    assert not any(n.startswith("memory_held") for n in judge(small, 60).notes)


def test_only_a_whole_number_above_the_limit_counts_as_held():
    assert held_too_much({"held_bytes": MEMORY_HELD_LIMIT + 1}) == MEMORY_HELD_LIMIT + 1
    assert held_too_much({"held_bytes": MEMORY_HELD_LIMIT}) == 0
    for reply in ({}, {"held_bytes": None}, {"held_bytes": "3"}, {"held_bytes": 2.5 * GIB}):
        assert held_too_much(reply) == 0


def test_the_worker_reports_what_the_allocator_holds_after_its_reset(tmp_path):
    """The real worker on the cpu backend: no allocator figure, so nothing is held."""
    from harness.corpus.worker import run_job
    log = tmp_path / "op.log"
    reply = run_job({"op": "nosuchop", "args": ["--adapter", "builtin", "--backend", "cpu",
                                                "--out", str(tmp_path)], "log": str(log)})
    assert reply["held_bytes"] is None and reply["rc"] != 0


def test_a_worker_that_never_starts_is_a_crashed_attempt_not_a_traceback(tmp_path):
    python = tmp_path / "python"         # exits at once, saying why, before `ready`
    python.write_text("#!/bin/sh\necho 'zlh: cannot import torch' >&2\nexit 1\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    worker = Worker(Lane(python=str(python), env=dict(os.environ)), tmp_path / "worker.log")
    attempt = run(worker, tmp_path, "add")
    assert attempt.rc == CRASH_RC and attempt.run_dir is None
    assert attempt.message.startswith("worker did not start (see ")
    assert attempt.message.endswith(": zlh: cannot import torch")
    assert not worker.alive


def test_memory_held_only_by_garbage_cycles_is_freed_not_counted(monkeypatch):
    """Tensors kept alive only by a reference cycle (an exception's frames, say) are not the
    op's leak: the reset collects them before it judges; memory still held after that is."""
    import gc
    import weakref

    import backends
    from harness.corpus import worker

    class Blob:
        pass

    def cycle():
        blob = Blob()
        blob.self = blob              # freed only by a collection
        return weakref.ref(blob)

    class Device:
        name = "cuda"
        kept: list = []

        def empty_cache(self):
            pass

        def memory_held(self):
            alive = ref() is not None or bool(self.kept)
            return (2 << 30) if alive else 0

    device = Device()
    monkeypatch.setattr(backends, "get_backend", lambda name: device)
    options = BenchOptions.from_flat(adapter="builtin", backend="cuda")
    gc.disable()
    try:
        ref = cycle()
        assert ref() is not None
        assert worker._reset(options) == 0            # collected, so nothing is held
        assert ref() is None
        device.kept.append(Blob())                # a real leak: still held after collection
        assert worker._reset(options) == 2 << 30
    finally:
        gc.enable()


def test_the_workers_reset_holds_the_device_lock_its_run_took(tmp_path, monkeypatch):
    """Under overlap the reset after an op (caches dropped, allocator emptied) is device
    work: it happens under the lock the run took, released once the job ends."""
    from harness.corpus import worker
    from harness.measure import device_lock
    monkeypatch.setenv(device_lock.LOCK_DIR_ENV, str(tmp_path / "locks"))
    seen = []
    reset = worker._reset

    def watched(options):
        lock = device_lock.for_device("cpu-index 0")
        seen.append(lock._depth)
        return reset(options)
    monkeypatch.setattr(worker, "_reset", watched)
    reply = worker.run_job({"op": "add", "args": [*CPU_FAST, "--out", str(tmp_path / "out")],
                            "log": str(tmp_path / "op.log")})
    assert reply["rc"] == 0, (tmp_path / "op.log").read_text()[-2000:]
    assert seen == [1] and device_lock.for_device("cpu-index 0")._depth == 0
