"""The turns a run takes with its peer, when a round of an A/B runs both sides at once.

`zlh ab --round-process turns` runs a round's two sides together, each in its side's worker,
their samples taken in turns on the device (measure/baton.py). The worker enters
`taking(spec)` around the run (spec: the job's `turns` — the baton's token, this side's label,
the peer's, whether this side goes first); `current()` is what the runner gives its timers
(None outside such a round). On the way out the peer is told that this side's run ended, so a
peer still waiting for a case this side never measured goes on alone at once.
"""
from __future__ import annotations

import contextlib

from ..measure.baton import Baton, SampleTurns

_CURRENT: list[SampleTurns] = []


def current() -> SampleTurns | None:
    """The turns of the run in progress, or None."""
    return _CURRENT[-1] if _CURRENT else None


@contextlib.contextmanager
def taking(spec):
    """Turns with the peer named by `spec` for the block (nothing when spec is empty)."""
    if not spec:
        yield None
        return
    with Baton(str(spec["token"]), str(spec["side"]), str(spec["peer"])) as baton:
        turns = SampleTurns(baton, bool(spec["first"]))
        _CURRENT.append(turns)
        try:
            yield turns
        finally:
            _CURRENT.pop()
            turns.finish()
