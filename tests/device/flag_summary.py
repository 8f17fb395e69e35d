"""Flag counts of run directories: per (op, side) how many cases are undersampled, show
outliers or two modes, with the worst max/median ratio seen.

    python3 tests/device/flag_summary.py RUNS_ROOT...
"""
from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.measure import sample_stats  # noqa: E402
from harness.store.reader import load_run  # noqa: E402


def main(roots: list[str]) -> None:
    for root in roots:
        counts: dict = collections.defaultdict(collections.Counter)
        worst: dict = collections.defaultdict(float)
        for run_json in sorted(Path(root).glob("*/run.json")):
            run = load_run(run_json.parent)
            for row in run.rows:
                for side, m in (("torch", row.torch), ("gems", row.gems)):
                    if m is None:
                        continue
                    key = (run.op, side)
                    counts[key]["cases"] += 1
                    for flag in m.flags:
                        counts[key][flag] += 1
                    worst[key] = max(worst[key], sample_stats.worst_ratio(m.samples_ms))
        print(f"{root}:")
        for (op, side), c in sorted(counts.items()):
            print(f"  {op:8} {side:5} cases {c['cases']:3}  undersampled {c['undersampled']:3}  "
                  f"outliers {c['outliers']:3}  bimodal {c['bimodal']:3}  "
                  f"worst max/median {worst[(op, side)]:.3g}")


if __name__ == "__main__":
    main(sys.argv[1:])
