"""Between ops a worker empties Triton's kernel and tuner caches and drops the call arguments
an autotuner keeps (the last case's tensors), so nothing of one op survives into the next."""
from __future__ import annotations

import gc
import weakref

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner

from harness.compile.reset import clear_kernel_caches


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)


class KeepsLastArguments(Autotuner):
    """Like a library tuner that keeps its last call's arguments on purpose."""

    def run(self, *args, **kwargs):
        self._last_benchmark_args = tuple(args)
        self._last_benchmark_meta = dict(kwargs)
        return super().run(*args, **kwargs)


def test_an_autotuners_last_arguments_and_tuned_configs_are_dropped():
    tuner = KeepsLastArguments(_copy_kernel, _copy_kernel.arg_names,
                               [triton.Config({"BLOCK": 64})], key=["n"], reset_to_zero=None,
                               restore_value=None)
    big = torch.ones(1 << 16)
    tuner._last_benchmark_args = (big, torch.empty_like(big), big.numel())
    tuner._last_benchmark_meta = {"scale": torch.ones(2)}
    tuner.nargs = {"src": big}                      # left behind by a call that raised
    tuner.cache[(1 << 16,)] = tuner.configs[0]
    tuner.note = ("not an argument list", 3)        # no tensor: kept
    tuner.workspace = {"buffer": torch.zeros(4)}    # kept on purpose by a subclass: kept
    alive = weakref.ref(big)
    del big
    counts = clear_kernel_caches()
    gc.collect()
    assert alive() is None                          # nothing keeps the tensor now
    assert tuner._last_benchmark_args is None and tuner._last_benchmark_meta is None
    assert tuner.nargs is None and tuner.cache == {}
    assert tuner.note == ("not an argument list", 3)
    assert tuner.workspace["buffer"].shape == (4,)
    assert tuner.configs and tuner.keys == ["n"]    # the tuner still works
    assert counts["autotuners"] >= 1 and counts["arguments_dropped"] >= 3


def test_a_last_call_record_is_dropped_whole():
    tuner = KeepsLastArguments(_copy_kernel, _copy_kernel.arg_names,
                               [triton.Config({"BLOCK": 64})], key=["n"], reset_to_zero=None,
                               restore_value=None)
    tuner._last_benchmark_args = (32,)              # no tensor itself ...
    tuner._last_benchmark_meta = {"out": torch.ones(2)}   # ... but its twin holds one
    clear_kernel_caches()
    assert tuner._last_benchmark_args is None and tuner._last_benchmark_meta is None
