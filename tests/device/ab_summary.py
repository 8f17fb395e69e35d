"""Per-shape |delta| median and max from a `zlh ab` root's report.json (A/A noise floor, or
the size of a planted change). Usage: python tests/device/ab_summary.py ROOT"""
import json
import statistics
import sys
from pathlib import Path

report = json.loads((Path(sys.argv[1]) / "report.json").read_text())
for op in report["ops"]:
    deltas = sorted(abs(r["delta_pct"]) for r in op["rows"] if r["delta_pct"] is not None)
    signs = {"+" if r["delta_pct"] > 0 else "-" for r in op["rows"] if r["delta_pct"]}
    if deltas:
        print(f"{op['op']:12} n={len(deltas):3} median|d|={statistics.median(deltas):.3f}% "
              f"max|d|={deltas[-1]:.3f}% signs={''.join(sorted(signs))} "
              f"verdict={op.get('verdict')} slower={op['summary'].get('slower')} "
              f"faster={op['summary'].get('faster')}")
    else:
        print(f"{op['op']:12} no paired rows")
