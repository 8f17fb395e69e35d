"""The one tab-separated writer: a value never splits its row, whatever break it holds; a row
appended to a table a killed process left half-written stays whole and under its header."""
from __future__ import annotations

from harness.common.tsv import read_tsv_rows
from harness.common.tsv import append_tsv_row, tsv_text


def test_every_line_break_the_readers_know_stays_inside_its_cell(tmp_path):
    breaks = "a\tb\nc\rd\x0be\x0cf\x1cg\x1dh\x1ei\x85j\u2028k\u2029l"
    path = tmp_path / "t.tsv"
    path.write_text(tsv_text(("op", "note", "n"), [{"op": "x", "note": breaks, "n": None},
                                                   {"op": "y"}], none="-"), encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3
    assert read_tsv_rows(path) == [{"op": "x", "note": "a b c d e f g h i j k l", "n": "-"},
                                   {"op": "y", "note": "-", "n": "-"}]


def test_an_appended_row_gets_the_header_where_the_file_is_new_or_was_left_empty(tmp_path):
    """A process killed between creating the table and writing its first line leaves an
    empty file: the next row must not become the header (a reader would lose it)."""
    new, empty = tmp_path / "new.tsv", tmp_path / "empty.tsv"
    empty.write_text("")
    for path in (new, empty):
        append_tsv_row(path, ("op", "rc"), ("add", 0))
        append_tsv_row(path, ("op", "rc"), ("mm", None), none="-")
        assert read_tsv_rows(path) == [{"op": "add", "rc": "0"}, {"op": "mm", "rc": "-"}]


def test_a_row_appended_after_a_cut_line_starts_a_line_of_its_own(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("op\trc\nadd\t0\nsoft", encoding="utf-8")     # a write cut by a kill
    append_tsv_row(path, ("op", "rc"), ("mm\tx", 1))                   # (a tab made a space)
    assert path.read_text(encoding="utf-8").splitlines()[-2:] == ["soft", "mm x\t1"]
    assert read_tsv_rows(path) == [{"op": "add", "rc": "0"}, {"op": "mm x", "rc": "1"}]
