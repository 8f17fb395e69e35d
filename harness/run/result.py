"""What `run_bench` returns for one op (its rows, run directory, caliber and status), and what
its rows add up to: the timer actually used, graph fallbacks, counts per status."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..common import markers
from ..common.errors import EXIT_FAILED_CASES, EXIT_OK
from ..store.caliber import UNTIMED, Caliber
from ..store.results import FAILED, SKIPPED, SUCCESS, Row


@dataclass
class RunResult:
    op: str
    run_dir: Path
    rows: list[Row]
    caliber: Caliber
    status: str
    compiler: dict | None = None     # which distribution provided `triton` (run.json's)

    def __repr__(self) -> str:
        """Short: the run and how many rows, never the rows' raw samples."""
        return (f"RunResult(op={self.op!r}, run_dir={str(self.run_dir)!r}, "
                f"status={self.status!r}, rows={len(self.rows)}, "
                f"ok={len(self.ok())})")

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED_CASES if any(r.status == FAILED for r in self.rows) else EXIT_OK

    def ok(self) -> list[Row]:
        return [r for r in self.rows if r.status == SUCCESS]

    def to_dict(self, samples: bool = False) -> dict:
        """For JSON output: the run's identity, caliber and rows (raw samples only with
        `samples`; results.jsonl always has them)."""
        rows = [row.to_dict() for row in self.rows]
        for row in rows if not samples else ():
            for side in ("torch", "gems"):
                if row.get(side):
                    row[side].pop("samples_ms", None)
        return {"op": self.op, "run_dir": str(self.run_dir), "status": self.status,
                "exit_code": self.exit_code, "compiler": self.compiler,
                "caliber": self.caliber.to_dict(), "rows": rows}


def effective_timer(requested: str, rows: Sequence[Row], timing: bool = True) -> str:
    """A graph run whose every measured case fell back is an event-timed run; a run that
    timed nothing (--no-timing) has no timer."""
    if not timing:
        return UNTIMED
    measured = [r for r in rows if r.gems is not None]
    if requested == "graph" and measured and all(
            r.gems.timer != "graph" and (r.torch is None or r.torch.timer != "graph")
            for r in measured):
        return "event"
    return requested


def graph_fallbacks(rows: Sequence[Row]) -> int:
    return sum(1 for r in rows for m in r.markers if markers.marker_name(m) == markers.NO_GRAPH)


def status_counts(rows: Sequence[Row]) -> dict:
    return {s: sum(1 for r in rows if r.status == s) for s in (SUCCESS, FAILED, SKIPPED)}
