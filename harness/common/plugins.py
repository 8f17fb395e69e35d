"""Entry points: how an adapter or a backend that zlh does not ship joins the built-ins.

A package declares, in its metadata,

    [project.entry-points."zlh.adapters"]          # or setup.cfg [options.entry_points]
    mylib = "mylib_zlh:MyLibAdapter"               # a harness Adapter subclass (or factory)
    [project.entry-points."zlh.backends"]
    mydev = "mylib_zlh:MyDeviceBackend"            # a backends.Backend subclass or instance

and, once installed in the environment that runs zlh, `--adapter mylib` and `--backend mydev`
work like the built-ins (`zlh backends`, `zlh ops --adapter mylib` list them). A built-in name
cannot be taken over. This module only finds them; adapters/ and backends/ load them.
"""
from __future__ import annotations

import functools
import importlib.metadata

ADAPTERS = "zlh.adapters"
BACKENDS = "zlh.backends"


def entry_points(group: str) -> list:
    """The installed entry points of `group`, one per name (the first found wins); read once
    per process."""
    return list(_scan(group))


@functools.lru_cache(maxsize=None)
def _scan(group: str) -> tuple:
    try:
        found = importlib.metadata.entry_points(group=group)
    except Exception:  # noqa: BLE001 - broken metadata of some package must not stop zlh
        return ()
    unique = {}
    for point in found:
        unique.setdefault(point.name, point)
    return tuple(unique.values())


def describe(point) -> str:
    dist = getattr(point, "dist", None)
    owner = f" from {dist.metadata['Name']} {dist.version}" if dist is not None else ""
    return f"{point.value}{owner}"
