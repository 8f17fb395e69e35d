"""Terminal presentation of result rows (tabulate). Data and statistics live elsewhere.

Columns whose value is the same on every row fold into one legend line above the table.
Colour only when the stream is a terminal. `±%` is the relative standard error of each side's
median; `flags` names measurements that deserve a second look (`gems:undersampled`,
`torch:outliers`, ...; see measure.stats).
"""
from __future__ import annotations

import click

from tabulate import tabulate

from ..common.fields import is_number
from ..store.results import SUCCESS

FOLDABLE = ("op", "variant", "dtype", "shape", "status", "timer")


def _fmt_ms(value) -> str:
    return _fmt(value, ".5f")


def _fmt(value, spec: str) -> str:
    """A number as `spec` says; "-" for none, and "?" for a stored value that is not a
    number (a damaged results file is still shown)."""
    if value is None:
        return "-"
    if not is_number(value):
        return "?"
    return format(value, spec)


def _colour_speedup(text: str, value, colour: bool) -> str:
    if not colour or value is None:
        return text
    if value >= 1.02:
        return click.style(text, fg="green")
    if value <= 0.98:
        return click.style(text, fg="red")
    return text


def render_rows(rows, colour: bool = False, tablefmt: str = "simple") -> tuple[str, str]:
    """(legend line, table). The legend holds the columns identical across all rows.
    `tablefmt`: tabulate's format (`github` for markdown)."""
    if not rows:
        return "", "(no cases)"
    records = []
    for row in rows:
        records.append({
            "op": row.op,
            "variant": row.variant or "-",
            "dtype": row.dtype,
            "shape": row.shape_detail + (f" #{row.occurrence}" if row.occurrence else ""),
            "status": row.status if row.status == SUCCESS or not row.reason
            else f"{row.status}: {row.reason}",
            "torch ms": _fmt_ms(row.torch_ms),
            "gems ms": _fmt_ms(row.gems_ms),
            "speedup": _colour_speedup(_fmt(row.speedup, ".3f"), row.speedup, colour),
            "gems GB/s": _fmt(row.gbps("gems"), ".1f"),
            "TFLOP/s": _fmt(row.tflops, ".1f"),
            "timer": row.timer,
            "torch ±%": _fmt(100 * row.torch.rel_error if row.torch else None, ".2f"),
            "gems ±%": _fmt(100 * row.gems.rel_error if row.gems else None, ".2f"),
            "flags": " ".join(row.flags) or "-",
        })
    columns = [c for c in records[0] if any(r[c] != "-" for r in records)]
    legend = []
    if len(records) > 1:
        for col in FOLDABLE:
            values = {r[col] for r in records}
            if col in columns and len(values) == 1:
                legend.append(f"{col}={values.pop()}")
                columns.remove(col)
    table = tabulate([[r[c] for c in columns] for r in records], headers=columns,
                     tablefmt=tablefmt, disable_numparse=True, stralign="right")
    return "  ".join(legend), table


def summary_line(counts: dict, graph_fallbacks: int, wall_s: float,
                 inputs_s: float = 0.0) -> str:
    """The line under a run's table: case counts by status, graph fallbacks, wall time (and
    the part of it the adapter spent building inputs, once that is a second or more)."""
    return (f"{counts[SUCCESS]} ok, {counts['FAILED']} failed, {counts['SKIPPED']} skipped; "
            f"{graph_fallbacks} graph fallbacks; wall {wall_s:.1f} s"
            + (f", of which building inputs {inputs_s:.1f} s" if inputs_s >= 1.0 else ""))
