"""Compiler state that outlives an op in a process running several: reset it.

Triton keeps compiled kernels per JITFunction in memory (`device_caches`) and tuned configs
per Autotuner (`cache`). A later op in the same process would launch them without compiling
into its own private cache or tuning anew, unlike a fresh process. `clear_kernel_caches`
empties both, so every op compiles and tunes as if it ran alone.

An Autotuner may also keep the arguments of its last call (Triton's `nargs` when a call
raised; a library's own Autotuner subclass may keep them on purpose, e.g.
`_last_benchmark_args`): device tensors of the last case, gigabytes for a large shape, alive
until that kernel runs again. Those attributes are dropped too (by name, see
_ARGUMENT_NAMES), so the device memory is free for the next op.
"""
from __future__ import annotations

import gc
import sys


def clear_kernel_caches() -> dict:
    """Empty every JITFunction's compiled-kernel cache and every Autotuner's config cache;
    returns how many of each were cleared. One scan of the heap."""
    try:
        from triton.runtime.autotuner import Autotuner  # heavy: imported only where used
        from triton.runtime.jit import JITFunction  # heavy: imported only where used
    except Exception:  # noqa: BLE001 - no Triton: nothing to clear
        return {"jit_functions": 0, "autotuners": 0, "arguments_dropped": 0}
    jit = tuners = dropped = 0
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
            dropped += _drop_held_arguments(obj)
    return {"jit_functions": jit, "autotuners": tuners, "arguments_dropped": dropped}


def _holds_tensor(value) -> bool:
    """A tuple, list or dict with a tensor among its direct members (an argument list)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, (tuple, list, dict)):
        return False
    members = value.values() if isinstance(value, dict) else value
    return any(isinstance(v, torch.Tensor) for v in members)


# Where an Autotuner keeps a call's arguments: Triton's own (`nargs`; `restore_copies`, the
# copies restore_value makes) and a subclass's record of its last call (`_last_*`, dropped
# together: one read without the others would fail). Other attributes stay as they are, even
# with tensors: a subclass may keep a workspace or a table between calls on purpose.
_ARGUMENT_NAMES = ("nargs", "restore_copies")
_LAST_CALL_PREFIX = "_last_"


def _drop_held_arguments(tuner) -> int:
    """Set to None the attributes of `tuner` that keep call arguments with tensors; returns
    how many."""
    state = getattr(tuner, "__dict__", {})
    last = [name for name in state if name.startswith(_LAST_CALL_PREFIX)]
    held = [name for name in _ARGUMENT_NAMES if _holds_tensor(state.get(name))]
    if any(_holds_tensor(state[name]) for name in last):
        held += last
    for name in held:
        state[name] = None
    return len(held)
