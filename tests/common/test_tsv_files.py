"""The one tab-separated writer: a value never splits its row, whatever break it holds."""
from __future__ import annotations

from harness.common.files import read_tsv_rows, tsv_text


def test_every_line_break_the_readers_know_stays_inside_its_cell(tmp_path):
    breaks = "a\tb\nc\rd\x0be\x0cf\x1cg\x1dh\x1ei\x85j\u2028k\u2029l"
    path = tmp_path / "t.tsv"
    path.write_text(tsv_text(("op", "note", "n"), [{"op": "x", "note": breaks, "n": None},
                                                   {"op": "y"}], none="-"), encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3
    assert read_tsv_rows(path) == [{"op": "x", "note": "a b c d e f g h i j k l", "n": "-"},
                                   {"op": "y", "note": "-", "n": "-"}]
