"""The compile cache of one invocation.

Triton's compile cache (and its autotune disk cache) goes to a private directory, so every
run really compiles with the compiler under test and IR capture sees every variant. An
adapter may add a tuner cache of its own (`Adapter.tuner_cache`); both are set before
anything that compiles or imports the library is loaded.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class CacheEnv:
    env: dict = field(default_factory=dict)          # VAR -> value, or None to unset
    tuner_cache: str = "none"                        # the caliber's description
    private_dirs: tuple[str, ...] = ()               # removed after the run unless kept

    def merged(self, other: "CacheEnv") -> "CacheEnv":
        return CacheEnv({**self.env, **other.env}, other.tuner_cache,
                        self.private_dirs + other.private_dirs)

    def shown(self) -> dict:
        """For run.json: unset variables as "(unset)"."""
        return {k: (v if v is not None else "(unset)") for k, v in self.env.items()}


def compile_cache(root) -> CacheEnv:
    triton_dir = Path(root).resolve() / ".triton_cache"
    return CacheEnv({"TRITON_CACHE_DIR": str(triton_dir)}, "none", (str(triton_dir),))


def apply_env(env: dict, environ=None) -> None:
    """Set the variables of a CacheEnv; a None value unsets."""
    environ = os.environ if environ is None else environ
    for name, value in env.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value


def remove_private(caches: CacheEnv, root: Path | None = None) -> None:
    for directory in caches.private_dirs:
        shutil.rmtree(directory, ignore_errors=True)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
