"""Summarise every run directory under ROOT: per op, rows SUCCESS / FAILED / SKIPPED with
reasons, graph fallbacks, run status. Usage: python tests/device/summarize_runs.py ROOT"""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

from harness.store.reader import read_rows


def main(root: str) -> None:
    totals = collections.Counter()
    reasons = collections.Counter()
    ops_by_outcome = collections.defaultdict(list)
    for run_json in sorted(Path(root).rglob("run.json")):
        info = json.loads(run_json.read_text())
        results = run_json.parent / "results.jsonl"
        rows = read_rows(results) if results.exists() else []
        counts = collections.Counter(r.status for r in rows)
        fallbacks = sum(1 for r in rows for m in r.markers
                        if m.startswith("BENCHMARK_DIRECT_NO_CUDAGRAPH"))
        for r in rows:
            if r.status != "SUCCESS":
                reasons[f"{r.status}: {r.reason[:110]}"] += 1
        outcome = ("ran" if counts["SUCCESS"] else
                   "failed" if counts["FAILED"] else "skipped" if counts["SKIPPED"] else "empty")
        ops_by_outcome[outcome].append(info["op"])
        totals.update(counts)
        print(f"{info['op']:44} status={info['status']:9} ok={counts['SUCCESS']:3} "
              f"failed={counts['FAILED']:3} skipped={counts['SKIPPED']:3} "
              f"graph_fallbacks={fallbacks:3} wall={info.get('wall_s', '-')}")
    print(f"\nops: {sum(len(v) for v in ops_by_outcome.values())} "
          + " ".join(f"{k}={len(v)}" for k, v in sorted(ops_by_outcome.items())))
    for outcome in ("failed", "skipped", "empty"):
        if ops_by_outcome[outcome]:
            print(f"{outcome}: {' '.join(ops_by_outcome[outcome])}")
    print(f"rows: {dict(totals)}")
    for reason, n in reasons.most_common(40):
        print(f"{n:4}  {reason}")


if __name__ == "__main__":
    main(sys.argv[1])
