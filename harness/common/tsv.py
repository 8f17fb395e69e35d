"""Tab-separated tables as zlh writes and reads them: a cell never splits its row, a table's
text with its header, a row appended to a table a killed process may have left half-written,
and the rows of a table read back, a damaged row left out."""
from __future__ import annotations

import os
import re
from pathlib import Path

from .files import read_text

# A tab and every character str.splitlines() breaks a line at: made spaces in a cell.
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


def read_tsv_rows(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a tab-separated table with a header line, as dicts keyed by the header's
    names; [] when the file is missing, unreadable or not text, and a row of another width
    than the header is left out (a damaged table: readers go on without it)."""
    try:
        lines = read_text(path).splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    if not lines:
        return []
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]
            if len(line.split("\t")) == len(header)]
