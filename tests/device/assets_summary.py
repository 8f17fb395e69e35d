"""Summaries for check_corpus_assets.sh.

    python tests/device/assets_summary.py sets SINGLE_ROOT CORE_ROOT OP...   per-op wall and rows
    python tests/device/assets_summary.py inject ROOT...     markers and shape_detail per row
    python tests/device/assets_summary.py rows ROOT          ops with rows (SUCCESS)
    python tests/device/assets_summary.py pick INVENTORY_CSV N   names to bench: collect=ok
                                                             first, else no unconditional skip
"""
from __future__ import annotations

import collections
import csv
import json
import statistics
import sys
from pathlib import Path

from harness.store.reader import read_rows


def _runs(root: str) -> dict:
    """op -> (run.json, rows, run dir) for every run directory under root (last one wins)."""
    out = {}
    for run_json in sorted(Path(root).rglob("run.json")):
        info = json.loads(run_json.read_text())
        results = run_json.parent / "results.jsonl"
        out[info["op"]] = (info, read_rows(results) if results.exists() else [], run_json.parent)
    return out


def _cell(entry) -> tuple[str, float | None, int]:
    if entry is None:
        return "not reached", None, 0
    info, rows, _ = entry
    counts = collections.Counter(r.status for r in rows)
    wall = info.get("wall_s")
    text = (f"{info['status']:<11} ok={counts['SUCCESS']:<3} failed={counts['FAILED']:<3} "
            f"skipped={counts['SKIPPED']:<3} wall={wall if wall is not None else '-':>7}")
    return text, wall, counts["SUCCESS"]


def sets(single_root: str, core_root: str, ops: list[str]) -> None:
    single, core = _runs(single_root), _runs(core_root)
    from adapters.flaggems import FlagGemsAdapter
    resolver = FlagGemsAdapter()            # static: the names run.json records ($FLAGGEMS_DIR)
    names = {o: resolver.resolve(o) for o in ops}
    print(f"{'op':34} {'shapes/single.yaml':62} core_shapes.yaml")
    totals = {"single": [], "core": []}
    with_rows = collections.Counter()
    both = []
    for op in ops:
        key = names[op]
        s_text, s_wall, s_ok = _cell(single.get(key))
        c_text, c_wall, c_ok = _cell(core.get(key))
        print(f"{key[:34]:34} {s_text:62} {c_text}")
        for side, wall, ok, entry in (("single", s_wall, s_ok, single.get(key)),
                                      ("core", c_wall, c_ok, core.get(key))):
            if entry is not None and entry[0]["status"] == "complete" and wall is not None:
                totals[side].append(wall)
            with_rows[side] += ok > 0
        if s_wall is not None and c_wall is not None and single[key][0]["status"] == \
                core[key][0]["status"] == "complete":
            both.append((s_wall, c_wall))
    for side, runs in (("single", single), ("core", core)):
        walls = totals[side]
        rows = sum(sum(r.status == "SUCCESS" for r in e[1]) for e in runs.values())
        print(f"\n{side}: {len(runs)} of {len(ops)} ops reached, {len(walls)} complete, "
              f"{with_rows[side]} with rows, {rows} SUCCESS rows; wall of complete ops "
              f"{sum(walls):.1f} s, median {statistics.median(walls) if walls else 0:.2f} s/op")
    if both:
        s_sum, c_sum = sum(b[0] for b in both), sum(b[1] for b in both)
        print(f"ops complete on both sides: {len(both)}; wall single {s_sum:.1f} s vs core "
              f"{c_sum:.1f} s (single/core = {s_sum / c_sum:.2f})")


def inject(roots: list[str]) -> None:
    for root in roots:
        for op, (info, rows, run_dir) in sorted(_runs(root).items()):
            print(f"== {op} ({run_dir.name}, {info['status']})")
            log = (run_dir / "run.log").read_text() if (run_dir / "run.log").exists() else ""
            for line in log.splitlines():
                if line.startswith(("SHAPES_INJECTED", "SHAPES_NOT_INJECTED")):
                    print(f"   {line}")
            for row in rows:
                print(f"   {row.status:8} {row.dtype:9} {row.shape_detail[:70]:70} "
                      f"shapes={row.extra.get('shapes', '-')}")


def rows_summary(root: str) -> None:
    runs = _runs(root)
    ran = sorted(op for op, (_, rows, _) in runs.items() if any(r.status == "SUCCESS" for r in rows))
    for op, (info, rows, _) in sorted(runs.items()):
        text, _, _ = _cell((info, rows, None))
        reasons = sorted({r.reason[:80] for r in rows if r.status != "SUCCESS" and r.reason})
        print(f"{op[:44]:44} {text} {' | '.join(reasons)[:160]}")
    print(f"\n{len(runs)} ops reached, {len(ran)} with rows (SUCCESS): {' '.join(ran)}")


def pick(inventory: str, count: int) -> None:
    with open(inventory, newline="") as handle:
        rows = list(csv.DictReader(handle))
    ok = [r["name"] for r in rows if r.get("collect") == "ok"]
    rest = [r["name"] for r in rows if not r["marked_skip"] and r["name"] not in ok]
    tally = collections.Counter(r.get("collect", "-") for r in rows)
    print(f"inventory: {len(rows)} functions, collect: {dict(tally)}", file=sys.stderr)
    print("\n".join((ok or rest)[:count]))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "sets":
        sets(args[0], args[1], args[2:])
    elif command == "inject":
        inject(args)
    elif command == "pick":
        pick(args[0], int(args[1]))
    else:
        rows_summary(args[0])
