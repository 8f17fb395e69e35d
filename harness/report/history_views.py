"""History on the terminal and as one page: per op its delta over builds, steps marked."""
from __future__ import annotations

import json
from html import escape

from tabulate import tabulate

from ..common import style
from ..common.files import PAGE_MARK
from . import svg
from .history import Build, OpHistory
from .script import STYLE

MAX_ROWS_TEXT = 40


def _cell(e) -> str:
    if e is None:
        return "·"
    if e.delta is None:
        return e.status
    return f"{e.delta:+.2f}" + ("n" if e.noise else "")


def text(builds: list[Build], ops: list[OpHistory]) -> str:
    lines = [f"== history of {len(ops)} ops over {len(builds)} builds"]
    lines += [f"build {k + 1}: {b.label} ({b.started}) {b.root}" for k, b in enumerate(builds)]
    stepped = [h for h in ops if h.steps]
    lines.append(f"ops that changed: {len(stepped)} (a step: the build's range over shapes "
                 f"excludes the previous build's median; 'n': a noise floor, identical code)")
    rows = [[h.op, h.family] + [_cell(e) + ("*" if k in h.steps else "")
                                for k, e in enumerate(h.points)]
            for h in (stepped or ops)[:MAX_ROWS_TEXT]]
    lines.append(tabulate(rows, headers=["op", "family"] + [f"b{k + 1}" for k in
                                                             range(len(builds))],
                          tablefmt=style.tablefmt(), disable_numparse=True))
    if len(stepped or ops) > MAX_ROWS_TEXT:
        lines.append(f"... {len(stepped or ops) - MAX_ROWS_TEXT} more (--html for all)")
    return "\n".join(lines)


def _spark(h: OpHistory, axis: svg.Axis, width: int, n: int) -> str:
    step_x = (width - 20) / max(n - 1, 1)
    pts, parts = [], []
    for k, e in enumerate(h.points):
        if e is None or e.delta is None:
            continue
        x, y = 10 + k * step_x, 26 - (axis.x(e.delta) - axis.left) / axis.width * 22
        pts.append(f"{x:.1f},{y:.1f}")
        mark = "#c62828" if k in h.steps else svg.colour(e.delta, e.low, e.high, e.noise)
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{4 if k in h.steps else 2.5}" '
                     f'fill="{mark}"><title>b{k + 1} {escape(e.status)} {e.delta:+.2f}%'
                     f'{" STEP" if k in h.steps else ""}</title></circle>')
    line = f'<polyline fill="none" stroke="#999" points="{" ".join(pts)}"/>' if pts else ""
    return f'<svg width="{width}" height="30">{line}{"".join(parts)}</svg>'


def html(builds: list[Build], ops: list[OpHistory], title: str = "zlh history") -> str:
    values = [e.delta for h in ops for e in h.points if e is not None and e.delta is not None]
    axis = svg.Axis(*svg.robust_range(values), 0, 100)
    width = max(120, 40 * len(builds))
    head = "".join(f"<th>b{k + 1}</th>" for k in range(len(builds)))
    rows = []
    for h in ops:
        cells = "".join(f'<td class="num{" step" if k in h.steps else ""}">{escape(_cell(e))}'
                        f"</td>" for k, e in enumerate(h.points))
        rows.append(f"<tr><td>{escape(h.op)}</td><td>{escape(h.family)}</td>"
                    f"<td>{_spark(h, axis, width, len(builds))}</td>{cells}</tr>")
    legend = "".join(f"<li>b{k + 1}: {escape(b.label)} — {escape(b.started)} — "
                     f"{escape(b.root)}</li>" for k, b in enumerate(builds))
    stepped = sum(1 for h in ops if h.steps)
    data = json.dumps({"builds": len(builds), "ops": len(ops), "stepped": stepped})
    return "".join([
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">{PAGE_MARK}',
        f"<title>{escape(title)}</title><style>{STYLE}td.step{{background:#fdecea;"
        "font-weight:bold}</style></head><body>",
        f"<h1>{escape(title)}</h1><ol>{legend}</ol>",
        f'<p class="note">{stepped} of {len(ops)} ops changed at some build (red: the step — '
        "the build's range over shapes excludes the previous build's median; 'n': identical "
        "code, a noise floor). Ops with a step come first.</p>",
        f'<table id="history"><tr><th>op</th><th>family</th><th>delta % over builds</th>'
        f"{head}</tr>{''.join(rows)}</table>",
        f'<script type="application/json" id="data">{data}</script></body></html>\n'])
