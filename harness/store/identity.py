"""Who measured what, with which software: versions, host, recorded environment switches."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Mapping

import numpy

# Environment variables of the compiler and the harness that can change generated code or
# measurement. Backends add their visibility keys, adapters their own prefixes.
BASE_ENV_PREFIXES = ("TRITON_", "FLAGTREE_", "ZLH_", "PYTORCH_")
# Compiler distributions recorded beside triton when installed.
COMPILER_PACKAGES = ("flagtree",)


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions(packages: Iterable[str] = ()) -> dict:
    """python, zlh (and its commit), torch, triton, numpy, plus `packages` when installed."""
    import torch  # heavy: imported only where used
    import triton  # heavy, and absent where nothing compiles: imported only where used
    out = {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "zlh": package_version("zlh") or "source",
        "zlh_commit": git_commit(Path(__file__).resolve().parents[2]),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": numpy.__version__,
    }
    for extra in (*COMPILER_PACKAGES, *packages):
        version = package_version(extra.replace("_", "-")) or package_version(extra)
        if version:
            out[extra] = version
    return out


def git_commit(path: Path) -> str | None:
    if not (path / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def env_prefixes(visibility_keys: Iterable[str] = (), adapter_prefixes: Iterable[str] = ()
                 ) -> tuple[str, ...]:
    """What `recorded_env` keeps: the base prefixes, every backend's visibility keys (so a
    key added to a backend is recorded without a second list to update), the adapter's."""
    return tuple(dict.fromkeys((*BASE_ENV_PREFIXES, *visibility_keys, *adapter_prefixes)))


def recorded_env(prefixes: tuple[str, ...], env: Mapping[str, str] | None = None) -> dict:
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(prefixes)}


def host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "cpu_count": os.cpu_count()}
