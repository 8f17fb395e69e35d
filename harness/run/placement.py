"""Placements (`--placements N`): a case timed again on its inputs built anew at other device
addresses, and the placements' medians combined.

Where a kernel's data lies moves its latency: on an H200, rounds in turns of one A/B run
(docs/concepts/rounds.md) measured each side's median to 0.03 % inside a round, yet the
medians moved by 0.5 % (up to 3.5 %) from one round to the next, each round's inputs at new
addresses. Rounds average that only across runs; placements average it inside one. A new
placement frees the previous inputs, empties the device allocator's cache and holds a
random-size allocation while the inputs are built again (the same values: the same seed), so
that they land elsewhere; inputs an adapter made once and hands back again (FlagGems' cases:
`get_input_iter` made them) are copied there instead (the row's `placements_copied`), or
every placement would time the same memory. The row's latency is the median of the
placements' medians (a placement that landed badly does not drag it), its samples all of
theirs.

Where a new placement's inputs may lie (`--placement-memory`): `reused` (the default) frees
the previous inputs first, so the allocator may hand their memory back behind the spacer;
`new` keeps every earlier placement's inputs and spacer until the case ends, so each
placement's inputs lie in device memory no earlier placement of the case holds — other
physical memory (as a new process's inputs get, perhaps). A placement that would not leave
RESERVE_BYTES free (the driver's count, after the allocator's cache is emptied; an unknown
count counts as none) lets go of what was kept, and the case's later placements reuse memory;
the row's `placements_new_memory` says how many took new memory.
"""
from __future__ import annotations

import contextlib
import random
from typing import Sequence

from ..measure.measurement import MEDIAN, Measurement
from .input_copy import handed_back, pristine_copy, storage_refs, storages

SHIFT_MAX_BYTES = 64 << 20    # the random allocation ahead of new inputs: up to 64 MiB
UNIT = 512
REUSED, NEW = "reused", "new"  # --placement-memory
MEMORY_MODES = (REUSED, NEW)
RESERVE_BYTES = 1 << 30       # new memory: free beyond another copy of the inputs, its calls'


def shift_bytes(rng: random.Random, max_bytes: int = SHIFT_MAX_BYTES) -> int:
    """The size of a random allocation ahead of new inputs: whole UNITs up to `max_bytes`,
    drawn from `rng`."""
    return rng.randrange(1, max(2, max_bytes // UNIT)) * UNIT


@contextlib.contextmanager
def elsewhere(backend, device_index: int, seed, max_bytes: int = SHIFT_MAX_BYTES):
    """For the block: the device allocator's cache emptied, then a random-size allocation
    (from `seed`, whole UNITs up to `max_bytes`) held, so that what the block allocates lands
    at new addresses. Yields the bytes held (0 where `max_bytes` is 0: nothing is held)."""
    import torch  # heavy: imported only where used

    backend.empty_cache()
    if max_bytes <= 0:
        yield 0
        return
    size = shift_bytes(random.Random(seed), max_bytes)
    held = torch.empty(size, dtype=torch.uint8, device=backend.torch_device(device_index))
    try:
        yield size
    finally:
        del held


def combined(measurements: Sequence[Measurement | None],
             center: str = MEDIAN) -> Measurement | None:
    """One measurement of several placements: every sample, the placements' medians as its
    repeats (so its number is the median of theirs, or their interquartile mean with
    `center` IQM), every clock reading; undersampled when any was. None when none was
    measured; one placement is returned as it is."""
    taken = [m for m in measurements if m is not None]
    if len(taken) <= 1:
        return taken[0] if taken else None
    first = taken[0]
    return Measurement(tuple(s for m in taken for s in m.samples_ms), first.timer,
                       first.calls_per_sample, sum(m.warmup_calls for m in taken),
                       repeats=tuple(m.median for m in taken),
                       fallback=next((m.fallback for m in taken if m.fallback), None),
                       clocks=tuple(c for m in taken for c in m.clocks),
                       undersampled=any(m.undersampled for m in taken), center=center)


def input_bytes(inputs) -> int:
    """The bytes of the distinct tensor storages in a case's inputs (its args and kwargs, in
    lists, tuples and dicts too)."""
    return sum(storages(inputs).values())


def room_for(backend, device_index: int, nbytes: int) -> bool:
    """Whether another copy of `nbytes` of inputs fits in new memory: the driver's free count
    covers it twice (the copy, and what the timed calls allocate), a spacer and RESERVE_BYTES.
    False where the runtime does not say (nothing would stop the copies piling up)."""
    free = backend.memory_free(device_index)
    return free is not None and free >= 2 * nbytes + SHIFT_MAX_BYTES + RESERVE_BYTES


class Mover:
    """A case's placements after the first: `move` builds the inputs again elsewhere, in the
    run's placement memory mode (`reused` or `new`, see above); `close` lets go of what is
    held when the case ends. `seed_of(number)`: the spacer's seed for placement `number`."""

    def __init__(self, backend, device_index: int, mode: str, seed_of):
        self.backend, self.device_index, self.mode, self.seed_of = \
            backend, device_index, mode, seed_of
        self.kept: list = []                    # earlier placements' inputs (new memory)
        self.held = contextlib.ExitStack()      # … and their spacers, to the case's end
        self.current = contextlib.ExitStack()   # this placement's spacer (reused memory)
        self.in_new_memory = 0                  # placements whose inputs took new memory
        self.copied = 0                         # … whose build handed back earlier tensors
        self.not_moved = 0                      # … which stayed: no room for their copy
        self.earlier: list = []                 # weak references to every earlier input

    def move(self, number: int, fed: list, build):
        """Placement `number`'s inputs (number >= 1): fed[0], the inputs so far, is taken
        (None while the new ones are built) and kept or freed; `build()` makes them anew
        behind a spacer — and where it hands back tensors the inputs so far use (an adapter
        that made them once), they are copied there, so that the data does move."""
        self.current.close()
        inputs, fed[0] = fed[0], None
        self.earlier += storage_refs(inputs)
        keep = False
        if self.mode == NEW:
            self.backend.empty_cache()          # what the allocator caches counts as free
            keep = room_for(self.backend, self.device_index, input_bytes(inputs))
        if keep:
            self.kept.append(inputs)
        else:
            self.mode = REUSED                  # short once: the case's later ones reuse
            self.release()
        del inputs                              # freed before the allocator's cache is emptied
        stack = self.held if keep else self.current
        stack.enter_context(elsewhere(self.backend, self.device_index, self.seed_of(number)))
        self.in_new_memory += keep
        built = build()
        if not handed_back(built, self.earlier):
            return built
        if not room_for(self.backend, self.device_index, input_bytes(built)):
            self.not_moved += 1                 # timed where they are: a copy would not fit
            return built
        self.copied += 1
        return pristine_copy(built)

    def release(self) -> None:
        """Every earlier placement's inputs and spacer let go."""
        self.kept.clear()
        self.held.close()

    def close(self) -> None:
        self.current.close()
        self.release()
