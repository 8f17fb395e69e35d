"""What a process's first compile or first call computes once, computed ahead by a warm spare.

Triton keys every kernel it compiles or loads from its cache with a digest of its own sources
and library (`triton.runtime.cache.triton_key`, cached for the life of the process). A fresh
process pays it in its first compile — in a round's run, inside its clock: 0.38 s of a
0.65 s compile phase on an H200 host, the imports it triggers included. A spare that computes
it while it waits leaves the run only its own kernels to load.

Some imports happen on a first call, not at import: torch's type promotion
(`torch._prims_common.elementwise_dtypes`, which a library's pointwise ops may call to
promote their arguments) imports sympy on its first use (about 470 modules; 0.33 s on a CPU
host), and Triton imports its code generator on its first compile. On an H200 host the first
call of FlagGems' gelu or add cost 2.8 s more than other ops' in every fresh round; a spare
that imports these ahead leaves the run its own work.
"""
from __future__ import annotations

import contextlib
import importlib

# Modules a first compile imports (each optional: another compiler, or another version).
COMPILER_MODULES = ("triton.compiler.code_generator",)


def key_compiler() -> bool:
    """Compute Triton's own digest now; False where this Triton has none (or none importable)."""
    try:
        from triton.runtime.cache import triton_key  # heavy: imported only where used
    except Exception:  # noqa: BLE001 - another compiler, or none: nothing to compute ahead
        return False
    triton_key()
    return True


def import_first_call_modules() -> list[str]:
    """Import now what a first call would import lazily (torch's type promotion, Triton's code
    generator); the names of what could be warmed. Anything missing is skipped."""
    warmed = []
    with contextlib.suppress(Exception):       # torch absent, or its private API moved
        import torch  # heavy: imported only where used
        from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes
        elementwise_dtypes(torch.empty(()),
                           type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
        warmed.append("torch type promotion")
    for name in COMPILER_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
            warmed.append(name)
    return warmed
