"""Many screen / A/B roots of one corpus lined up by build: per op its delta over builds,
and the build where it changed.

A build is a root, named by side B's compiler identity (`triton 3.6.0`, with the commit
when recorded) and ordered by the date the root started (then by name). Each op's point in a
build is its median delta with its range over shapes (a screen's or an A/B's report).

The change step rule: an op changed at build k when build k's range over shapes (its
[low, high]) excludes build k-1's median delta and the medians differ by more than
STEP_PCT; between two noise floors (NO_IR_DIFF on both builds) no step is flagged, because
identical code cannot have been changed by the build. The first build has no step.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .build import build
from .sources import epoch
from .model import OpEntry, Report

STEP_PCT = 1.0          # medians closer than this are never a step


@dataclass
class Build:
    root: str
    label: str            # compiler identity of side B
    started: str
    kind: str


@dataclass
class OpHistory:
    op: str
    family: str = "-"
    points: list[OpEntry | None] = field(default_factory=list)   # one per build
    steps: list[int] = field(default_factory=list)               # builds where it changed


def is_step(before: OpEntry | None, now: OpEntry | None, step_pct: float = STEP_PCT) -> bool:
    """The change rule (module docstring) between two consecutive builds of one op."""
    if before is None or now is None or before.delta is None or now.delta is None:
        return False
    if before.noise and now.noise:
        return False
    if abs(now.delta - before.delta) <= step_pct:
        return False
    low = now.low if now.low is not None else now.delta
    high = now.high if now.high is not None else now.delta
    return not (low <= before.delta <= high)


def line_up(reports: list[Report], step_pct: float = STEP_PCT
            ) -> tuple[list[Build], list[OpHistory]]:
    """(the builds in order, one history per op seen in any build)."""
    order = sorted(range(len(reports)),
                   key=lambda i: (epoch(reports[i].headline.started) or 0.0, reports[i].root))
    builds, histories = [], {}
    for n, i in enumerate(order):
        r = reports[i]
        side = r.headline.sides[-1] if r.headline.sides else None
        builds.append(Build(r.root, side.compiler if side else "-", r.headline.started,
                            r.headline.kind))
        for e in r.ops:
            h = histories.setdefault(e.op, OpHistory(e.op, e.family, [None] * len(order)))
            h.points[n] = e
    for h in histories.values():
        h.steps = [k for k in range(1, len(builds)) if is_step(h.points[k - 1], h.points[k],
                                                                 step_pct)]
    return builds, sorted(histories.values(), key=lambda h: (not h.steps, h.op))


def load(roots) -> list[Report]:
    return [build(root) for root in roots]
