"""The device lanes of a corpus command: the environment a lane's processes start with (that
device alone visible, zlh importable, a side's overrides), and telemetry.tsv watching the
devices while the lanes run."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

import backends

from ..run.child_env import child_environment
from ..run.options import BenchOptions
from ..telemetry.recorder import watch
from .supervisor import Lane


class LanePlan(Protocol):
    """What the lanes need of a batch's plan (BatchPlan)."""
    options: BenchOptions
    python: str
    devices: list[int]


def watch_devices(root: Path, plan: LanePlan):
    """telemetry.tsv at the root, one line per device every --telemetry-interval seconds,
    while the lanes run (telemetry.err says why when it cannot)."""
    name = plan.options.backend
    try:
        backend = backends.backend_for(name)
    except backends.UnknownBackend:
        backend = None
    return watch(root, backend, plan.devices if backend is not None else [],
                 plan.options.telemetry_interval if backend is not None else 0.0)


def lane_for(plan: LanePlan, device: int, overrides: dict | None = None) -> Lane:
    """The environment of one device lane: that device alone visible, zlh importable, and
    a side's overrides (None unsets a variable)."""
    env = child_environment(plan.options.backend, device, overrides, detect=True)
    return Lane(python=plan.python, env=env, label=f"{plan.options.backend or 'dev'}:{device}")
