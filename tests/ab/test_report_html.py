import math
from html.parser import HTMLParser

import pytest

from harness.ab.html import render_html

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}
_MAIN_TAGS = {"html", "head", "body", "section", "table", "thead", "tbody", "tr", "svg", "pre",
              "ul", "h1", "h2", "h3", "p", "g"}


class _TagChecker(HTMLParser):
    """Tracks open tags; records every close that does not match the innermost open tag."""

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.seen = [], [], {}
        self.marks = 0
        self.script_tags = 0

    def handle_starttag(self, tag, attrs):
        self._count(tag, attrs)
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self._count(tag, attrs)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def _count(self, tag, attrs):
        self.seen[tag] = self.seen.get(tag, 0) + 1
        if tag == "script":
            self.script_tags += 1
        if ("class", "mark") in attrs:
            self.marks += 1


def _check(page: str) -> _TagChecker:
    checker = _TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.errors == []
    assert checker.stack == []
    for tag in ("html", "head", "body"):
        assert checker.seen.get(tag) == 1
    return checker


def _row(shape, delta, significant=True, ci=(None, None), dtype="float16", rounds=None,
         direction=None):
    if direction is None:      # as the report decides it: from the interval, if significant
        low, high = ci
        direction = 0 if not significant or low is None else (
            1 if low > 0 else -1 if high < 0 else 0)
    return {"dtype": dtype, "shape_detail": shape, "occurrence": 0, "a_ms": 1.0 + delta / 100,
            "b_ms": 1.0, "delta_pct": delta, "ci_low_pct": ci[0], "ci_high_pct": ci[1],
            "p_value": 0.001 if significant else 0.4, "significant": significant,
            "direction": direction, "annotations": [], "rounds": rounds}


def _op(name="softmax", rows=None, **extra):
    rows = [] if rows is None else rows
    op = {
        "op": name, "verdict": "IR_CHANGED",
        "caliber": {"backend": "cuda", "timer": "graph", "autotune_mode": "replay"},
        "caliber_problems": [],
        "sides": {"A": {"run_dir": "runs/softmax_A", "label": "base"},
                  "B": {"run_dir": "runs/softmax_B", "label": "rlc"}},
        "rows": rows,
        "unpaired": [],
        "summary": {"n": len(rows), "geomean_speedup": 1.02, "delta_min_pct": -3.0,
                    "delta_max_pct": 6.0, "faster": 1, "slower": 1, "unchanged": 1},
        "markers": [],
    }
    op.update(extra)
    return op


def _report(*ops):
    return {"title": "softmax A/B", "generated_at": "2025-01-01 12:00:00", "ops": list(ops)}


def _rows():
    return [
        _row("(1024, 1024)", 6.0, ci=(4.0, 8.0)),
        _row("(4096, 512)", -3.0, ci=(-5.0, -1.0)),
        _row("(64, 64)", 0.5, significant=False, ci=(-2.0, 3.0),
             rounds={"min_delta_pct": -1.0, "max_delta_pct": 2.0, "sign_stable": False}),
    ]


def test_page_parses_balanced_and_self_contained():
    page = render_html(_report(_op(rows=_rows(), markers=["AUTOTUNE_REPLAY_FALLBACK a=1"])))
    checker = _check(page)
    assert "http://" not in page and "https://" not in page
    assert "<script src" not in page.lower()
    assert checker.script_tags == 0
    assert "<style>" in page
    assert "IR_CHANGED" in page and "AUTOTUNE_REPLAY_FALLBACK a=1" in page


def test_svg_has_one_mark_per_row_sorted_and_coloured():
    page = render_html(_report(_op(rows=_rows())))
    checker = _check(page)
    assert checker.seen.get("svg") == 1
    assert checker.marks == 3
    svg = page[page.index("<svg"):page.index("</svg>")]
    # ascending delta: -3 first, then 0.5, then 6
    assert svg.index("(4096, 512)") < svg.index("(64, 64)") < svg.index("(1024, 1024)")
    assert "#2e7d32" in svg and "#c62828" in svg and "#9e9e9e" in svg   # faster/slower/grey
    assert svg.count("<line") == 1 + 3                                   # zero line + 3 CIs


def test_malicious_labels_are_escaped():
    evil = "<script>alert(1)</script>"
    op = _op(name=evil, rows=[_row(evil, 2.0, dtype=evil)],
             unpaired=[{"side": "B", "dtype": "float32", "shape_detail": evil,
                        "status": "FAILED", "reason": evil}],
             caliber={"timer": evil}, caliber_problems=[evil], markers=[evil])
    op["sides"]["A"]["label"] = evil
    page = render_html(_report(op) | {"title": evil})
    checker = _check(page)
    assert "<script>" not in page
    assert checker.script_tags == 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_op_without_rows_and_missing_numbers():
    empty = _op(name="topk", verdict=None, summary={}, caliber={}, rows=[],
                unpaired=[{"side": "A", "dtype": "float16", "shape_detail": "(8,)",
                           "status": "SKIPPED", "reason": "unsupported"}])
    nan_row = _row("(2, 2)", math.nan, significant=False)
    nan_row.update(a_ms=None, p_value=math.nan)
    page = render_html(_report(empty, _op(rows=[nan_row, _row("(3, 3)", 1.0)])))
    checker = _check(page)
    assert "no paired rows" in page
    assert "no verdict" in page
    assert "unsupported" in page
    assert checker.marks == 1                       # the NaN row is not drawn
    assert "not plotted" in page
    assert ">nan" not in page.lower() and "nan%" not in page.lower()


def test_caliber_problems_highlighted():
    op = _op(rows=_rows(), caliber_problems=["timer differs: A=graph B=event"])
    page = render_html(_report(op))
    _check(page)
    assert 'class="problems"' in page
    assert '<tr class="problem"><th>timer</th>' in page
    assert '<tr><th>backend</th>' in page


@pytest.mark.parametrize("ops", [[], None])
def test_report_without_ops(ops):
    page = render_html({"title": "t", "generated_at": "now", "ops": ops})
    _check(page)
    assert "no ops" in page


def test_colour_follows_the_direction_not_the_sign_of_the_delta():
    """With rounds, the reported delta is a median while the interval is on the mean: a
    positive median with an interval below zero is a slower shape and must be drawn red."""
    row = _row("(8, 8)", 0.4, ci=(-2.0, -0.5))
    assert row["direction"] == -1
    page = render_html(_report(_op(rows=[row])))
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "#c62828" in svg and "#2e7d32" not in svg
    assert '<tr class="slower">' in page
