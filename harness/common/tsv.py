"""Tab-separated tables as zlh writes them: a cell never splits its row, a table's text with
its header, and a row appended to a table a killed process may have left half-written."""
from __future__ import annotations

import os
import re
from pathlib import Path

_CELL_BREAKS = re.compile("[\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def tsv_cell(value, none: str = "") -> str:
    """One cell of a tab-separated table: `none` for None, tabs and line breaks (every one
    the readers' splitlines() knows) made spaces: a value never splits its row."""
    return _CELL_BREAKS.sub(" ", none if value is None else str(value))


def tsv_line(values, none: str = "") -> str:
    return "\t".join(tsv_cell(v, none) for v in values) + "\n"


def tsv_text(columns, rows, none: str = "") -> str:
    """A tab-separated table with a header: one line per row (a mapping), the given columns
    in order; a missing or None value is `none`, keys outside the columns are left out."""
    return tsv_line(columns) + "".join(tsv_line((r.get(c) for c in columns), none)
                                       for r in rows)


def append_tsv_row(path: str | os.PathLike, columns, values, none: str = "") -> None:
    """One row (`values`, in the order of `columns`) appended to the table at `path`: the
    header first where the file is missing or empty — a process killed between creating the
    file and writing its first line leaves it empty, and a row in its place would be read as
    the header —, and a line break first where the last line was cut short by a kill, so
    that the new row stays whole (readers leave the cut one out)."""
    path = Path(path)
    with open(path, "a+b") as handle:
        end = handle.seek(0, os.SEEK_END)
        lead = tsv_line(columns) if end == 0 else ""
        if end:
            handle.seek(end - 1)
            lead = "" if handle.read(1) == b"\n" else "\n"
        handle.write((lead + tsv_line(values, none)).encode("utf-8"))
