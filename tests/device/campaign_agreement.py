"""Two campaigns over the same plan (e.g. two cards vs one): wall, and whether per-shape
deltas agree within their intervals. Usage: python campaign_agreement.py ROOT_A ROOT_B"""
import json
import sys
from pathlib import Path

a_root, b_root = Path(sys.argv[1]), Path(sys.argv[2])
walls = []
for root in (a_root, b_root):
    merged = json.loads((root / "merged.json").read_text())
    cards = merged["cards"]
    wall = max((c["wall_s"] for c in cards.values()), default=0)
    walls.append(wall)
    print(f"{root.name}: wall {wall / 60:.2f} min; per card " + ", ".join(
        f"{d}: {c['wall_s'] / 60:.2f} min (plan {(c.get('planned_s') or 0) / 60:.2f})"
        for d, c in cards.items()) + f"; ops reported {len(merged['ops_reported'])}")
if walls[0]:
    print(f"wall ratio {b_root.name}/{a_root.name}: {walls[1] / walls[0]:.2f}x")
rows = {}
for label, root in (("a", a_root), ("b", b_root)):
    report = json.loads((root / "report.json").read_text())
    for r in report["rows"]:
        rows.setdefault((r["op"], r["dtype"], r["shape_detail"], r["occurrence"]), {})[label] = r
both = [v for v in rows.values() if "a" in v and "b" in v]
within = 0
for v in both:
    a, b = v["a"], v["b"]
    lo = max(a["ci_low_pct"] or -1e9, b["ci_low_pct"] or -1e9)
    hi = min(a["ci_high_pct"] or 1e9, b["ci_high_pct"] or 1e9)
    within += lo <= hi                      # the two intervals overlap
print(f"per-shape deltas: {len(both)} shapes in both; intervals overlap on {within}")
