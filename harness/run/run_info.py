"""The first run.json of a run: who measures what, with which software, on which device."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import backends

from .. import telemetry
from ..common.errors import PreflightError, one_line, quoted
from ..store import identity


def device_identity(backend, index: int) -> backends.DeviceIdentity:
    """The device a run measures on, as run.json and the caliber record it. Asked once the
    backend is active (on CUDA it creates the device context, which a dry run must not); a
    plugin backend whose identity() raises or gives something else is PREFLIGHT_FAILED."""
    try:
        device = backend.identity(index)
    except Exception as exc:  # noqa: BLE001 - a plugin's own error, said on one line
        raise PreflightError("backend", f"backend {backend.name}: identity({index}) raised "
                                        f"{type(exc).__name__}: {one_line(exc)}") from None
    if not isinstance(device, backends.DeviceIdentity) or not isinstance(device.name, str) \
            or not isinstance(device.arch, str):
        raise PreflightError("backend", f"backend {backend.name}: identity({index}) gave "
                                        f"{quoted(device, 60)}, not a DeviceIdentity")
    return device


def run_info(plan, op: str, run_dir, device, caliber, started: float) -> dict:
    """run.json as a run starts: identity, options, caliber, device, versions, the compiler
    under test, environment, telemetry before; the runner adds to it as the run goes."""
    options, backend, adapter = plan.options, plan.backend, plan.adapter
    visibility = [k for b in backends.all_backends() for k in b.visibility_keys]
    return {
        "run_id": run_dir.path.name,
        "op": op,
        "status": "running",
        "pid": os.getpid(),
        "command": list(options.argv) if options.argv is not None else list(sys.argv),
        "cwd": str(Path.cwd()),
        "adapter": adapter.identity(op),
        "options": options.run_record(),           # caliber values: in the caliber only
        "caliber": caliber.to_dict(),
        "dtypes": plan.dtypes[op],
        "shape_file": plan.shape_file.path if plan.shape_file else None,
        "budget": options.budget_record(),        # warmup_ms: in the caliber
        "output_check": ("against the baseline" if options.check and adapter.checks_outputs
                         else "none"),
        "device": {**device.to_dict(), "backend": backend.name,
                   "l2_bytes": backend.l2_cache_bytes(plan.device_index)},
        "versions": identity.versions(adapter.version_packages),
        "compiler": plan.compiler,
        "host": identity.host(),
        "env": identity.recorded_env(identity.env_prefixes(visibility, adapter.env_prefixes)),
        "started_at": iso_time(started),
        "telemetry": {"before": telemetry_sample(backend, plan.device_index)},
        "caches": {"env": plan.caches.shown()},      # kept or not: options.keep_cache
    }


def telemetry_sample(backend, index: int):
    """One sample of the device this run measures (never every device on the host)."""
    return telemetry.snapshot(backend, index)


def iso_time(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts))
