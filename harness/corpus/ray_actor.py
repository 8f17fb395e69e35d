"""What runs inside the Ray actor of one device lane (ray_executor.py starts it, with one GPU).

The actor is the lane's reused worker's keeper on its node: a local lane (units.py) per runner
of the lane (a screen has two: side A and side B, one after the other), so an op's timeout, a
worker that died, a poisoned device, memory held or a process switch changed are handled
there exactly as on the driver's own machine. A worker the actor starts sees the device Ray
gave the actor (the backend's visibility variable, as Ray set it), the rest of its
environment is the lane's from the driver. Nothing here imports Ray at module level: the
driver hands this class to Ray.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

import backends

from .outcome import Attempt
from .supervisor import Lane, Worker
from .units import LocalLane, OpWork

PROBE_PREFIX = ".ray-probe-"


def own_devices(env: dict, backend_name: str | None) -> dict:
    """`env` (a lane's, made on the driver) with the backend's visibility variables replaced
    by this process's (what Ray set for the actor's GPU)."""
    try:
        backend = backends.backend_for(backend_name)
    except backends.UnknownBackend:
        return dict(env)              # the worker reports the unknown name itself
    env = dict(env)
    for key in backend.visibility_keys:
        env.pop(key, None)
        if os.environ.get(key, "").strip():
            env[key] = os.environ[key]
    return env


def devices_problem(backend_name: str | None) -> str:
    """Why the devices this actor sees are not one device of its backend ("" when they are,
    and for a backend without visibility variables, the CPU)."""
    try:
        backend = backends.backend_for(backend_name)
    except backends.UnknownBackend:
        return ""
    if not backend.visibility_keys:
        return ""
    visible = backend.visible_from_env(os.environ)
    if visible is None or len(visible) != 1:
        return (f"backend {backend.name}: the actor sees {','.join(visible or []) or 'no'} "
                f"device(s) through {backend.visibility_keys[0]}, not exactly one (does the "
                f"Ray cluster's GPU resource match backend {backend.name}?)")
    return ""


class LaneActor:
    """One device lane of a Ray executor: its runners' local lanes, one call at a time."""

    def __init__(self, backend: str | None):
        self.backend = backend
        self.slots: dict[str, LocalLane] = {}

    def ready(self) -> dict:
        import ray  # optional library: this class runs in a Ray actor only
        return {"node": ray.util.get_node_ip_address(), "pid": os.getpid(),
                "gpus": [str(g) for g in ray.get_gpu_ids()],
                "problem": devices_problem(self.backend)}

    def probe(self, directory: str, token: str) -> str:
        """A file under `directory` (the driver checks that it sees it: one file system)."""
        path = Path(directory) / f"{PROBE_PREFIX}{token}"
        path.write_text(token, encoding="utf-8")
        return str(path)

    def _slot(self, slot: str, lane: Lane, worker_log: str | None) -> LocalLane:
        if slot not in self.slots:
            here = Lane(python=lane.python, env=own_devices(lane.env, self.backend),
                        label=lane.label)
            worker = Worker(here, Path(worker_log)) if worker_log else None
            self.slots[slot] = LocalLane(here, worker, command_group=True)
        return self.slots[slot]

    def run_op(self, slot: str, lane: Lane, worker_log: str | None,
               work: OpWork) -> tuple[Attempt, dict]:
        started = time.time()
        attempt = self._slot(slot, lane, worker_log).run_op(work)
        return attempt, {"started": started, "ended": time.time(), "pid": os.getpid()}

    def run_command(self, slot: str, lane: Lane, cmd: Sequence[str], log: str,
                    timeout_s: float | None) -> tuple[Attempt, dict]:
        started = time.time()
        attempt = self._slot(slot, lane, None).run_command(cmd, Path(log), timeout_s)
        return attempt, {"started": started, "ended": time.time(), "pid": os.getpid()}

    def renew(self, slot: str) -> None:
        if slot in self.slots:
            self.slots[slot].renew()

    def close(self, slot: str | None = None) -> None:
        for key in [slot] if slot is not None else list(self.slots):
            runner = self.slots.pop(key, None)
            if runner is not None:
                runner.close()
