"""A user cases module (text, written where a test needs it): two ops compiled for a GPU
target on any machine (tests/ir_kernels.py), `changed` whose code follows ZLH_TEST_SWITCH and
`same` whose code does not — a screen's IR_CHANGED and NO_IR_DIFF on a CPU."""

CASES = '''
import os
import torch
import harness
import ir_kernels as K


def _changed(x):
    K.launch(K.compile_add(64 if os.environ.get("ZLH_TEST_SWITCH", "0") == "0" else 128))
    return x + 1


def _same(x):
    K.launch(K.compile_add(64))
    return x + 1


cases = {name: [harness.Case(fn=fn, baseline=lambda x: x + 1, inputs=lambda: torch.ones(8),
                             dtype="float32", shape=[8], name=name)]
         for name, fn in (("changed", _changed), ("same", _same))}
'''
