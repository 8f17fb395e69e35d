"""The compile cache of one invocation.

Triton's compile cache (and its autotune disk cache) goes to a private directory, so every
run really compiles with the compiler under test and IR capture sees every variant. An
adapter may add a tuner cache of its own (`Adapter.tuner_cache`); both are set before
anything that compiles or imports the library is loaded.

Two runs of one side of a screen (`--timing changed`) share one Triton cache: the untimed run
keeps its own past its end (`kept`), and the timed run of the same op, same compiler and same
environment, loads from it (`reuse`) instead of compiling every kernel again while it holds
the device alone. Triton's cache key covers the source, the options and its environment
switches, so a hit is the kernel this run would have compiled. The screen removes the kept
cache once the op's pair is done (`remove_kept`).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..common import log

KEPT_PREFIX = ".compile-cache-"      # <out>/.compile-cache-<stamp>: a kept Triton cache


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


def compile_cache(root, kept: str | Path | None = None, reuse: str | None = None) -> CacheEnv:
    """Triton's compile cache of a run whose private caches go under `root`: a private one,
    removed with `root`; with `kept`, that directory (<out>/.compile-cache-<stamp>), which
    outlives the run; with `reuse`, that directory (another run's kept cache, left in place)
    while it is there, else as without it (a resumed screen whose caches were removed, or
    never copied to this machine, compiles as any run does)."""
    if reuse is not None:
        if Path(reuse).is_dir():
            return CacheEnv({"TRITON_CACHE_DIR": str(Path(reuse).resolve())}, "none", ())
        log.debug(f"compile cache {reuse} is gone: this run compiles into its own")
    if kept is not None:
        return CacheEnv({"TRITON_CACHE_DIR": str(Path(kept).resolve())}, "none", ())
    triton_dir = Path(root).resolve() / ".triton_cache"
    return CacheEnv({"TRITON_CACHE_DIR": str(triton_dir)}, "none", (str(triton_dir),))


def remove_kept(folder: Path) -> None:
    """The Triton caches runs kept under `folder` (each attempt's), removed; none there (a
    resumed root, a run that never started) is no error."""
    for directory in Path(folder).glob(KEPT_PREFIX + "*"):
        shutil.rmtree(directory, ignore_errors=True)


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
