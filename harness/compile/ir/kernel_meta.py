"""Per measured kernel metadata, as `ttgir/index.tsv` records it at capture time, and the
short A->B note a screen verdict gives for it ("add_kernel: regs 128->96, warps 4->8").

The columns and where they come from (docs/concepts/ir.md): `shared`, `num_warps`,
`num_stages`, `num_ctas` from the compile listener's metadata; `n_regs`, `n_spills` from the
loaded binary (empty where no driver loaded it); `convert_layout` counted in the TTGIR.
An index written before a column existed reads as "unknown" for it, never as a change.
"""
from __future__ import annotations

from pathlib import Path

from .fingerprint import MEASURED, read_index

META_COLUMNS = ("n_regs", "n_spills", "shared", "num_warps", "num_stages", "num_ctas",
                "convert_layout")
_SHORT = {"n_regs": "regs", "n_spills": "spills", "shared": "smem", "num_warps": "warps",
          "num_stages": "stages", "num_ctas": "ctas", "convert_layout": "cvt"}
# The verdict's note already gives convert_layout totals A->B.
_NOTE_COLUMNS = tuple(c for c in META_COLUMNS if c != "convert_layout")


def known(cell: str | None) -> bool:
    """Whether an index cell holds a count zlh wrote (ASCII digits), not '', '-' or absent."""
    return bool(cell) and cell.isascii() and cell.isdigit()


def measured_kernels(path: str | Path) -> dict[str, dict[str, str]]:
    """kernel name -> its metadata cells, for each kernel the function under test launched
    in exactly one variant; a kernel with several measured variants is left out (which of
    A's pairs with which of B's is not clear)."""
    by_kernel: dict[str, dict[str, dict[str, str]]] = {}
    for row in read_index(path):
        if row.get("role") == MEASURED and row.get("kernel"):
            by_kernel.setdefault(row["kernel"], {})[row.get("hash", "")] = row
    out = {}
    for kernel, variants in by_kernel.items():
        if len(variants) == 1:
            [row] = variants.values()
            out[kernel] = {c: row.get(c, "") for c in META_COLUMNS}
    return out


def changes(path_a: str | Path, path_b: str | Path) -> list[str]:
    """'kernel: regs 128->96, warps 4->8' per kernel measured on both sides (one variant
    each) whose known metadata differs, in kernel-name order."""
    a, b = measured_kernels(path_a), measured_kernels(path_b)
    found = []
    for kernel in sorted(a.keys() & b.keys()):
        diffs = [f"{_SHORT[c]} {a[kernel][c]}->{b[kernel][c]}" for c in _NOTE_COLUMNS
                 if known(a[kernel][c]) and known(b[kernel][c]) and a[kernel][c] != b[kernel][c]]
        if diffs:
            found.append(f"{kernel}: {', '.join(diffs)}")
    return found


def changes_note(path_a: str | Path, path_b: str | Path, limit: int = 2) -> str:
    """`changes` as a note suffix ('; k: regs 128->96'), at most `limit` kernels named."""
    found = changes(path_a, path_b)
    if not found:
        return ""
    more = len(found) - limit
    return "".join(f"; {each}" for each in found[:limit]) + (
        f"; {more} more kernel(s) changed" if more > 0 else "")
