"""Device runtimes. `get_backend(name)` is the only way in; nothing else names a vendor."""
from __future__ import annotations

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
_ALIASES = {alias: b.name for b in _BACKENDS.values() for alias in b.aliases}


class UnknownBackend(ValueError):
    pass


def backend_names() -> list[str]:
    return list(_BACKENDS)


def all_backends() -> list[Backend]:
    return list(_BACKENDS.values())


def get_backend(name: str) -> Backend:
    key = (name or "").strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _BACKENDS:
        aliases = ", ".join(sorted(_ALIASES))
        raise UnknownBackend(f"unknown backend {name!r}; known: {', '.join(sorted(_BACKENDS))} "
                             f"(aliases: {aliases})")
    return _BACKENDS[key]


def detect_backend() -> Backend:
    """The first GPU-like backend whose runtime answers, else the CPU."""
    for name in ("cuda", "rocm", "musa", "ascend"):
        backend = _BACKENDS[name]
        if name == "cuda":
            import torch
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
