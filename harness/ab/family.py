"""Which shapes of an A/B are significant: Holm over every shape of the A/B.

Each op's report is computed on its own (compare.py: Holm across that op's shapes). An A/B
of several ops asks whether the change moved any shape of any of them, so its verdicts are
decided over all its shapes as one family: Holm's step-down over every row's p-value, at
the A/B's alpha. The chance that an A/A calls any shape significant then stays at most alpha
however many ops it covers (with a family per op it grows with the ops: about 1 − 0.95^k
for k ops). Holm over a larger family only ever withdraws a verdict the op's own family
gave, never adds one, so an op's table printed as the A/B runs can only have called too
much: `Family.withdrawn` names what the ops after it took back.
"""
from __future__ import annotations

from ..measure.stats import holm
from .report import ABReport, ABRow, direction_of

ALPHA = 0.05          # an A/B's significance level where no plan gives one (--rescore, a merge)


def decide(reports: list[ABReport], alpha: float = ALPHA) -> list[tuple[str, ABRow]]:
    """Every row of `reports` re-decided with Holm over all of them (a significant row also
    needs an interval with a direction); each report's counts follow, and its summary says
    how many shapes the family held (`family_shapes`). Returns the (op, row) whose verdict
    this withdrew."""
    rows = [(report.op, row) for report in reports for row in report.rows]
    flags = holm([row.p_value for _, row in rows], alpha)
    withdrawn = []
    for (op, row), flag in zip(rows, flags):
        if row.significant and not flag:
            withdrawn.append((op, row))
            row.significant, row.within_noise = False, False
            row.annotations = [a for a in row.annotations if not a.startswith("within noise")]
        row.direction = direction_of(row)
        row.significant = row.significant and row.direction != 0
    for report in reports:
        _recount(report, len(rows))
    return withdrawn


def _recount(report: ABReport, family: int) -> None:
    summary = report.summary
    faster = sum(1 for r in report.rows if r.significant and r.direction > 0)
    slower = sum(1 for r in report.rows if r.significant and r.direction < 0)
    summary.update(faster=faster, slower=slower, unchanged=len(report.rows) - faster - slower,
                   family_shapes=family)
    if "within_noise" in summary:
        summary["within_noise"] = sum(1 for r in report.rows if r.within_noise)


class Family:
    """The reports of an A/B as its ops finish, decided together after each (`add`)."""

    def __init__(self, alpha: float = ALPHA):
        self.alpha = alpha
        self.reports: list[ABReport] = []
        self._shown: set[int] = set()      # rows shown significant (id of the row)

    def add(self, report: ABReport) -> None:
        self.reports.append(report)
        decide(self.reports, self.alpha)
        self._shown |= {id(r) for r in report.rows if r.significant}

    def withdrawn(self) -> list[str]:
        """One line per shape shown significant in its op's table that the whole A/B's
        family no longer calls so."""
        return [f"{report.op} {row.dtype} {row.shape_detail}: shown significant "
                f"({row.delta_pct:+.3f} %, p {row.p_value:.2g}); not significant over the "
                f"A/B's {report.summary.get('family_shapes')} shapes (Holm)"
                for report in self.reports for row in report.rows
                if id(row) in self._shown and not row.significant]
