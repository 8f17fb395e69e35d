"""Where one run's time went, for run.json, and the device's measurement lock of the run.

`wall_s` and `inputs_s` were always recorded; beside them, measured where the runner and the
timing core already stand, at no cost per timed call:

    compile_s    the first call of each case's function under test, less the autotune sweeps
                 in it: compilation, loading, lazy set-up (and that one call's own run)
    sweep_s      tuned calls whose tuner missed its cache and timed its configs (hooked
                 tuners only: absent under --no-autotune-hooks)
    measure_s    inside timed sections: warm-up and timed calls of every case
    lock_wait_s  waiting for another process's timed section on the same device (0 where no
                 lock is taken); `device_lock` then has its key and the sections' times

The lock is the timing core's (harness/measure/device_lock.py); it is on where the process's
environment names a lock folder (a corpus command that overlaps its ops sets it).
"""
from __future__ import annotations

from ..common.errors import UsageError
from ..measure import device_lock
from ..measure.device_lock import DeviceLock


def lock_for(backend_name: str, card: str, index: int) -> DeviceLock | None:
    """The measurement lock of this run's device, keyed by the identity the backend gives
    (`card`: its UUID, else its physical index), or None where no lock folder is named;
    UsageError when the named folder cannot hold it (a run measuring beside another without
    the lock would be worse than no run)."""
    lock = device_lock.for_device(f"{backend_name}-{card or f'index {index}'}")
    if lock is not None:
        try:
            lock.open()
        except OSError as exc:
            raise UsageError(f"{device_lock.LOCK_DIR_ENV}={lock.path.parent}: cannot create "
                             f"the device's measurement lock there ({exc.strerror or exc}); "
                             f"name a writable folder or unset it") from None
    return lock


def hold_during_sweeps(hook, lock: DeviceLock | None) -> None:
    """An autotune sweep times configs on the device: it holds the lock as a timed section
    does, and steps aside while it compiles a config."""
    if lock is not None:
        hook.sweep_section, hook.sweep_aside = lock.section, lock.stepped_aside


def phase_fields(case_timer, hook, lock: DeviceLock | None) -> dict:
    """compile_s, sweep_s, measure_s, lock_wait_s (and device_lock) of a finished run."""
    measured = case_timer is not None
    sweep = getattr(hook, "sweep_s", 0.0) if getattr(hook, "mode", "") != "uncontrolled" \
        else None
    first_call = case_timer.first_call_s if measured else 0.0
    out = {"compile_s": round(max(0.0, first_call - (sweep or 0.0)), 3),
           "measure_s": round(case_timer.measure_s if measured else 0.0, 3),
           "lock_wait_s": round(lock.waited_s, 3) if lock is not None else 0.0}
    if sweep is not None:
        out["sweep_s"] = round(sweep, 3)
    if lock is not None:
        out["device_lock"] = lock.run_fields()
        lock.close()
    return out
