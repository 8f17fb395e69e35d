"""The environment of a cell's processes: the manifest's one physical device alone visible
(every other vendor's visibility variables cleared), every variable some cell names unset
first and then this cell's values applied, zlh importable."""
from __future__ import annotations

import os
import sys

import backends

from ..corpus.supervisor import Lane
from .manifest import Cell, Manifest
from .receipts import ZLH_ROOT


def cell_lane(manifest: Manifest, cell: Cell, python: str = sys.executable,
              base: dict | None = None) -> Lane:
    backend = backends.get_backend(manifest.device.backend)
    devices = [manifest.device.physical_device] if backend.visibility_keys else None
    env = backends.child_env(backend, dict(os.environ if base is None else base),
                             devices=devices)
    for key in manifest.protocol.env_keys():
        env.pop(key, None)
    for key, value in cell.env.items():
        if value is not None:
            env[key] = value
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ZLH_ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return Lane(python=python, env=env,
                label=f"{backend.name}:{manifest.device.physical_device}:{cell.name}")


def effective_env(manifest: Manifest, lane: Lane) -> dict:
    """What the cell's processes saw of every variable the manifest's cells name (None:
    unset), plus the device visibility."""
    backend = backends.get_backend(manifest.device.backend)
    keys = [*manifest.protocol.env_keys(), *backend.visibility_keys]
    return {k: lane.env.get(k) for k in keys}
