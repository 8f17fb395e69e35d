"""Where one run's time went, for run.json, and the device's measurement lock of the run.

`wall_s` and `inputs_s` were always recorded; beside them, measured where the runner and the
timing core already stand, at no cost per timed call:

    compile_s    the first call of each case's function under test, less the autotune sweeps
                 in it: compilation, loading, lazy set-up (and that one call's own run)
    sweep_s      tuned calls whose tuner missed its cache and timed its configs (hooked
                 tuners only: absent under --no-autotune-hooks)
    measure_s    inside timed sections: warm-up and timed calls of every case
    lock_wait_s  waiting for another process's device work on the same device (0 where no
                 lock is taken); `device_lock` then has its key and the held stretches' times

The lock is the timing core's (harness/measure/device_lock.py); it is on where the process's
environment names a lock folder (a corpus command that overlaps its ops sets it). A run
holds it while it works on the device — from its first case's inputs to its last case's
check —, alone and throughout when it times. A run that times nothing (`timing` off: each
case called once for its code and output, a screen's untimed side) holds it shared, beside
other such runs, lets it go while Triton compiles (harness/compile/aside.py), and holds it
alone for each autotune sweep, which times configs (`sweep_hold`; let go while each config
compiles, as any compile of such a run). Under
--no-autotune-hooks a sweep cannot be seen, so such a run holds it alone throughout.
"""
from __future__ import annotations

import contextlib
import functools

from ..common.errors import UsageError
from ..compile.aside import compiles_aside
from ..measure import device_lock
from ..measure.device_lock import DeviceLock


def lock_for(backend, card: str, index: int) -> DeviceLock | None:
    """The measurement lock of this run's device, keyed by the identity the backend gives
    (`card`: its UUID, else its physical index), or None where no lock folder is named;
    UsageError when the named folder cannot hold it (a run measuring beside another without
    the lock would be worse than no run). Before it is let go, this process's queued device
    work finishes (the backend's synchronize; not while a graph is being captured)."""
    lock = device_lock.for_device(f"{backend.name}-{card or f'index {index}'}")
    if lock is not None:
        lock.settle = functools.partial(_settle, backend)
        try:
            lock.open()
        except OSError as exc:
            raise UsageError(device_lock.folder_refusal(lock.path.parent, exc)) from None
    return lock


def _settle(backend) -> None:
    capturing = getattr(backend.torch_module(), "is_current_stream_capturing", None)
    if capturing is None or not capturing():
        backend.synchronize()


_job: contextlib.ExitStack | None = None     # a worker's job (`job_holding`), while it lasts


@contextlib.contextmanager
def job_holding():
    """A corpus worker's job: a lock its run takes stays held until the job ends, so the
    worker's reset after the run (kernel caches dropped, the allocator's cache emptied: device
    work too) happens before a neighbour may time."""
    global _job
    with contextlib.ExitStack() as held:
        _job = held
        try:
            yield
        finally:
            _job = None


@contextlib.contextmanager
def holding_device(lock: DeviceLock | None, shared: bool = False):
    """The run's device work under the lock (nothing where there is none). Another process's
    device work moves a timed section's numbers even when it only runs *between* the timed
    sections (on an H200, kernels of a few µs read 7–16 % faster while a neighbour launches
    in the gaps: tests/device/overlap_cause.py, `between`), so a run that times holds the
    lock alone from its first case's inputs to its last case's check, its compiles included.
    `shared`: the run times nothing, so other such runs may work beside it (never a timing
    one), and each of its Triton compiles lets the lock go (host work; a timing run may take
    the device meanwhile). Inside `job_holding` the lock stays held after the block, in the
    same mode, until the job ends."""
    if lock is None:
        yield
        return
    # (Triton imported before the device is held, either way)
    with compiles_aside(lock.stepped_aside if shared else contextlib.nullcontext):
        if _job is not None:
            lock.acquire(shared=shared)
            _job.callback(lock.release)
        with lock.section(shared=shared):
            yield


def times_nothing(options) -> bool:
    """Whether a run's device work may share the device (its lock held shared): it times no
    case, and any sweep it makes is seen (a hooked tuner holds the lock exclusive for it)."""
    return not options.timing and options.autotune_hooks


def sweep_hold(lock: DeviceLock | None):
    """What an autotune sweep enters for its length (the tuner hook's `while_sweeping`): the
    lock held exclusive — inside a shared hold, converted for the sweep —, or None."""
    return lock.section if lock is not None else None


def elsewhere(run):
    """A count of the seconds `run` (an OpRun) has spent so far in autotune sweeps (less
    their waits for the lock) and in waits for the device's lock: what input building may
    contain that is not building (the run's InputClock keeps it apart)."""
    def seconds() -> float:
        hook, lock = run.tuner_hook, run.device_lock
        sweeps = (hook.sweep_s - hook.sweep_wait_s) if hook is not None else 0.0
        return sweeps + (lock.waited_s if lock is not None else 0.0)
    return seconds


def phase_fields(case_timer, hook, lock: DeviceLock | None, since=None) -> dict:
    """compile_s, sweep_s, measure_s, lock_wait_s (and device_lock, turns) of a finished run; the
    lock's part since `since` (its mark as the run began: the lock may serve several runs of
    one process)."""
    measured = case_timer is not None
    sweep = getattr(hook, "sweep_s", 0.0) if getattr(hook, "mode", "") != "uncontrolled" \
        else None
    first_call = case_timer.first_call_s if measured else 0.0
    held = lock.run_fields(since) if lock is not None else None
    out = {"compile_s": round(max(0.0, first_call - (sweep or 0.0)), 3),
           "measure_s": round(case_timer.measure_s if measured else 0.0, 3),
           "lock_wait_s": held["wait_s"] if held is not None else 0.0}
    if sweep is not None:
        out["sweep_s"] = round(sweep, 3)
    if measured and case_timer.turns is not None:    # samples in turns with the peer's run
        out["turns"] = case_timer.turns.to_dict()
    if lock is not None:
        out["device_lock"] = held
        lock.while_waiting = None        # the run's heartbeat: not a later run's
        lock.close()                     # (a no-op while a worker's job still holds it)
    return out
