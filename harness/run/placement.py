"""Placements (`--placements N`): a case timed again on its inputs built anew at other device
addresses, and the placements' medians combined.

Where a kernel's data lies moves its latency: on an H200, rounds in turns of one A/B run
(docs/concepts/rounds.md) measured each side's median to 0.03 % inside a round, yet the
medians moved by 0.5 % (up to 3.5 %) from one round to the next, each round's inputs at new
addresses. Rounds average that only across runs; placements average it inside one. A new
placement frees the previous inputs, empties the device allocator's cache and holds a
random-size allocation while the inputs are built again (the same values: the same seed), so
that they land elsewhere. The row's latency is the median of the placements' medians (a
placement that landed badly does not drag it), its samples all of theirs.
"""
from __future__ import annotations

import contextlib
import random
from typing import Sequence

from ..measure.measurement import Measurement

SHIFT_MAX_BYTES = 64 << 20    # the random allocation ahead of new inputs: up to 64 MiB
UNIT = 512


def shift_bytes(rng: random.Random, max_bytes: int = SHIFT_MAX_BYTES) -> int:
    """The size of a random allocation ahead of new inputs: whole UNITs up to `max_bytes`,
    drawn from `rng`."""
    return rng.randrange(1, max(2, max_bytes // UNIT)) * UNIT


@contextlib.contextmanager
def elsewhere(backend, device_index: int, seed, max_bytes: int = SHIFT_MAX_BYTES):
    """For the block: the device allocator's cache emptied, then a random-size allocation
    (from `seed`, whole UNITs up to `max_bytes`) held, so that what the block allocates lands
    at new addresses. Yields the bytes held."""
    import torch  # heavy: imported only where used

    backend.empty_cache()
    size = shift_bytes(random.Random(seed), max_bytes)
    held = torch.empty(size, dtype=torch.uint8, device=backend.torch_device(device_index))
    try:
        yield size
    finally:
        del held


def combined(measurements: Sequence[Measurement | None]) -> Measurement | None:
    """One measurement of several placements: every sample, the placements' medians as its
    repeats (so its median is the median of theirs), every clock reading; undersampled when
    any was. None when none was measured; one placement is returned as it is."""
    taken = [m for m in measurements if m is not None]
    if len(taken) <= 1:
        return taken[0] if taken else None
    first = taken[0]
    return Measurement(tuple(s for m in taken for s in m.samples_ms), first.timer,
                       first.calls_per_sample, sum(m.warmup_calls for m in taken),
                       repeats=tuple(m.median for m in taken),
                       fallback=next((m.fallback for m in taken if m.fallback), None),
                       clocks=tuple(c for m in taken for c in m.clocks),
                       undersampled=any(m.undersampled for m in taken))
