"""`--devices` on the command line: the indices given, and those the backend sees (bench and
the corpus commands)."""
from __future__ import annotations

import sys

from ..common import errors
from ..run.plan import named_backend

MAX_DEVICE_DIGITS = 5       # a device index beyond 99999 is a typo, not a device


def parse_devices(text: str | None, option: str = "--devices") -> list[int] | None:
    """`--devices 0,1,…` (or the `option` that gave `text`): None when not given; '' or an
    empty element is refused."""
    if text is None:
        return None
    parts = [d.strip() for d in text.split(",")]
    if not all(d.isascii() and d.isdigit() and len(d) <= MAX_DEVICE_DIGITS for d in parts):
        raise errors.UsageError(f"{option} expects indices such as 0,1,2, got {text[:60]!r}")
    devices = [int(d) for d in parts]
    if len(set(devices)) != len(devices):
        raise errors.UsageError(f"{option} expects distinct non-negative indices, got {text!r}")
    return devices


def visible_devices(backend_name: str | None) -> list[int]:
    backend = named_backend(backend_name)
    return backend.enumerate_devices() if backend.is_available() else []


def check_devices(backend_name: str | None, devices: list[int],
                  option: str = "--devices") -> list[int]:
    """The devices to use (default: the first visible one); PREFLIGHT_FAILED when the
    backend has no device here or an index is not visible."""
    backend = named_backend(backend_name)
    if not backend.is_available():
        raise errors.PreflightError("backend", f"backend {backend.name} has no usable device "
                                               f"here (python: {sys.executable})")
    visible = backend.enumerate_devices()
    devices = devices or visible[:1]
    missing = [d for d in devices if d not in visible]
    if missing or not devices:
        raise errors.PreflightError("device", f"{option} {','.join(map(str, devices))}: "
                                              f"backend {backend.name} sees devices "
                                              f"{', '.join(map(str, visible)) or 'none'}")
    return devices
