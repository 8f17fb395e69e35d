"""One report as one self-contained HTML page: the headline, the charts (inline SVG), the
op table and each op's detail (built by the page's own script from embedded JSON).

Nothing is fetched: no external script, style or font, so the page opens from a root
copied off a lab machine. Every text that came from a run is escaped (SVG, table cells
through textContent); the TTGIR diff is escaped when it is made (diff.py).
"""
from __future__ import annotations

import json
from html import escape

from ..common.files import PAGE_MARK
from . import clocks, svg
from .model import OpEntry, Report
from .runs import META_COLUMNS
from .script import SCRIPT, STYLE

RANKED = 25                 # ops in the chart of the largest changes
DIFF_PAGE_BUDGET = 600_000  # characters of TTGIR diff in one page, the largest changes first
PAGE_LIMIT = 2_000_000      # bytes; a page over this is made again with half the diff budget
COLUMNS = (("o", "op"), ("s", "status"), ("f", "family"), ("d", "delta %"),
           ("l", "range %"), ("k", "kernels A→B"), ("c", "convert_layout A→B"),
           ("e", "elapsed s"), ("n", "notes"), ("r", "reason"))


def _r(v):
    return None if v is None else round(v, 4)


def diff_kept(ops: list[OpEntry], budget: int = DIFF_PAGE_BUDGET) -> set[int]:
    """The ops (by index) whose TTGIR diff the page embeds: the largest changes first, until
    the page's budget is spent (the others keep their links to the TTGIR files)."""
    order = sorted((i for i, e in enumerate(ops) if e.diff_html),
                   key=lambda i: -abs(ops[i].delta or 0.0))
    kept, used = set(), 0
    for i in order:
        if used + len(ops[i].diff_html) <= budget:
            kept.add(i)
            used += len(ops[i].diff_html)
    return kept


def op_data(i: int, e: OpEntry, with_diff: bool = True) -> dict:
    """The compact JSON of one op (short keys: a 1,115-op page must stay small)."""
    shapes = [[s.label, _r(s.delta), _r(s.low), _r(s.high), _r(s.a_ms), _r(s.b_ms),
               s.significant, s.flags, s.throttled] for s in e.shapes]
    axis = svg.robust_range([s.delta for s in e.shapes],
                            [v for s in e.shapes for v in (s.low, s.high)])
    meta = [c for c in META_COLUMNS if any(c in k.a or c in k.b for k in e.changed_kernels)]
    links = list(e.links) + [(f"TTGIR {side} {k.shape}/{k.kernel}", f)
                             for k in e.changed_kernels
                             for side, f in (("A", k.file_a), ("B", k.file_b)) if f]
    extra = "\n".join(f"{k}: {json.dumps(v, sort_keys=True)}" for k, v in e.extra.items())
    return {"i": i, "o": e.op, "s": e.status, "f": e.family, "d": _r(e.delta),
            "l": _r(e.low), "h": _r(e.high), "k": e.kernels, "c": e.convert_layout,
            "e": None if e.elapsed_s is None else round(e.elapsed_s, 1), "n": e.notes,
            "r": e.reason, "z": e.noise,
            "D": {"shapes": shapes, "axis": [round(axis[0], 3), round(axis[1], 3)],
                  "links": links, "meta": meta,
                  "kernels": [{"shape": k.shape, "kernel": k.kernel, "a": k.a, "b": k.b}
                              for k in e.changed_kernels],
                  "split": e.split, "extra": extra,
                  "diff": e.diff_html if with_diff else "",
                  "diff_left_out": bool(e.diff_html) and not with_diff}}


def _headline(report: Report) -> str:
    h = report.headline
    rows = [(f"side {s.label}", f"{s.compiler} — {s.switch}") for s in h.sides]
    took = "-" if h.duration_s is None else f"{h.duration_s / 60:.1f} min"
    rows += [("where", f"device {h.device}; cards {h.cards}"), ("caliber", h.caliber),
             ("when", f"{h.started} ({took})"), ("root", report.root)]
    rows += [("note", n) for n in h.notes]
    counts = "".join(f"<span>{escape(k)} {v}</span>" for k, v in h.counts.items())
    return ('<table class="head">' + "".join(f"<tr><td>{escape(k)}</td><td>{escape(str(v))}"
                                             f"</td></tr>" for k, v in rows) +
            f'<tr><td>counts</td><td class="counts">{counts}</td></tr></table>')


def charts(report: Report) -> str:
    groups: dict[str, list] = {}
    for e in report.ops:
        if e.delta is not None:
            name = f"{e.status} (noise floor)" if e.noise else e.status
            groups.setdefault(name, []).append((e.op, e.delta))
    label = report.headline.delta_label
    moved = [e for e in report.ops if e.delta is not None and not e.noise] or \
        [e for e in report.ops if e.delta is not None]
    top = sorted(moved, key=lambda e: -abs(e.delta))[:RANKED]
    parts = ["<h2>Distribution of the median delta over ops</h2>",
             svg.strip(groups, label) or '<p class="note">no op has a delta</p>',
             f"<h2>Largest changes (top {len(top)}; bar: the range over shapes)</h2>",
             svg.ranked([(e.op, e.delta, e.low, e.high, e.noise) for e in top], label)]
    tele = clocks.chart(report.telemetry)
    parts += ["<h2>Telemetry over the run</h2>",
              tele or '<p class="note">no telemetry.tsv in this root</p>']
    return "".join(parts)


def render(report: Report) -> str:
    """The page; over PAGE_LIMIT bytes, made again with half the TTGIR diff budget
    (down to none) — the diffs are the one part of a page that can give way."""
    budget = DIFF_PAGE_BUDGET
    while True:
        html = _render(report, budget)
        if len(html.encode("utf-8")) <= PAGE_LIMIT or budget == 0:
            return html
        budget = budget // 2 if budget > 20_000 else 0


def _render(report: Report, budget: int) -> str:
    h = report.headline
    kept = diff_kept(report.ops, budget)
    data = {"cols": [k for k, _ in COLUMNS],
            "ops": [op_data(i, e, i in kept) for i, e in enumerate(report.ops)]}
    # `</` inside a string would end the script element and `<!--` change how it is
    # parsed: JSON allows `<\/` and `\u0021`
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False).replace(
        "</", "<\\/").replace("<!--", "<\\u0021--")
    statuses = "".join(f'<option value="{escape(s)}">{escape(s)}</option>'
                       for s in sorted({e.status for e in report.ops}))
    heads = "".join(f'<th data-k="{k}">{escape(t)}</th>' for k, t in COLUMNS)
    return "".join([
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">{PAGE_MARK}',
        f"<title>{escape(h.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(h.title)}</h1>", _headline(report), charts(report),
        "<h2>Ops</h2>",
        '<div class="controls"><input id="filter" type="search" placeholder="filter: op, '
        'family, notes, reason"> <select id="status"><option value="">every status</option>'
        f'{statuses}</select> <span id="shown" class="note"></span></div>',
        f'<table id="ops"><thead><tr>{heads}</tr></thead><tbody></tbody></table>',
        f'<script type="application/json" id="data">{blob}</script>',
        f"<script>{SCRIPT}</script></body></html>\n"])
