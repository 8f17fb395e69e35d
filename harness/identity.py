"""Who measured what, with which software: versions, environment switches, caliber.

The caliber is everything that changes what a number means; two runs are comparable only
when their calibers match. Versions are recorded but may legitimately differ between sides.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

CALIBER_FIELDS = ("backend", "device", "timer", "bench_level", "shape_mode", "tuner_cache",
                  "repeat", "l2_policy", "warmup_ms", "stopping", "autotune_mode", "ir_capture")

# Environment variables that can change generated code or measurement; recorded per run.
_ENV_PREFIXES = ("TRITON_", "FLAGTREE_", "FLAGGEMS_", "GEMS_", "ZLH_", "USE_FLAGTUNE",
                 "CUDA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                 "ROCR_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "PYTORCH_")


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    import numpy
    import torch
    import triton
    out = {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "zlh": package_version("zlh") or "source",
        "zlh_commit": git_commit(Path(__file__).resolve().parent.parent),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": numpy.__version__,
    }
    for extra in ("flagtree", "flag_gems", "flaggems_vllm"):
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


def recorded_env(env=None) -> dict:
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(_ENV_PREFIXES)}


def host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "cpu_count": os.cpu_count()}


def caliber(**fields) -> dict:
    missing = [f for f in CALIBER_FIELDS if f not in fields]
    if missing:
        raise ValueError(f"caliber is missing {', '.join(missing)}")
    return {f: fields[f] for f in CALIBER_FIELDS}
