"""What `--level-placements` probed in the runs under a folder: per case its latency, the
spread of its probe's placements and the level placements it was timed on, and each run's
wall and measuring time.

    python3 tests/device/level_probe.py ROOT
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from harness.store.reader import load_run  # noqa: E402


def table(root: Path) -> str:
    rows, walls = [], []
    for run_json in sorted(root.rglob("run.json")):
        run = load_run(run_json.parent)
        info = json.loads(run_json.read_text())
        walls.append(f"{run_json.parent.name}: wall {info.get('wall_s', '?')} s, measure "
                     f"{info.get('measure_s', '?')} s")
        for row in run.rows:
            if row.gems is None:
                continue
            rows.append([row.op, row.shape_detail[:40], f"{1000 * row.gems.median:.2f}",
                         row.extra.get("level_spread_pct", "-"),
                         row.extra.get("level_placements", "-")])
    return "\n".join([tabulate(rows, ["op", "shape", "us", "spread %", "placements"]), *walls])


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
