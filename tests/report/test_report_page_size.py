"""The page's size budget: the TTGIR diffs kept are the largest changes, and a page over the
limit gives up diffs first. (That the page of a 1,115-op screen stays within 2 MB:
test_report_browser.py, on the page its browser test loads.)"""
from __future__ import annotations

import report_roots as R
from harness.report import page
from harness.report.build import build


def test_the_diff_budget_keeps_the_largest_changes(tmp_path):
    report = build(R.screen_root(tmp_path / "s", 40))
    with_diff = [e for e in report.ops if e.diff_html]
    size = len(with_diff[0].diff_html)
    kept = page.diff_kept(report.ops, budget=3 * size + 10)
    assert len(kept) == 3
    largest = sorted(with_diff, key=lambda e: -abs(e.delta))[:3]
    assert {report.ops[i].op for i in kept} == {e.op for e in largest}
    left = page.op_data(0, with_diff[0], with_diff=False)["D"]
    assert left["diff"] == "" and left["diff_left_out"]


def test_a_page_over_the_limit_gives_up_diffs_first(tmp_path, monkeypatch):
    report = build(R.screen_root(tmp_path / "s", 40))
    full = page.render(report)
    monkeypatch.setattr(page, "PAGE_LIMIT", len(full.encode("utf-8")) - 1)
    smaller = page.render(report)
    assert len(smaller) < len(full) and "diff_left_out\":true" in smaller
