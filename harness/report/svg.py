"""The page's charts as inline SVG (no script, no font, no network).

Axes are robust: the range covers 0 and the bulk of the values drawn (medians and interval
ends), less the outermost ones that lie more than GAP times farther from 0 than the next one
in; anything beyond is drawn at the edge as a clipped mark (purple) whose tooltip gives the
real value. So one delta of -102 % or an interval of +4.8 million % cannot flatten every
other point. A delta (A / B - 1) x 100 is never below -100, nor is the axis.
"""
from __future__ import annotations

import math
import zlib
from html import escape

FLOOR = -100.0
COLOURS = {"faster": "#2e7d32", "slower": "#c62828", "same": "#757575", "noise": "#90a4ae",
           "clip": "#6a1b9a"}


GAP = 10.0                  # a point this many times farther from 0 than the next is clipped
MIN_SPAN = 1.0              # ... but never for a spread of deltas within +-1 %


def bulk(values) -> list[float]:
    """The finite values less the outermost ones: scanning from the farthest from 0 inwards,
    everything before a value more than GAP times farther from 0 than the next one in goes,
    repeatedly (a few far outliers go together), but never half the values or more."""
    ordered = sorted((v for v in values if v is not None and math.isfinite(v)),
                     key=lambda v: -abs(v))
    start, end = 0, (len(ordered) + 1) // 2 - 1      # fewer than half the values go
    while True:
        cut = next((i for i in range(start, end)
                    if abs(ordered[i]) > GAP * max(abs(ordered[i + 1]), MIN_SPAN)), None)
        if cut is None:
            return ordered[start:]
        start = cut + 1


def robust_range(points, extras=()) -> tuple[float, float]:
    """(low, high) of an axis for `points` (medians) and `extras` (interval ends): the bulk
    of them all, and 0."""
    values = bulk([*points, *extras])
    if not values:
        return -1.0, 1.0
    lo, hi = min(min(values), 0.0), max(max(values), 0.0)
    pad = (hi - lo) * 0.04 or 0.5
    return max(lo - pad, FLOOR), hi + pad


class Axis:
    """Maps a delta to x within [left, left + width] over (low, high); clips outside."""

    def __init__(self, low: float, high: float, left: float, width: float):
        self.low, self.high, self.left, self.width = low, high, left, width

    def x(self, value: float) -> float:
        v = min(max(value, self.low), self.high)
        return self.left + (v - self.low) / (self.high - self.low) * self.width

    def clipped(self, value: float | None) -> bool:
        return value is not None and not (self.low <= value <= self.high)

    def ticks(self, n: int = 6) -> list[float]:
        raw = (self.high - self.low) / n
        step = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
        for m in (1, 2, 5, 10):
            if raw <= step * m:
                step *= m
                break
        first = math.ceil(self.low / step) * step
        return [first + i * step for i in range(int((self.high - first) / step) + 1)]


def _frame(axis: Axis, top: float, bottom: float, caption: str) -> list[str]:
    parts = [f'<text x="{axis.left}" y="12">{escape(caption)}</text>']
    for t in axis.ticks():
        x = axis.x(t)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" '
                     f'stroke="{"#444" if abs(t) < 1e-12 else "#e0e0e0"}"/>'
                     f'<text x="{x:.1f}" y="{bottom + 12}" text-anchor="middle">{t:g}</text>')
    return parts


def colour(delta, low, high, noise: bool = False) -> str:
    if noise:
        return COLOURS["noise"]
    if low is not None and high is not None:
        return COLOURS["faster"] if low > 0 else COLOURS["slower"] if high < 0 else COLOURS["same"]
    if delta is None:
        return COLOURS["same"]
    return COLOURS["faster"] if delta > 0 else COLOURS["slower"] if delta < 0 else COLOURS["same"]


def _jitter(name: str, lane_h: float) -> float:
    return (zlib.crc32(name.encode("utf-8", "replace")) % 1000) / 1000 * (lane_h - 8) + 4


def strip(groups: dict[str, list[tuple[str, float]]], caption: str, width: int = 760) -> str:
    """One lane per group (IR_CHANGED, NO_IR_DIFF noise floors, ...), a dot per op."""
    lanes = [(g, pts) for g, pts in groups.items() if pts]
    if not lanes:
        return ""
    left, lane_h, top = 240, 34, 20
    axis = Axis(*robust_range([v for _, pts in lanes for _, v in pts]), left, width - left - 10)
    bottom = top + lane_h * len(lanes)
    parts = [f'<svg class="chart" width="{width}" height="{bottom + 18}" role="img" '
             f'aria-label="{escape(caption)}">', *_frame(axis, top, bottom, caption)]
    for i, (group, pts) in enumerate(lanes):
        y0 = top + i * lane_h
        parts.append(f'<text x="{left - 6}" y="{y0 + lane_h / 2 + 4}" text-anchor="end">'
                     f'{escape(group)} ({len(pts)})</text>')
        noise = "NO_IR_DIFF" in group
        for name, v in pts:
            cls = ' class="clip"' if axis.clipped(v) else ""
            fill = COLOURS["clip"] if cls else colour(v, None, None, noise)
            parts.append(f'<circle{cls} cx="{axis.x(v):.1f}" cy="{y0 + _jitter(name, lane_h):.1f}"'
                         f' r="{4 if cls else 2.5}" fill="{fill}" fill-opacity=".7">'
                         f'<title>{escape(name)} {v:+.2f}%</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def ranked(rows: list[tuple[str, float, float | None, float | None, bool]], caption: str,
           width: int = 760) -> str:
    """A forest of (label, delta, low, high, noise), one row each, in the order given."""
    if not rows:
        return ""
    left, row_h, top = 260, 16, 20
    axis = Axis(*robust_range([r[1] for r in rows], [v for r in rows for v in r[2:4]]),
                left, width - left - 10)
    bottom = top + row_h * len(rows)
    parts = [f'<svg class="chart" width="{width}" height="{bottom + 18}" role="img" '
             f'aria-label="{escape(caption)}">', *_frame(axis, top, bottom, caption)]
    for i, (label, delta, low, high, noise) in enumerate(rows):
        y = top + i * row_h + row_h / 2
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{escape(label[:38])}</text>')
        parts.append(_whisker(axis, y, delta, low, high, noise, label))
    parts.append("</svg>")
    return "".join(parts)


def _whisker(axis: Axis, y: float, delta, low, high, noise: bool, label: str) -> str:
    col = colour(delta, low, high, noise)
    tip = f"{label}: {delta:+.2f}%" if delta is not None else label
    if low is not None and high is not None:
        tip += f" [{low:+.2f}, {high:+.2f}]"
    out = []
    if low is not None and high is not None:
        out.append(f'<line x1="{axis.x(low):.1f}" y1="{y:.1f}" x2="{axis.x(high):.1f}" '
                   f'y2="{y:.1f}" stroke="{col}" stroke-width="2"/>')
        for end in (low, high):
            if axis.clipped(end):
                x = axis.x(end)
                d = -5 if end < axis.low else 5
                out.append(f'<path class="clip" d="M{x:.1f},{y - 4:.1f} L{x + d:.1f},{y:.1f} '
                           f'L{x:.1f},{y + 4:.1f}Z" fill="{COLOURS["clip"]}"/>')
    if delta is not None:
        clip = axis.clipped(delta)
        out.append(f'<rect{" class=clip" if clip else ""} x="{axis.x(delta) - 3:.1f}" '
                   f'y="{y - 3:.1f}" width="6" height="6" '
                   f'fill="{COLOURS["clip"] if clip else col}"/>')
    return f'<g><title>{escape(tip)}</title>{"".join(out)}</g>'
