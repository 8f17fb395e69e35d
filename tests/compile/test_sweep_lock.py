"""An autotune sweep times configs on the device: while a hooked tuner sweeps, the device's
measurement lock is held, and the sweep's time is counted (run.json's sweep_s); a tuned call
that hits its cache takes nothing."""
from __future__ import annotations

import contextlib

import torch
import triton
import triton.language as tl

from harness.compile import autotune as at
from harness.measure.device_lock import DeviceLock

HELD_DURING_BENCH: list[bool] = []
LOCK: list[DeviceLock] = []


def bench(fn, quantiles=None, **_):
    fn()
    HELD_DURING_BENCH.append(LOCK[0]._depth > 0)
    return [1.0] * len(quantiles) if quantiles else 1.0


@triton.jit
def copy_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


copy_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=1),
                                       triton.Config({"BLOCK": 32}, num_warps=1)],
                              key=["n"], do_bench=bench)(copy_body)


def launch(n: int) -> None:
    x = torch.arange(n, dtype=torch.float32)
    out = torch.empty_like(x)
    copy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    assert torch.equal(out, x)


def test_a_sweep_holds_the_device_lock_and_is_timed(tmp_path):
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    LOCK[:] = [lock]
    HELD_DURING_BENCH.clear()
    copy_kernel.cache.clear()
    hook = at.AutotuneRecorder(tmp_path / "run", {"backend": "cpu", "provider": "builtin",
                                                  "op": "copy"})
    hook.sweep_section = lock.section
    hook.install()
    try:
        launch(100)                                  # a miss: two configs timed
        assert HELD_DURING_BENCH == [True, True]
        assert lock.acquires == 1 and lock._depth == 0
        swept = hook.sweep_s
        assert swept > 0
        launch(100)                                  # cached: no sweep, no lock
        assert lock.acquires == 1 and hook.sweep_s == swept
    finally:
        hook.uninstall()
        lock.close()


@contextlib.contextmanager
def stepping_recorder(tmp_path, monkeypatch, kernel, note):
    """A recording hook whose sweeps hold a device lock and step aside to compile; every
    run of `kernel`'s function is logged as note(lock, warmup, kwargs). Yields (lock, log)."""
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    LOCK[:] = [lock]
    HELD_DURING_BENCH.clear()
    kernel.cache.clear()
    log: list = []
    original = kernel.fn.run

    def run(*args, warmup, **kwargs):
        log.append(note(lock, warmup, kwargs))
        return original(*args, warmup=warmup, **kwargs)
    monkeypatch.setattr(kernel.fn, "run", run)
    hook = at.AutotuneRecorder(tmp_path / "run", {"backend": "cpu", "provider": "builtin",
                                                  "op": "copy"})
    hook.sweep_section, hook.sweep_aside = lock.section, lock.stepped_aside
    hook.install()
    try:
        yield lock, log
    finally:
        hook.uninstall()
        lock.close()


def test_with_the_lock_stepping_aside_each_config_compiles_before_it_is_timed(tmp_path,
                                                                               monkeypatch):
    """Under overlap the sweep lets the device's lock go while it compiles a config (a run
    with warmup=True: compiled, not launched) and holds it while it times it."""
    with stepping_recorder(tmp_path, monkeypatch, copy_kernel,
                           lambda lock, warmup, kw: (warmup, lock._depth > 0)) as (lock, runs):
        launch(100)
        # per config: compiled with the lock let go, then timed holding it; then the call
        # itself (the sweep's section lasts until the tuned call returns)
        assert runs == [(True, False), (False, True), (True, False), (False, True),
                        (False, True)]
        assert HELD_DURING_BENCH == [True, True]
        assert (lock.acquires, lock.asides, lock._depth) == (1, 2, 0)   # the sweep's; 2 asides
        assert "_bench" not in vars(copy_kernel)            # the tuner is itself again
        runs.clear()
        launch(100)                                         # cached: no sweep, no compile
        assert runs == [(False, False)] and lock.acquires == 1


hooked_kernel = triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1),
             triton.Config({"BLOCK": 32}, num_warps=1, pre_hook=lambda nargs: None)],
    key=["n"], do_bench=bench)(copy_body)


def test_a_config_with_its_own_pre_hook_compiles_inside_its_benchmark(tmp_path, monkeypatch):
    """A config's pre-hook may change what is compiled (a TMA descriptor's block shape): it
    is not compiled ahead, only the plain config is."""
    with stepping_recorder(tmp_path, monkeypatch, hooked_kernel,
                           lambda lock, warmup, kw: (warmup, kw["BLOCK"])) as (lock, runs):
        x = torch.arange(100, dtype=torch.float32)
        hooked_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, torch.empty_like(x), 100)
        assert [block for warmup, block in runs if warmup] == [16]
        assert lock.asides == 1 and lock.acquires == 1
