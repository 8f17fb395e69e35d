"""What the ray executor adds per op, against the same ops through local lanes.

    python tests/device/ray_summary.py RAY_ROOT LOCAL_ROOT [WALL_RAY_S WALL_LOCAL_S]

RAY_ROOT and LOCAL_ROOT are batch roots (a screen's A/ or B/ too) of the same ops. Prints the
time Ray's calls add per op beyond the actor's own (`ray_s` of .workers/*.ray.tsv: the remote
call, its arguments and answer), the per-op elapsed time through Ray minus through local
lanes (ops_status.csv, ops that ran in both: median, mean), and, given the two commands'
wall times, the wall per op beyond local (which also holds the actor's start, once per lane).
"""
from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path


def table(path: Path, delimiter: str = ",") -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


def ray_calls(root: Path) -> list[float]:
    return [float(r["ray_s"]) for path in sorted((root / ".workers").glob("*.ray.tsv"))
            for r in table(path, "\t")]


def summary(ray_root: Path, local_root: Path, walls: tuple[float, float] | None = None
            ) -> list[str]:
    lines = []
    calls = ray_calls(ray_root)
    if calls:
        lines.append(f"ray call time beyond the actor's own: median {statistics.median(calls):.4f} s"
                     f", max {max(calls):.4f} s over {len(calls)} op attempts")
    else:
        lines.append(f"no .workers/*.ray.tsv under {ray_root}: not a ray executor's root?")
    mine = {r["op"]: r for r in table(ray_root / "ops_status.csv")}
    theirs = {r["op"]: r for r in table(local_root / "ops_status.csv")}
    both = [op for op in mine if op in theirs]
    diffs = [float(mine[op]["elapsed_s"]) - float(theirs[op]["elapsed_s"]) for op in both]
    if diffs:
        lines.append(f"elapsed per op, ray - local: median {statistics.median(diffs):+.2f} s, "
                     f"mean {statistics.fmean(diffs):+.2f} s over {len(diffs)} ops")
    if walls and both:
        extra = (walls[0] - walls[1]) / len(both)
        lines.append(f"wall per op, ray - local: {extra:+.2f} s (walls {walls[0]:.0f} s vs "
                     f"{walls[1]:.0f} s, {len(both)} ops; the actor's start included)")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print(__doc__, file=sys.stderr)
        return 2
    walls = (float(argv[2]), float(argv[3])) if len(argv) == 4 else None
    for line in summary(Path(argv[0]), Path(argv[1]), walls):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
