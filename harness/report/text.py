"""The terminal view of a report: the headline, the counts and the largest changes."""
from __future__ import annotations

from tabulate import tabulate

from ..common import style
from .model import Report

TOP = 20


def _pct(v) -> str:
    return "-" if v is None else f"{v:+.2f}"


def headline_lines(report: Report) -> list[str]:
    h = report.headline
    took = "-" if h.duration_s is None else f"{h.duration_s / 60:.1f} min"
    lines = [f"== {h.title} ({h.kind}, {len(report.ops)} ops)"]
    lines += [f"side {s.label}: {s.compiler} — {s.switch}" for s in h.sides]
    lines += [f"where: device {h.device}; cards {h.cards}", f"caliber: {h.caliber}",
              f"when: {h.started} ({took})",
              "counts: " + ", ".join(f"{k} {v}" for k, v in h.counts.items())]
    return lines + [f"note: {n}" for n in h.notes]


def top_changes(report: Report, top: int = TOP) -> list[str]:
    moved = [e for e in report.ops if e.delta is not None and not e.noise]
    if not moved:
        return ["no op moved outside the noise floors"
                if any(e.noise for e in report.ops) else "no op has a delta"]
    moved.sort(key=lambda e: -abs(e.delta))
    rows = [[e.op, e.status, e.family, _pct(e.delta), f"{_pct(e.low)} ~ {_pct(e.high)}",
             e.kernels, e.convert_layout, (e.notes or e.reason)[:70]] for e in moved[:top]]
    title = f"largest changes ({min(top, len(moved))} of {len(moved)}; " \
            f"{report.headline.delta_label})"
    return [title, tabulate(rows, headers=["op", "status", "family", "delta %", "range %",
                                           "kernels", "cvt", "notes"],
                            tablefmt=style.tablefmt(), disable_numparse=True)]


def render(report: Report, top: int = TOP) -> str:
    return "\n".join(headline_lines(report) + top_changes(report, top))
