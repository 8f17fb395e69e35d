"""Fault-injection ops: cases that fail on purpose, for testing corpus runs and for users
checking their set-up. Hidden from `zlh ops` unless asked for (`--all-builtin`).

    fault_raise            the function under test raises
    fault_abort            the process aborts (SIGABRT) inside the function under test
    fault_hang             the function under test never returns
    fault_illegal_address  a kernel reads far out of bounds (GPU only): the device context
                           is unusable afterwards
    fault_hold_memory      the function under test keeps 2 GiB of device memory alive after
                           the op (a module-level cache that never empties; GPU only)
    fault_global_state     the function under test switches torch's default dtype to float64
                           and leaves it so (what a later op in the same process would inherit)
    fault_abort_in_capture the process aborts when the function under test is called inside a
                           graph capture, and runs otherwise (as a library that asserts under
                           capture: GPU only); a corpus run measures it with event timing
"""
from __future__ import annotations

import os
import time
from typing import Callable

import torch

from ..base import Case, CaseInputs

FAULT_OPS = ("fault_abort", "fault_abort_in_capture", "fault_global_state", "fault_hang",
             "fault_hold_memory", "fault_illegal_address", "fault_raise")
HELD_BYTES = 2 << 30
_held: list = []       # what fault_hold_memory keeps alive, as a leaking library cache would


def _raise(x):
    raise RuntimeError("planted failure: fault_raise always raises")


def _abort(x):
    os.abort()


def _hang(x):
    while True:
        time.sleep(1.0)


def _illegal_address(x):
    from . import kernels
    return kernels.read_far_out_of_bounds(x)


def _hold_memory(x):
    if not _held:
        _held.append(torch.empty(HELD_BYTES, dtype=torch.uint8, device=x.device))
    return x + 1


def _global_state(x):
    torch.set_default_dtype(torch.float64)
    return x + 1


def _abort_in_capture(backend) -> Callable:
    capturing = getattr(backend.torch_module(), "is_current_stream_capturing", None)

    def under_test(x):
        if capturing is not None and capturing():
            os.abort()
        return x + 1
    return under_test


_FUNCTIONS: dict[str, Callable] = {"fault_raise": _raise, "fault_abort": _abort,
                                   "fault_hang": _hang, "fault_illegal_address": _illegal_address,
                                   "fault_hold_memory": _hold_memory,
                                   "fault_global_state": _global_state}
GPU_ONLY = ("fault_illegal_address", "fault_hold_memory")


def fault_case(op: str, backend, device: str) -> Case:
    skip = None
    if op in GPU_ONLY and not backend.supports_events:
        skip = f"{op} needs a GPU (backend {backend.name} has no device memory or kernels)"
    if op == "fault_abort_in_capture" and not backend.supports_graph:
        skip = f"{op} needs a device that captures graphs (backend {backend.name} does not)"
    under_test = _abort_in_capture(backend) if op == "fault_abort_in_capture" else _FUNCTIONS[op]
    return Case(op=op, dtype="float32", shape=[1024], shape_detail="1024",
                build=lambda: CaseInputs((torch.randn(1024, device=device),)),
                baseline=lambda x: x + 1, under_test=under_test, skip_reason=skip,
                info={"fault": op})
