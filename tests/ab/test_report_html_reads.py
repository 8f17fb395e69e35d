"""The A/B page reads right: `sig` says no, the axis never shows a delta below -100 %, one
enormous interval does not flatten every point onto zero (it is cut at the axis, with an
arrow, and said so), a campaign's page is titled as one, and each side's compiler is named
(in the page, the terminal report and report.json)."""
from __future__ import annotations

import re

from harness.ab.html import _axis_range, render_html
from harness.ab.render import render_terminal
from harness.ab.report import ABReport, report_document

TRITON = {"package": "triton", "distribution": "triton", "version": "3.9.0", "path": "/x"}
FLAGTREE = {"package": "triton", "distribution": "flagtree", "version": "0.3.0", "path": "/y"}


def _row(shape, delta, lo, hi, significant=False):
    return {"variant": "", "dtype": "float32", "shape_detail": shape, "occurrence": 0, "a_ms": 1.0,
            "b_ms": 1.0, "delta_pct": delta, "ci_low_pct": lo, "ci_high_pct": hi,
            "p_value": 0.01 if significant else 0.4, "significant": significant,
            "direction": 0, "annotations": [], "rounds": None}


def _op(rows, backend="cuda"):
    return {"op": "add", "verdict": "IR_CHANGED", "caliber": {"backend": backend},
            "caliber_problems": [], "rows": rows, "unpaired": [], "markers": [],
            "sides": {"A": {"run_dir": "a", "label": "A", "compiler": TRITON},
                      "B": {"run_dir": "b", "label": "B", "compiler": FLAGTREE}},
            "summary": {"n": len(rows), "faster": 0, "slower": 0, "unchanged": len(rows)}}


def _x_positions(svg: str) -> list[float]:
    return [float(x) for x in re.findall(r'<circle class="mark" cx="([\d.]+)"', svg)]


def test_sig_says_no_for_a_shape_that_is_not_significant():
    page = render_html({"title": "t", "ops": [_op([_row("1000", 1.0, -2.0, 4.0)])]})
    table = page[page.index("<tbody>"):page.index("</tbody>")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table)
    assert "no" in cells


def test_the_axis_stops_at_minus_100_percent():
    low, high = _axis_range([_row("1000", -99.0, -130.0, -90.0)])
    assert low >= -100.0 and high >= 0.0
    page = render_html({"title": "t", "ops": [_op([_row("1000", -99.0, -130.0, -90.0)])]})
    assert "-102" not in page[page.index("<svg"):page.index("</svg>")]


def test_a_huge_interval_is_cut_at_the_axis_and_the_points_stay_apart():
    rows = [_row("1000", -30.0, -40.0, -20.0), _row("4096", 10.0, 5.0, 15.0),
            _row("8192", 20.0, -90.0, 4_813_649.0)]
    low, high = _axis_range(rows)
    assert high < 1000                                  # the deltas' range, not the interval's
    page = render_html({"title": "t", "ops": [_op(rows)]})
    svg = page[page.index("<svg"):page.index("</svg>")]
    xs = sorted(_x_positions(svg))
    # 10 % apart is 25 px or more (on the interval's axis they would be 0.001 px apart)
    assert len(xs) == 3 and min(b - a for a, b in zip(xs, xs[1:])) > 25
    assert 'class="clipped"' in svg                      # an arrow at the cut end
    assert "1 interval(s) reach beyond the axis" in page
    assert "+4813649.00%" in page                      # the bound itself, in the table


def test_a_campaign_page_is_titled_as_a_campaign(tmp_path):
    assert report_document(tmp_path / "campaign_1", [], "campaign")["title"] == \
        "zlh campaign campaign_1"
    assert report_document(tmp_path / "ab_1", [])["title"] == "zlh ab ab_1"


def test_each_sides_compiler_is_named_in_the_page_the_terminal_and_report_json():
    op = _op([_row("1000", 1.0, -2.0, 4.0)], backend="cpu")
    page = render_html({"title": "t", "ops": [op]})
    assert "triton 3.9.0" in page and "flagtree 0.3.0" in page
    assert "interpreted (cpu backend)" in page
    report = ABReport.from_dict(op, "test")
    assert "compiler: A triton 3.9.0, B flagtree 0.3.0" in render_terminal(report)
    assert report.to_dict()["sides"]["B"]["compiler"]["distribution"] == "flagtree"
