"""Atomic file writes: write a temp file beside the target, fsync, rename over it.

A reader (or a crash) sees either the old file or the new one, never half of one. JSON is
written strictly: NaN and infinities become null (most JSON readers reject bare NaN), and
files get the usual permissions (0666 minus the umask), not mkstemp's private 0600.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def json_safe(value):
    """A copy of `value` with NaN and infinities as None, tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def to_json(obj, indent: int | None = 2) -> str:
    """Strict JSON text (no NaN/Infinity); objects json cannot encode are written as str."""
    separators = None if indent else (",", ":")
    return json.dumps(json_safe(obj), indent=indent, separators=separators, allow_nan=False,
                      default=str)


def atomic_write_json(path: str | os.PathLike, obj) -> Path:
    return atomic_write_text(path, to_json(obj) + "\n")
