"""What a process's first compile computes once, computed ahead by a warm spare.

Triton keys every kernel it compiles or loads from its cache with a digest of its own sources
and library (`triton.runtime.cache.triton_key`, cached for the life of the process). A fresh
process pays it in its first compile — in a round's run, inside its clock: 0.38 s of a
0.65 s compile phase on an H200 host, the imports it triggers included. A spare that computes
it while it waits leaves the run only its own kernels to load.
"""
from __future__ import annotations


def key_compiler() -> bool:
    """Compute Triton's own digest now; False where this Triton has none (or none importable)."""
    try:
        from triton.runtime.cache import triton_key  # heavy: imported only where used
    except Exception:  # noqa: BLE001 - another compiler, or none: nothing to compute ahead
        return False
    triton_key()
    return True
