"""What an op may change in its process that the next op of a reused worker would inherit and
a fresh process would not: torch's global switches (default dtype and device, grad mode,
deterministic mode, TF32 and reduced-precision matmul flags, cuDNN flags, float32 matmul
precision, CPU threads) and the working directory.

A worker takes a snapshot after each op and compares it with the one the previous op left;
what differs ends the worker before the next op (note `process_state=NAME,…`), as leaked
device memory does. The first op of a worker is not compared: importing a library may set
these switches itself (FlagGems' benchmark package turns TF32 off), which a fresh process
does as well.
"""
from __future__ import annotations

import os
import sys

_TORCH_SWITCHES = {
    "default_dtype": lambda t: str(t.get_default_dtype()),
    "default_device": lambda t: str(t.get_default_device()),
    "grad_enabled": lambda t: t.is_grad_enabled(),
    "deterministic_algorithms": lambda t: (t.are_deterministic_algorithms_enabled(),
                                           t.is_deterministic_algorithms_warn_only_enabled()),
    "float32_matmul_precision": lambda t: t.get_float32_matmul_precision(),
    "num_threads": lambda t: t.get_num_threads(),
    "cuda_matmul_allow_tf32": lambda t: t.backends.cuda.matmul.allow_tf32,
    "cuda_matmul_fp16_reduced":
        lambda t: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    "cuda_matmul_bf16_reduced":
        lambda t: t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    "cudnn_enabled": lambda t: t.backends.cudnn.enabled,
    "cudnn_allow_tf32": lambda t: t.backends.cudnn.allow_tf32,
    "cudnn_benchmark": lambda t: t.backends.cudnn.benchmark,
    "cudnn_deterministic": lambda t: t.backends.cudnn.deterministic,
}


def snapshot() -> dict:
    """The switches as they are now; one that cannot be read (an older torch) is left out."""
    state = {}
    try:
        state["cwd"] = os.getcwd()
    except OSError:                  # the directory was removed under the process
        state["cwd"] = None
    torch = sys.modules.get("torch")
    if torch is None:
        return state
    for name, read in _TORCH_SWITCHES.items():
        try:
            state[name] = read(torch)
        except Exception:  # noqa: BLE001 - a switch this torch does not have
            continue
    return state


def changes(before: dict, after: dict) -> list[str]:
    """`name: old -> new` for every switch whose value differs between two snapshots."""
    return [f"{name}: {before[name]!r} -> {after[name]!r}" for name in before
            if name in after and before[name] != after[name]]
