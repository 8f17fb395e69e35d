"""A/B comparison report as one self-contained HTML page.

The page has to open from a run directory copied off a lab machine, often with no network,
so nothing is fetched: styles are inline and the chart is inline SVG. Every piece of text
that came from a run (op names, shape labels, markers, run directories) is escaped, because
shape labels are free-form strings written by benchmarks.

Input: the report document as written to report.json (`report.report_document`). Missing
numbers (None / NaN) render as a dash rather than failing; an op with no paired rows still
gets its section.
"""
from __future__ import annotations

import math
from html import escape

from ..common.files import PAGE_MARK
from ..store.compiler import short as short_compiler
from .report import family_note
from ..telemetry.chart import clock_svg

# Chart geometry (pixels).
_LABEL_W = 280      # left column holding "dtype shape" labels
_PLOT_W = 480       # delta axis
_ROW_H = 18
_TOP = 24           # room for the axis caption
_LABEL_CHARS = 44   # longer labels are cut on screen; the full text is in the tooltip

_COLOURS = {"faster": "#2e7d32", "slower": "#c62828", "unchanged": "#9e9e9e"}
_FLOOR = -100.0     # delta % = (A / B - 1) x 100 cannot go below -100
_REACH = 1.0        # whiskers reach at most this many delta spans beyond the deltas
INTERPRETED = ("interpreted (cpu backend): host-clock times of Triton's interpreter; they show "
               "the harness works, not a GPU's speed")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
.verdict { font-family: monospace; background: #eee; padding: 0 .4em; border-radius: 3px; }
.summary { margin: .4em 0; }
.sides { color: #555; font-size: .9em; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
tr.faster td.delta { color: #2e7d32; font-weight: bold; }
tr.slower td.delta { color: #c62828; font-weight: bold; }
tr.problem th, tr.problem td { background: #fdecea; }
.problems { background: #fdecea; border-left: 4px solid #c62828; padding: .3em .8em; }
.empty { color: #777; font-style: italic; }
pre { background: #f7f7f7; padding: .5em; overflow-x: auto; font-size: .8em; }
svg text { font-family: monospace; font-size: 11px; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
"""


def render_html(report: dict) -> str:
    """The whole page for an A/B report.

    report = {"title", "generated_at", "ops": [op, ...], "telemetry"?}; each op carries op, verdict,
    caliber, caliber_problems, sides, rows, unpaired, summary and markers (see the module
    that builds the report for the exact fields).
    """
    title = str(report.get("title") or "zlh A/B report")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        PAGE_MARK,
        f"<title>{escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="sides">generated {_text(report.get("generated_at"))}</p>',
    ]
    ops = report.get("ops") or []
    if not ops:
        parts.append('<p class="empty">no ops in this report</p>')
    telemetry = report.get("telemetry") or {}
    parts.extend(_op_section(op, telemetry) for op in ops)
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


# --- one op ------------------------------------------------------------------------------

def _op_section(op: dict, telemetry: dict | None = None) -> str:
    rows = op.get("rows") or []
    parts = [
        "<section>",
        f'<h2>{_text(op.get("op"))} <span class="verdict">'
        f'{_text(op.get("verdict") or "no verdict")}'
        "</span></h2>",
        _sides_line(op.get("sides") or {}),
        f'<p class="summary">{_summary_line(op.get("summary") or {})}</p>',
    ]
    if (op.get("caliber") or {}).get("backend") == "cpu":
        parts.append(f'<p class="sides">{escape(INTERPRETED)}</p>')
    clocks = clock_svg((telemetry or {}).get("points") or [],
                       ((telemetry or {}).get("windows") or {}).get(op.get("op")))
    if rows:
        # the clocks while this op ran, beside its deltas (telemetry.tsv of the A/B root)
        parts.append(f'<div class="charts">{_chart(rows)}{clocks}</div>')
        parts.append(_rows_table(rows))
    else:
        parts.append('<p class="empty">no paired rows</p>')
    parts.append(_unpaired(op.get("unpaired") or []))
    parts.append(_caliber(op.get("caliber") or {}, op.get("caliber_problems") or []))
    parts.append(_markers(op.get("markers") or []))
    parts.append("</section>")
    return "\n".join(parts)


def _sides_line(sides: dict) -> str:
    items = []
    for key in ("A", "B"):
        side = sides.get(key) or {}
        label = side.get("label") or key
        items.append(f"<b>{key}</b> = {_text(label)}, {_text(short_compiler(side.get('compiler')))}"
                     f" (<code>{_text(side.get('run_dir'))}</code>)")
    return f'<p class="sides">{"; ".join(items)}</p>'


def _summary_line(summary: dict) -> str:
    """Counts first (they are the verdict), then the size of the effect."""
    if not summary:
        return '<span class="empty">no summary</span>'
    geomean = summary.get("geomean_speedup")
    return (f"{_text(summary.get('n', 0))} shapes: "
            f"{_text(summary.get('faster', 0))} faster, "
            f"{_text(summary.get('slower', 0))} slower, "
            f"{_text(summary.get('unchanged', 0))} unchanged; "
            f"geomean speedup {_num(geomean, '.4f')}x"
            + (f" [{_num(summary['geomean_ci_low'], '.4f')}, "
               f"{_num(summary['geomean_ci_high'], '.4f')}] (95% CI over "
               f"{_text(summary.get('geomean_interval') or 'samples')})"
               if _is_num(summary.get("geomean_ci_low"))
               and _is_num(summary.get("geomean_ci_high")) else "")
            + "; "
            f"delta {_pct(summary.get('delta_min_pct'))} .. {_pct(summary.get('delta_max_pct'))}"
            + (f"; {_text(summary['within_noise'])} significant within the noise floor"
               if summary.get("within_noise") else "")
            + _text(family_note(summary)))


# --- chart -------------------------------------------------------------------------------

def _chart(rows: list[dict]) -> str:
    """Horizontal dot-and-whisker chart of delta_pct per shape, sorted ascending.

    Each shape is one dot (coloured by its verdict) with its confidence interval as a
    whisker; the vertical line is zero. Shapes with no usable delta are not drawn and are
    counted below the chart instead.
    """
    plotted = sorted((r for r in rows if _is_num(r.get("delta_pct"))),
                     key=lambda r: float(r["delta_pct"]))
    missing = len(rows) - len(plotted)
    low, high = _axis_range(plotted)
    width = _LABEL_W + _PLOT_W + 20
    height = _TOP + _ROW_H * max(len(plotted), 1) + 8

    def x_of(value: float) -> float:
        return _LABEL_W + (value - low) / (high - low) * _PLOT_W

    zero_x = x_of(0.0)
    parts = [
        # Inline SVG in HTML needs no namespace declaration (and the page stays link-free).
        f'<svg width="{width}" height="{height}" '
        f'role="img" aria-label="delta percent per shape">',
        f'<text x="{zero_x:.1f}" y="12" text-anchor="middle">0 (B faster &#8594;)</text>',
        f'<line x1="{zero_x:.1f}" y1="{_TOP - 6}" x2="{zero_x:.1f}" y2="{height - 4}" '
        'stroke="#555" stroke-width="1"/>',
    ]
    # End labels only where they do not collide with the zero caption.
    if zero_x - _LABEL_W > 140:
        parts.append(f'<text x="{_LABEL_W}" y="12">{_pct(low)}</text>')
    if _LABEL_W + _PLOT_W - zero_x > 140:
        parts.append(f'<text x="{_LABEL_W + _PLOT_W}" y="12" text-anchor="end">{_pct(high)}</text>')
    clipped = 0
    for i, row in enumerate(plotted):
        part, cut = _chart_row(row, _TOP + i * _ROW_H + _ROW_H / 2, x_of, low, high)
        parts.append(part)
        clipped += cut
    parts.append("</svg>")
    if clipped:
        parts.append(f'<p class="empty">{clipped} interval(s) reach beyond the axis: drawn '
                     f'to its edge with an arrow; their bounds are in the table</p>')
    if missing:
        parts.append(f'<p class="empty">{missing} row(s) without a delta not plotted</p>')
    return "\n".join(parts)


def _chart_row(row: dict, y: float, x_of, low: float, high: float) -> tuple[str, bool]:
    """One shape's dot and whisker; (the SVG, whether the whisker was cut at the axis)."""
    colour = _COLOURS[_row_class(row)]
    label = _row_label(row)
    shown = label if len(label) <= _LABEL_CHARS else label[:_LABEL_CHARS - 1] + "\u2026"
    delta = float(row["delta_pct"])
    lo, hi = row.get("ci_low_pct"), row.get("ci_high_pct")
    interval = (f" [{_pct(lo)}, {_pct(hi)}]" if _is_num(lo) and _is_num(hi) else "")
    parts = [f'<g><title>{escape(label)}: {_pct(delta)}{interval}</title>',
             f'<text x="{_LABEL_W - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(shown)}</text>']
    cut = False
    if _is_num(lo) and _is_num(hi):
        left, right = max(float(lo), low), min(float(hi), high)
        parts.append(f'<line x1="{x_of(left):.1f}" y1="{y:.1f}" x2="{x_of(right):.1f}" '
                     f'y2="{y:.1f}" stroke="{colour}" stroke-width="1.5"/>')
        for end, edge, step in ((float(lo), low, 5), (float(hi), high, -5)):
            if (end < edge) if step > 0 else (end > edge):
                cut = True
                x = x_of(edge)
                parts.append(f'<path class="clipped" d="M{x:.1f},{y:.1f} l{step},-4 l0,8 z" '
                             f'fill="{colour}"/>')
    parts.append(f'<circle class="mark" cx="{x_of(delta):.1f}" cy="{y:.1f}" r="4" '
                 f'fill="{colour}"/>')
    parts.append("</g>")
    return "".join(parts), cut


def _axis_range(rows: list[dict]) -> tuple[float, float]:
    """Axis limits covering zero and every delta, and the whiskers as far as the data's
    robust range: at most one span of the deltas beyond them (an interval of +4,800,000 %
    from an interpreted run must not flatten every point onto zero; a whisker cut there
    ends in an arrow), never below -100 % (a delta cannot), with a little margin."""
    deltas = [0.0] + [float(r["delta_pct"]) for r in rows if _is_num(r.get("delta_pct"))]
    d_low, d_high = min(deltas), max(deltas)
    reach = _REACH * max(d_high - d_low, 1.0)
    values = list(deltas)
    for row in rows:
        values += [min(max(float(row[k]), d_low - reach), d_high + reach)
                   for k in ("ci_low_pct", "ci_high_pct") if _is_num(row.get(k))]
    low, high = max(min(values), _FLOOR), max(values)
    if high - low < 1e-9:
        return (max(low - 1.0, _FLOOR), high + 1.0)
    pad = 0.05 * (high - low)
    return (max(low - pad, _FLOOR), high + pad)


# --- tables ------------------------------------------------------------------------------

_ROW_HEADERS = ("dtype", "shape", "occ", "A ms", "B ms", "delta %", "CI 95%", "p",
                "sig", "rounds min~max", "stable", "detectable %", "notes")


def _rows_table(rows: list[dict]) -> str:
    head = "".join(f"<th>{h}</th>" for h in _ROW_HEADERS)
    body = "\n".join(_table_row(r) for r in rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _table_row(row: dict) -> str:
    rounds = row.get("rounds") or {}
    span = (f"{_pct(rounds.get('min_delta_pct'))} ~ {_pct(rounds.get('max_delta_pct'))}"
            if rounds else "&#8212;")
    stable = ("yes" if rounds.get("sign_stable") else "NO") if rounds else "&#8212;"
    ci = (f"{_pct(row.get('ci_low_pct'))} .. {_pct(row.get('ci_high_pct'))}"
          if _is_num(row.get("ci_low_pct")) else "&#8212;")
    cells = [
        _td(_text(row.get("dtype")), text=True),
        _td(_text(row.get("shape_detail")), text=True),
        _td(_text(row.get("occurrence"))),
        _td(_num(row.get("a_ms"), ".4f")),
        _td(_num(row.get("b_ms"), ".4f")),
        f'<td class="delta">{_pct(row.get("delta_pct"))}</td>',
        _td(ci),
        _td(_num(row.get("p_value"), ".3g")),
        _td("noise" if row.get("within_noise") else "yes" if row.get("significant") else "no"),
        _td(span),
        _td(stable),
        _td(_num(rounds.get("detectable_pct"), ".3f") if rounds else "&#8212;"),
        _td(escape("; ".join(str(a) for a in row.get("annotations") or [])), text=True),
    ]
    return f'<tr class="{_row_class(row)}">{"".join(cells)}</tr>'


def _unpaired(items: list[dict]) -> str:
    if not items:
        return ""
    lines = [f"<li><b>{_text(i.get('side'))}</b> {_text(i.get('dtype'))} "
             f"{_text(i.get('shape_detail'))}: {_text(i.get('status'))}"
             f"{' (' + _text(i.get('reason')) + ')' if i.get('reason') else ''}</li>"
             for i in items]
    return "<h3>Unpaired rows</h3>\n<ul>\n" + "\n".join(lines) + "\n</ul>"


def _caliber(caliber: dict, problems: list[str]) -> str:
    """Caliber as a field/value table; fields named in a problem are highlighted."""
    parts = ["<h3>Caliber</h3>"]
    if problems:
        items = "".join(f"<li>{_text(p)}</li>" for p in problems)
        parts.append(f'<div class="problems"><b>caliber problems</b><ul>{items}</ul></div>')
    if caliber:
        rows = []
        for field, value in caliber.items():
            flagged = any(str(field) in str(p) for p in problems)
            cls = ' class="problem"' if flagged else ""
            rows.append(f'<tr{cls}><th>{_text(field)}</th>'
                        f'<td class="text">{_text(value)}</td></tr>')
        parts.append("<table>\n" + "\n".join(rows) + "\n</table>")
    else:
        parts.append('<p class="empty">no caliber recorded</p>')
    return "\n".join(parts)


def _markers(markers: list[str]) -> str:
    if not markers:
        return ""
    return "<h3>Markers</h3>\n<pre>" + escape("\n".join(str(m) for m in markers)) + "</pre>"


# --- formatting --------------------------------------------------------------------------

def _row_class(row: dict) -> str:
    """From the row's direction (read from its interval, after the correction), never from
    the sign of the delta: the two can disagree."""
    direction = row.get("direction") or 0
    return "faster" if direction > 0 else "slower" if direction < 0 else "unchanged"


def _row_label(row: dict) -> str:
    return f"{row.get('dtype') or ''} {row.get('shape_detail') or ''}".strip()


def _td(content: str, text: bool = False) -> str:
    return f'<td class="text">{content}</td>' if text else f"<td>{content}</td>"


def _text(value) -> str:
    """Escaped text; a dash for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&#8212;"
    return escape(str(value))


def _num(value, spec: str) -> str:
    return format(float(value), spec) if _is_num(value) else "&#8212;"


def _pct(value) -> str:
    return f"{float(value):+.2f}%" if _is_num(value) else "&#8212;"


def _is_num(value) -> bool:
    if isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
