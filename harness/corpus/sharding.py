"""Which device an op runs on: a stable hash of its name, so the same op goes to the same
device whatever the order of the selection, and again on resume."""
from __future__ import annotations

import hashlib
from typing import Sequence


def device_for(op: str, devices: Sequence[int]) -> int:
    if not devices:
        raise ValueError("no devices")
    digest = int(hashlib.sha1(op.encode("utf-8")).hexdigest()[:12], 16)
    return devices[digest % len(devices)]


def shard(ops: Sequence[str], devices: Sequence[int]) -> dict[int, list[str]]:
    """{device: ops in their given order}."""
    out: dict[int, list[str]] = {d: [] for d in devices}
    for op in ops:
        out[device_for(op, devices)].append(op)
    return out
