"""Compiler state that outlives an op in a process running several: reset it.

Triton keeps compiled kernels per JITFunction in memory (`device_caches`) and tuned configs
per Autotuner (`cache`). A later op in the same process would launch them without compiling
into its own private cache or tuning anew, unlike a fresh process. `clear_kernel_caches`
empties both, so every op compiles and tunes as if it ran alone.
"""
from __future__ import annotations

import gc


def clear_kernel_caches() -> dict:
    """Empty every JITFunction's compiled-kernel cache and every Autotuner's config cache;
    returns how many of each were cleared. One scan of the heap."""
    try:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction
    except Exception:  # noqa: BLE001 - no Triton: nothing to clear
        return {"jit_functions": 0, "autotuners": 0}
    jit = tuners = 0
    for obj in gc.get_objects():
        kind = type(obj)      # type(), not isinstance(): lazy attributes must not be touched
        if issubclass(kind, JITFunction):
            caches = getattr(obj, "device_caches", None)
            if caches is not None and hasattr(caches, "clear"):
                caches.clear()
                jit += 1
        elif issubclass(kind, Autotuner):
            cache = obj.__dict__.get("cache")
            if isinstance(cache, dict):
                cache.clear()
                tuners += 1
    return {"jit_functions": jit, "autotuners": tuners}
