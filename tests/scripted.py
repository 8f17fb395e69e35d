"""An adapter whose cases a test scripts (ok, raise, wrong result, skip, poisoned, a signal the
op's code wraps), and the plan that runs it: the runner's tests and those of what the runner
drives (input time, telemetry watch, damaged state) share them."""
from __future__ import annotations

import os
import signal

import torch

import backends
from adapters.base import Adapter, Case, CaseInputs
from harness.run.options import BenchOptions
from harness.run.plan import BenchPlan


def sigterm_wrapped(whose: str):
    """A SIGTERM to this process, then whatever its handler raised turned into `whose` own
    error, as a library that catches everything does."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000_000):     # the handler runs between two of these
            pass
    except BaseException as exc:
        raise RuntimeError(f"{whose} own error") from exc


class ScriptedAdapter(Adapter):
    """Cases whose functions a test scripts: ok, raise, wrong result, skip, poisoned."""

    name = "scripted"

    def __init__(self, kinds):
        self.kinds = kinds

    def available(self):
        return True, ""

    def ops(self):
        return ["op"]

    def dtypes(self, op, backend):
        return ["float32"]

    def cases(self, op, dtypes, shapes, level, backend, device):
        for i, kind in enumerate(self.kinds):
            if kind == "adapter_signal_wrapped":
                sigterm_wrapped("the adapter's")
            def build():
                return CaseInputs((torch.randn(8),))

            def good(x):
                return x * 2

            def under_test(x, kind=kind):
                if kind == "signal_wrapped":
                    sigterm_wrapped("the library's")
                if kind == "raise":
                    raise ValueError("kernel launch failed: bad grid")
                if kind == "poison":
                    raise RuntimeError("Offset increment outside graph capture")
                if kind == "wrong":
                    return x * 3
                return x * 2

            def check(out, ref):
                assert torch.equal(out, ref), "outputs differ"

            yield Case(op=op, dtype="float32", shape=[8, i], shape_detail=f"8x{i}", build=build,
                       baseline=good, under_test=under_test, check=check,
                       skip_reason="not on this device" if kind == "skip" else None)

    def shapes_used(self, op):
        return {"op": {"shapes": [[8, i] for i in range(len(self.kinds))]}}


def plan_for(kinds, tmp_path, fast_rule, fast_budget, backend=None):
    options = BenchOptions(out=str(tmp_path / "runs"), rule=fast_rule, budget=fast_budget,
                           argv=["test"])
    backend = backend or backends.get_backend("cpu")
    return BenchPlan(["op"], options, backend, 0, ScriptedAdapter(kinds), "host",
                     {"op": ["float32"]}, None)
