"""Clocks over time for the HTML report: telemetry.tsv points and the time window of each op.

`for_report(root)` gathers what the page needs from an A/B (or calibrate) root — the points
of its telemetry.tsv and, per op, the span from its first run's start to its last run's end
(run.json `started_at` / `finished_at`). `clock_svg(points, window)` draws the SM and memory
clocks over that window as inline SVG (no network), with a red tick where a slowdown reason
was active.
"""
from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path

from ..store.reader import read_info
from ..store.rundir import safe_name
from . import tsv

_W, _H = 420, 150          # plot area
_LEFT, _TOP, _BOTTOM = 48, 18, 22


def for_report(root, ops) -> dict:
    """{"points": [point dicts], "windows": {op: [start, end]}} for the ops of a report."""
    points = [p.to_dict() for p in tsv.read(Path(root) / tsv.FILE)]
    windows = {}
    for op in ops:
        span = op_window(Path(root) / safe_name(op))
        if span:
            windows[op] = list(span)
    return {"points": points, "windows": windows}


def op_window(op_dir: Path) -> tuple[float, float] | None:
    """(first start, last end) over the run directories under `op_dir`/r*_*/."""
    starts, ends = [], []
    for run_json in sorted(op_dir.glob("r*_*/*/run.json")):
        try:
            info = read_info(run_json.parent)
        except Exception:  # noqa: BLE001 - a broken run leaves its time out
            continue
        for key, into in (("started_at", starts), ("finished_at", ends)):
            when = _epoch(info.get(key))
            if when is not None:
                into.append(when)
    if not starts:
        return None
    return min(starts), max(ends) if ends else max(starts)


def clock_svg(points: list[dict], window: list[float] | None = None, margin_s: float = 1.0
              ) -> str:
    """SM (blue) and memory (grey) clock over time within `window`; '' without points."""
    if window:
        points = [p for p in points
                  if window[0] - margin_s <= p["time"] <= window[1] + margin_s]
    points = [p for p in points if p.get("sm_clock_mhz") is not None]
    if not points:
        return ""
    t0, t1 = points[0]["time"], points[-1]["time"]
    span = max(t1 - t0, 1e-3)
    top = max(max(p["sm_clock_mhz"], p.get("mem_clock_mhz") or 0) for p in points) * 1.05
    top = top or 1.0                     # every clock read 0: a flat line at the bottom

    def xy(p, key):
        return (_LEFT + (p["time"] - t0) / span * _W,
                _TOP + _H - p[key] / top * _H)

    parts = [f'<svg width="{_LEFT + _W + 10}" height="{_TOP + _H + _BOTTOM}" role="img" '
             f'aria-label="device clocks over time">',
             f'<text x="{_LEFT}" y="12">clock MHz (SM blue, memory grey); red: slowdown</text>',
             f'<line x1="{_LEFT}" y1="{_TOP + _H}" x2="{_LEFT + _W}" y2="{_TOP + _H}" '
             'stroke="#555"/>',
             f'<text x="{_LEFT - 4}" y="{_TOP + 4}" text-anchor="end">{top:.0f}</text>',
             f'<text x="{_LEFT - 4}" y="{_TOP + _H}" text-anchor="end">0</text>',
             f'<text x="{_LEFT + _W}" y="{_TOP + _H + 16}" text-anchor="end">'
             f'{span:.0f} s</text>']
    for key, colour in (("mem_clock_mhz", "#9e9e9e"), ("sm_clock_mhz", "#1565c0")):
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in
                          (xy(p, key) for p in points if p.get(key) is not None))
        if coords:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                         f'points="{coords}"/>')
    for p in points:
        slow = [r for r in p.get("throttle") or () if r in tsv.SLOWDOWN_REASONS]
        if slow:
            x, _ = xy(p, "sm_clock_mhz")
            parts.append(f'<line x1="{x:.1f}" y1="{_TOP + _H}" x2="{x:.1f}" '
                         f'y2="{_TOP + _H - 8}" stroke="#c62828" stroke-width="2">'
                         f'<title>{escape(",".join(slow))}</title></line>')
    parts.append("</svg>")
    return "\n".join(parts)


def _epoch(text) -> float | None:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None
