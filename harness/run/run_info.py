"""The first run.json of a run: who measures what, with which software, on which device."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import backends

from .. import telemetry
from ..store import identity


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
        "options": options.to_dict(),
        "caliber": caliber.to_dict(),
        "dtypes": plan.dtypes[op],
        "shape_file": plan.shape_file.path if plan.shape_file else None,
        "seed": options.seed,
        "output_check": ("against the baseline" if options.check and adapter.checks_outputs
                         else "none"),
        "budget": options.budget.to_dict(),
        "device": {**device.to_dict(), "backend": backend.name,
                   "l2_bytes": backend.l2_cache_bytes(plan.device_index)},
        "versions": identity.versions(adapter.version_packages),
        "compiler": plan.compiler,
        "host": identity.host(),
        "env": identity.recorded_env(identity.env_prefixes(visibility, adapter.env_prefixes)),
        "started_at": iso_time(started),
        "telemetry": {"before": telemetry_sample(backend, plan.device_index)},
        "caches": {"env": plan.caches.shown(), "kept": options.keep_cache},
    }


def telemetry_sample(backend, index: int):
    """One sample of the device this run measures (never every device on the host)."""
    return telemetry.snapshot(backend, index)


def iso_time(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts))
