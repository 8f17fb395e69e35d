"""A user cases module (text, written where a test needs it) whose op `hang_late` hangs in
its third case: the stall rule's and the screen's tests of an op cut short."""

CASES = '''
import time
import torch
import harness

def _ok(x):
    return x + 1

def _hang_late(x):
    if float(x.sum()) > 12:          # the third case: hangs
        while True:
            time.sleep(1)
    return x + 1

cases = {"hang_late": [harness.Case(fn=_hang_late, baseline=lambda x: x + 1,
                                    inputs=lambda n=n: torch.full((8,), float(n)),
                                    dtype="float32", shape=[8], name=f"c{n}")
                       for n in range(4)]}
'''
