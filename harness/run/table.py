"""Terminal presentation of result rows (tabulate). Data and statistics live elsewhere.

Columns whose value is the same on every row fold into one legend line above the table.
Colour only when the stream is a terminal. The sides are named by role: `test` is the
function under test (the adapter's kernel: FlagGems' operator, a builtin Triton kernel, your
own), `base` its baseline (torch); results.jsonl keeps its field names (`gems_ms`,
`torch_ms`). `speedup` = base / test. `±%` is the relative standard error of each side's
median; `flags` gives base/test's flags in letters (o outliers, b bimodal, u undersampled; see
measure.stats), spelled out under the table.
"""
from __future__ import annotations

import contextlib

import click

from tabulate import tabulate

from ..common.fields import is_number
from ..store.results import SUCCESS

FOLDABLE = ("op", "variant", "dtype", "shape", "status", "timer")
TEST, BASE = "test", "base"           # the sides' names in every table (by role)
FLAG_LETTERS = {"outliers": "o", "bimodal": "b", "undersampled": "u"}
INTERPRETED = ("interpreted (cpu backend): host-clock times of Triton's interpreter; they show "
               "the harness works, not a GPU's speed")


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


def _fmt_small(value, spec: str) -> str:
    """`spec` (`.Nf`) for ordinary values; two significant digits for a value `spec` would
    print with fewer (an interpreted kernel's speedup 0.00079, not 0.001 or 0.000)."""
    text = _fmt(value, spec)
    if is_number(value) and 0 < abs(value) < 10 ** (1 - int(spec.strip(".f"))):
        return format(value, ".2g")
    return text


def _colour_speedup(text: str, value, colour: bool) -> str:
    if not colour or value is None:
        return text
    if value >= 1.02:
        return click.style(text, fg="green")
    if value <= 0.98:
        return click.style(text, fg="red")
    return text


def _flag_letters(row) -> str:
    """`o/ob`: base's flags / test's flags in letters; "-" when neither side has one."""
    sides = []
    for m in (row.torch, row.gems):
        flags = m.flags if m is not None else ()
        sides.append("".join(FLAG_LETTERS.get(f, "?") for f in flags) or "-")
    return "-" if sides == ["-", "-"] else "/".join(sides)


def flags_legend(rows) -> str:
    """The line under a table that has flags: what the letters say."""
    seen = {f for r in rows for m in (r.torch, r.gems) if m is not None for f in m.flags}
    if not seen:
        return ""
    return ("flags base/test: " + ", ".join(f"{letter} {name}" for name, letter in
                                          FLAG_LETTERS.items() if name in seen)
            + " (docs/concepts/measurement.md)")


def render_rows(rows, colour: bool = False, tablefmt: str = "simple",
                interpreted: bool = False) -> tuple[str, str]:
    """(legend lines, table). The legend holds the columns identical across all rows (and,
    with `interpreted`, the line saying these are interpreter times); the flags' letters are
    spelled out under the table. `tablefmt`: tabulate's format (`github` for markdown)."""
    if not rows:
        return (INTERPRETED if interpreted else ""), "(no cases)"
    records = []
    for row in rows:
        records.append({
            "op": row.op,
            "variant": row.variant or "-",
            "dtype": row.dtype,
            "shape": row.shape_detail + (f" #{row.occurrence}" if row.occurrence else ""),
            "status": row.status if row.status == SUCCESS or not row.reason
            else f"{row.status}: {row.reason}",
            f"{BASE} ms": _fmt_ms(row.torch_ms),
            f"{TEST} ms": _fmt_ms(row.gems_ms),
            "speedup": _colour_speedup(_fmt_small(row.speedup, ".3f"), row.speedup, colour),
            f"{TEST} GB/s": _fmt_small(row.gbps("gems"), ".1f"),
            "TFLOP/s": _fmt_small(row.tflops, ".1f"),
            "timer": row.timer,
            f"{BASE} ±%": _fmt(100 * row.torch.rel_error if row.torch else None, ".2f"),
            f"{TEST} ±%": _fmt(100 * row.gems.rel_error if row.gems else None, ".2f"),
            "flags": _flag_letters(row),
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
    under = flags_legend(rows)
    head = "  ".join(legend)
    if interpreted:
        head = f"{INTERPRETED}\n{head}" if head else INTERPRETED
    return head, table + (f"\n{under}" if under else "")


def summary_line(counts: dict, graph_fallbacks: int, wall_s: float,
                 inputs_s: float = 0.0) -> str:
    """The line under a run's table: case counts by status, graph fallbacks, wall time (and
    the part of it the adapter spent building inputs, once that is a second or more)."""
    return (f"{counts[SUCCESS]} ok, {counts['FAILED']} failed, {counts['SKIPPED']} skipped; "
            f"{graph_fallbacks} graph fallbacks; wall {wall_s:.1f} s"
            + (f", of which building inputs {inputs_s:.1f} s" if inputs_s >= 1.0 else ""))


def case_line(op: str, row, done: int, total: int | None, took_s: float,
              elapsed_s: float) -> str:
    """`[2/4] add float32 4096 SUCCESS 1.3s, eta 0:00:03`: the count of the cases measured
    (of how many, when known), the case's own time and the time the others should take at
    this pace (`[2]` and no eta when the total is unknown)."""
    known = total is not None and total >= done
    count = f"{done}/{total}" if known else f"{done}"
    eta = ""
    if known and total > done and done:
        left = int(elapsed_s / done * (total - done))
        eta = f", eta {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"
    return (f"[{count}] {op} {row.dtype} {row.shape_detail} {row.status} "
            f"{took_s:.1f}s{eta}{' ' + row.reason if row.reason else ''}")


def write_table(rows, tail, outputs, interpreted: bool, quiet_errors: bool) -> None:
    """The table of `rows` and its `tail` lines through each (write, colour, tablefmt) of
    `outputs` (the console, run.log; a None write is skipped). With `quiet_errors` nothing
    here raises: the run is ending on an error already on its way out."""
    guard = contextlib.suppress(Exception) if quiet_errors else contextlib.nullcontext()
    for write, colour, fmt in outputs:
        if write is None:
            continue
        with guard:
            for text in (*render_rows(rows, colour=colour, tablefmt=fmt,
                                      interpreted=interpreted), *tail):
                if text:
                    write(text)
