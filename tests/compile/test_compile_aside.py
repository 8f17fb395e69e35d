"""Under the shared hold of a run that times nothing, Triton compiles with the lock let go (host
work a neighbour's device work may overlap) and takes it back before anything launches; a
run that times keeps the device through its compiles (a neighbour's launches between its
timed sections move its numbers); outside `compiles_aside`, the patched compile step is
Triton's own."""
from __future__ import annotations

import pytest
import triton
import triton.compiler
from triton.runtime.jit import JITFunction

from conftest import lock_free
from harness.compile import aside
from harness.measure.device_lock import DeviceLock
from harness.run import phases
from ir_kernels import TARGET, add_kernel, pristine_language


@pytest.fixture
def lock(tmp_path):
    lock = DeviceLock(tmp_path / "device-x.lock", "x")
    yield lock
    aside.uninstall()
    lock.close()


def test_the_compile_step_patched_is_the_jit_functions_own(lock):
    aside.uninstall()                             # an earlier run in this process installed it
    original = JITFunction.__dict__["_do_compile"]
    assert not getattr(original, "__zlh_aside__", False)
    assert aside.install() == "JITFunction._do_compile"
    assert getattr(JITFunction._do_compile, "__zlh_aside__", False)
    assert aside.install() == "JITFunction._do_compile"         # once per process
    aside.uninstall()
    assert JITFunction.__dict__["_do_compile"] is original


def test_a_compile_under_the_runs_hold_lets_the_device_go(lock, monkeypatch):
    """A real compile for a GPU target (Triton without `_do_compile`: its compile function is
    patched): the lock is free while it compiles, held again after, one aside counted."""
    aside.uninstall()                             # an earlier run in this process installed it
    monkeypatch.delattr(JITFunction, "_do_compile")
    assert aside.install() == "triton.compiler.compile"
    seen = []
    monkeypatch.setattr(triton.knobs.compilation, "listener",
                        lambda *a, **k: seen.append((lock._depth, lock_free(lock.path))))
    src = triton.compiler.ASTSource(fn=JITFunction(add_kernel),
                                    signature={"x_ptr": "*fp16", "y_ptr": "*fp16",
                                               "out_ptr": "*fp16", "n": "i32", "EM": "i32",
                                               "BLOCK_SIZE_M": "constexpr",
                                               "HAS_BIAS": "constexpr"},
                                    constexprs={"BLOCK_SIZE_M": 64, "HAS_BIAS": False})
    with phases.holding_device(lock, shared=True):
        assert not lock_free(lock.path)
        with pristine_language():
            triton.compiler.compile(src, target=TARGET)
        assert lock._depth == 1 and not lock_free(lock.path)
    assert seen == [(0, True)]
    assert (lock.acquires, lock.asides, len(lock.sections), lock._depth) == (1, 1, 2, 0)
    with phases.holding_device(lock):             # a run that times: held through it
        with pristine_language():
            triton.compiler.compile(src, target=TARGET)
    assert seen == [(0, True), (1, False)] and lock.asides == 1
    with pristine_language():                     # outside a run's hold: Triton's own
        triton.compiler.compile(src, target=TARGET)
    assert lock.asides == 1


def test_outside_compiles_aside_the_patched_step_holds_what_it_holds(lock):
    depths = []
    step = aside._let_go(lambda: depths.append(lock._depth) or "kernel")
    with lock.section():
        assert step() == "kernel"
        with aside.compiles_aside(lock.stepped_aside):
            assert step() == "kernel"
        assert step() == "kernel"
    assert depths == [1, 0, 1] and lock.asides == 1


def test_in_a_workers_job_the_runs_lock_is_held_until_the_job_ends(lock):
    """The worker's reset after the run (device work) happens before a neighbour may work."""
    with phases.job_holding():
        with phases.holding_device(lock):
            assert lock._depth == 2
        assert lock._depth == 1 and not lock_free(lock.path)      # the run is over, the job is not
    assert lock._depth == 0 and lock_free(lock.path)
    with phases.holding_device(lock):                   # outside a job: the run's own hold
        pass
    assert lock._depth == 0 and lock.acquires == 2


def test_the_jit_functions_compile_step_lets_the_device_go(lock, monkeypatch):
    """The production path: Triton's `JITFunction._do_compile` (here a stand-in that says what
    it saw, since nothing launches without a GPU) runs with the lock let go."""
    aside.uninstall()
    seen = []
    monkeypatch.setattr(JITFunction, "_do_compile",
                        lambda self, *a, **k: seen.append((lock._depth, lock_free(lock.path))) or "kernel")
    assert aside.install() == "JITFunction._do_compile"
    with phases.holding_device(lock, shared=True):
        assert JITFunction._do_compile(object(), "key", warmup=False) == "kernel"
        assert lock._depth == 1 and not lock_free(lock.path)
    assert seen == [(0, True)] and lock.asides == 1
    with phases.holding_device(lock):             # a run that times keeps the device
        assert JITFunction._do_compile(object(), "key", warmup=False) == "kernel"
    assert seen == [(0, True), (1, False)] and lock.asides == 1
