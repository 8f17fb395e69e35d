"""What `run_bench` returns for one op: its rows, run directory, caliber and status."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..common.errors import EXIT_FAILED_CASES, EXIT_OK
from ..store.caliber import Caliber
from ..store.results import FAILED, SUCCESS, Row


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
