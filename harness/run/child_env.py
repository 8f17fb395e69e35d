"""The environment of a child process that runs zlh: one backend's devices (optionally one
device alone), a side's overrides, zlh importable, output unbuffered."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import backends

ZLH_ROOT = str(Path(__file__).resolve().parents[2])


def child_environment(backend_name: str | None, device: int | None = None,
                      overrides: Mapping[str, str | None] | None = None,
                      detect: bool = False) -> dict:
    """This process's environment for a child on `backend_name` (None: detected when
    `detect`, else no backend filtering): other vendors' visibility keys cleared; with
    `device`, that logical device (of this process's visible ones) the only one visible;
    `overrides` applied (None unsets); zlh's own source first on PYTHONPATH."""
    env = dict(os.environ)
    try:
        backend = backends.backend_for(backend_name) if backend_name or detect else None
    except backends.UnknownBackend:
        backend = None                   # the child reports the unknown name itself
    if backend is not None:
        devices = None
        if device is not None and backend.visibility_keys:
            visible = backend.visible_from_env(env)
            devices = [visible[device] if visible and device < len(visible) else str(device)]
        env = backends.child_env(backend, env, devices=devices)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ZLH_ROOT, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env
