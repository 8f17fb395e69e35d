"""A side-by-side diff of two scrubbed TTGIR texts as an HTML table, computed with difflib
at render time and capped in size (a page of a 1,115-op screen has to stay small)."""
from __future__ import annotations

import difflib
from html import escape

CONTEXT = 3                 # unchanged lines shown around each change
MAX_ROWS = 400              # rows of one kernel's diff; the rest is counted, not shown
MAX_LINE = 160              # characters of one line shown


def side_by_side(title: str, text_a: str, text_b: str, max_rows: int = MAX_ROWS) -> str:
    """`<table class="diff">` of the changed hunks (with CONTEXT lines around each), ''
    when the texts are equal."""
    a, b = text_a.splitlines(), text_b.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[str] = []
    left = 0
    for group in matcher.get_grouped_opcodes(CONTEXT):
        if rows:
            rows.append('<tr class="gap"><td colspan="4">…</td></tr>')
        for tag, i1, i2, j1, j2 in group:
            for k in range(max(i2 - i1, j2 - j1)):
                la = a[i1 + k] if i1 + k < i2 else None
                lb = b[j1 + k] if j1 + k < j2 else None
                if len(rows) < max_rows:
                    rows.append(_row(tag, i1 + k, la, j1 + k, lb))
                else:
                    left += 1
    if not rows:
        return ""
    more = f'<tr class="gap"><td colspan="4">{left} more line(s) not shown</td></tr>' \
        if left else ""
    return (f'<table class="diff"><caption>{escape(title)}</caption>'
            f'<tr><th></th><th>A</th><th></th><th>B</th></tr>{"".join(rows)}{more}</table>')


def _cell(line: str | None) -> str:
    if line is None:
        return ""
    return escape(line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…")


def _row(tag: str, i: int, la: str | None, j: int, lb: str | None) -> str:
    cls = {"equal": "eq", "replace": "ch", "delete": "del", "insert": "ins"}[tag]
    na = "" if la is None else str(i + 1)
    nb = "" if lb is None else str(j + 1)
    return (f'<tr class="{cls}"><td class="n">{na}</td><td>{_cell(la)}</td>'
            f'<td class="n">{nb}</td><td>{_cell(lb)}</td></tr>')
