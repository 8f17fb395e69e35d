"""Device runtimes. `get_backend(name)` is the only way in; nothing else names a vendor.

Other packages add backends through the entry point group `zlh.backends`; they are used when
named (`--backend NAME`), never picked by `detect_backend`."""
from __future__ import annotations

from harness.common.errors import Terminated, one_line
from harness.common.plugins import BACKENDS as GROUP, entry_points

from .ascend import AscendBackend
from .base import (FATAL, POISONED, RECOVERABLE, TELEMETRY_FIELDS, Backend, DeviceIdentity,
                   TelemetrySample, error_text)
from .cpu import CpuBackend
from .cuda import CudaBackend
from .musa import MusaBackend
from .rocm import RocmBackend

_BACKENDS: dict[str, Backend] = {
    b.name: b for b in (CudaBackend(), MusaBackend(), RocmBackend(), AscendBackend(), CpuBackend())
}
BUILTIN = tuple(_BACKENDS)
_PLUGINS: dict[tuple[str, str], Backend] = {}     # (entry point name, value) -> instance
PLUGIN_ERRORS: dict[str, str] = {}                # entry point name -> why it did not load


class UnknownBackend(ValueError):
    pass


def _registry() -> dict[str, Backend]:
    """The built-ins, then the backends other packages register under the entry point group
    `zlh.backends` (a class or an instance of `Backend`; a built-in name cannot be taken
    over). A plugin that does not load is left out, and why is kept in PLUGIN_ERRORS."""
    found = dict(_BACKENDS)
    for point in entry_points(GROUP):
        key = (point.name, point.value)
        if key not in _PLUGINS:
            try:
                loaded = point.load()
                backend = loaded() if isinstance(loaded, type) else loaded
                if not isinstance(backend, Backend):
                    raise TypeError(f"{type(backend).__name__} is not a backends.Backend")
            except Terminated:
                raise
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - must not stop zlh
                PLUGIN_ERRORS[point.name] = (f"{point.value}: {type(exc).__name__}: "
                                             f"{one_line(exc)}")
                continue
            backend.name = backend.name or point.name
            _PLUGINS[key] = backend
        found.setdefault(_PLUGINS[key].name, _PLUGINS[key])
    return found


def _aliases(found: dict[str, Backend]) -> dict[str, str]:
    return {alias: b.name for b in found.values() for alias in b.aliases if alias not in found}


def backend_names() -> list[str]:
    return list(_registry())


def all_backends() -> list[Backend]:
    return list(_registry().values())


def get_backend(name: str) -> Backend:
    found = _registry()
    key = (name or "").strip().lower()
    key = _aliases(found).get(key, key)
    if key not in found:
        aliases = ", ".join(sorted(_aliases(found)))
        why = f"; plugin {key} did not load: {PLUGIN_ERRORS[key]}" if key in PLUGIN_ERRORS else ""
        raise UnknownBackend(f"unknown backend {name!r}; known: {', '.join(sorted(found))} "
                             f"(aliases: {aliases}){why}")
    return found[key]


def backend_for(name: str | None) -> Backend:
    """The backend `name` names (an alias too), or the one `detect_backend` finds here when
    `name` is None or empty; UnknownBackend for a name no backend has."""
    return get_backend(name) if name else detect_backend()


def detect_backend() -> Backend:
    """The first GPU-like backend whose runtime answers, else the CPU."""
    for name in ("cuda", "rocm", "musa", "ascend"):
        backend = _BACKENDS[name]
        if name == "cuda":
            import torch  # heavy: imported only where used
            if getattr(torch.version, "hip", None):
                continue
        if backend.is_available():
            return backend
    return _BACKENDS["cpu"]


def child_env(backend: Backend, base, devices=None) -> dict:
    """Environment for a child process on `backend`: other vendors' visibility keys cleared."""
    return backend.child_env(base, devices, all_backends())


__all__ = ["Backend", "DeviceIdentity", "TelemetrySample", "TELEMETRY_FIELDS", "FATAL",
           "POISONED", "RECOVERABLE", "UnknownBackend", "backend_names", "all_backends",
           "get_backend", "detect_backend", "child_env", "error_text"]
