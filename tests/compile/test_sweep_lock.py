"""An autotune sweep times configs on the device: under a run's hold of the device's lock every
config is timed holding the lock, and the sweep's time is counted (run.json's sweep_s); a
tuned call that hits its cache sweeps nothing. (Its configs' compiles let the lock go like
any compile: test_compile_aside.py; here the interpreter compiles nothing.)"""
from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from harness.compile import autotune as at
from harness.measure.device_lock import DeviceLock
from harness.run import phases

HELD_DURING_BENCH: list[bool] = []
MODE_DURING_BENCH: list[bool | None] = []       # exclusive (True), shared (False), not held
LOCK: list[DeviceLock] = []


def bench(fn, quantiles=None, **_):
    fn()
    HELD_DURING_BENCH.append(LOCK[0]._depth > 0)
    MODE_DURING_BENCH.append(LOCK[0]._exclusive)
    return [1.0] * len(quantiles) if quantiles else 1.0


@triton.jit
def copy_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


copy_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=1),
                                       triton.Config({"BLOCK": 32}, num_warps=1)],
                              key=["n"], do_bench=bench)(copy_body)


def launch(n: int, kernel=copy_kernel) -> None:
    x = torch.arange(n, dtype=torch.float32)
    out = torch.empty_like(x)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert torch.equal(out, x)


@pytest.fixture
def recording(tmp_path):
    """(lock, hook): a device lock the bench function reports on, and an installed recorder
    whose tuner cache is empty."""
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    LOCK[:] = [lock]
    HELD_DURING_BENCH.clear()
    MODE_DURING_BENCH.clear()
    copy_kernel.cache.clear()
    hook = at.AutotuneRecorder(tmp_path / "run", {"backend": "cpu", "provider": "builtin",
                                                  "op": "copy"})
    hook.install()
    try:
        yield lock, hook
    finally:
        hook.uninstall()
        lock.close()


def test_a_sweep_under_the_runs_hold_times_its_configs_holding_the_lock(recording):
    lock, hook = recording
    with phases.holding_device(lock):
        launch(100)                                  # a miss: two configs timed
        assert HELD_DURING_BENCH == [True, True]
        swept = hook.sweep_s
        assert swept > 0
        launch(100)                                  # cached: no sweep
        assert hook.sweep_s == swept
    assert lock.acquires == 1 and lock._depth == 0
    with phases.holding_device(None):                # no lock named: nothing is held
        copy_kernel.cache.clear()
        launch(100)
    assert HELD_DURING_BENCH == [True, True, False, False] and lock.acquires == 1


def test_a_sweep_in_a_run_that_times_nothing_holds_the_device_alone(recording):
    """A run that times nothing shares the device; its sweep times configs, so the hook holds
    the lock exclusive for the sweep's length (the run's `while_sweeping`), then shares
    again."""
    lock, hook = recording
    hook.while_sweeping = phases.sweep_hold(lock)
    with phases.holding_device(lock, shared=True):
        assert lock._exclusive is False
        launch(100)                                  # a miss: two configs, timed alone
        assert MODE_DURING_BENCH == [True, True]
        assert lock._exclusive is False              # shared again after the sweep
    hook.while_sweeping = None                       # (what a run without a lock gives)
    with phases.holding_device(lock, shared=True):
        copy_kernel.cache.clear()
        launch(100)
    assert MODE_DURING_BENCH == [True, True, False, False]


def test_input_building_keeps_a_sweep_and_a_device_wait_apart(recording):
    """Inputs made with a tuned kernel (a backward's, from its forward) sweep it inside the
    input building: that time, and a wait for the device's lock, go to `inputs_nested_s`,
    not `inputs_s` (max_pool2d_backward read 99.8 s of "inputs" on an H200, its forward's
    sweep and a 90 s wait for the lock)."""
    from types import SimpleNamespace
    from harness.run.case import InputClock
    _, hook = recording
    run = SimpleNamespace(tuner_hook=hook, device_lock=SimpleNamespace(waited_s=0.0))
    ticks = iter([0.0, 100.0])                        # the building took 100 s in all
    clock = InputClock(nested=phases.elsewhere(run), clock=lambda: next(ticks))

    def build():
        launch(100)                                   # a miss: the tuner sweeps
        run.device_lock.waited_s += 7.0               # and the device was waited for
    clock.timed(build)()
    assert hook.sweep_s > 0
    assert clock.nested_s == pytest.approx(hook.sweep_s + 7.0)
    assert clock.total_s == pytest.approx(100.0 - hook.sweep_s - 7.0)
    taken = clock.take()
    assert taken["inputs_s"] + taken["inputs_nested_s"] == pytest.approx(100.0, abs=1e-3)
    assert clock.take() == {"inputs_s": 0.0}          # nothing since: no nested key
    # a wait inside a sweep is in both counts; it is taken once
    both = SimpleNamespace(tuner_hook=SimpleNamespace(sweep_s=10.0, sweep_wait_s=4.0),
                           device_lock=SimpleNamespace(waited_s=6.0))
    assert phases.elsewhere(both)() == 12.0
