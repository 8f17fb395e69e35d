"""Per op of a `zlh batch` root: status, wall, input building (the slowest case's
`extra.inputs_s` in results.jsonl, the run's `inputs_s` total in run.json) and how the
inputs were made (run.json `inputs`), over every run of the op (dtype fallbacks included).

    python3 tests/device/inputs_summary.py LABEL ROOT [LABEL2 ROOT2]

prints, per root, one line per op and a last line `LABEL: N ops, max case inputs X s, ops over 1 s: …`.
Reads the files only: runs anywhere, no zlh import.
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path


def op_runs(root: Path, run_dir: str) -> list[Path]:
    """Every run directory of the op whose last run is `run_dir` (relative to root)."""
    if not run_dir:
        return []
    folder = (root / run_dir).parent
    return sorted(p.parent for p in folder.glob("*/run.json"))


def summarize(root: Path) -> list[dict]:
    out = []
    status_file = root / "ops_status.csv"
    if not status_file.is_file():
        return out
    for row in csv.DictReader(open(status_file, newline="")):
        cases, total, modes, replaced = [], 0.0, set(), 0
        for run in op_runs(root, row.get("run_dir", "")):
            info = json.loads((run / "run.json").read_text())
            total += float(info.get("inputs_s") or 0.0)
            made = info.get("inputs") or {}
            modes.add(made.get("mode", "?"))
            replaced += int(made.get("replaced_calls") or 0)
            results = run / "results.jsonl"
            lines = results.read_text().splitlines() if results.is_file() else []
            for line in filter(str.strip, lines):
                case = json.loads(line)
                cases.append((float((case.get("extra") or {}).get("inputs_s") or 0.0),
                              f"{case.get('dtype')} {case.get('shape_detail')}"))
        worst = max(cases, default=(0.0, "-"))
        out.append({"op": row["op"], "status": row["status"], "wall_s": float(row["elapsed_s"]),
                    "cases": len(cases), "max_case_inputs_s": worst[0], "worst_case": worst[1],
                    "inputs_s": total, "mode": ",".join(sorted(modes)) or "-",
                    "replaced_calls": replaced, "notes": row.get("notes", "")})
    return out


def report(label: str, root: Path) -> list[dict]:
    ops = summarize(root)
    print(f"== {label}: {root}")
    print(f"  {'op':40} {'status':8} {'wall s':>7} {'cases':>5} {'max case in s':>13} "
          f"{'inputs s':>8} {'mode':8} {'repl':>4}  worst case")
    for o in ops:
        print(f"  {o['op'][:40]:40} {o['status']:8} {o['wall_s']:7.1f} {o['cases']:5d} "
              f"{o['max_case_inputs_s']:13.3f} {o['inputs_s']:8.2f} {o['mode']:8} "
              f"{o['replaced_calls']:4d}  {o['worst_case'][:60]}")
    over = [o["op"] for o in ops if o["max_case_inputs_s"] > 1.0]
    worst = max((o["max_case_inputs_s"] for o in ops), default=0.0)
    print(f"{label}: {len(ops)} ops, wall {sum(o['wall_s'] for o in ops):.1f} s, max case "
          f"inputs {worst:.3f} s, ops over 1 s: {', '.join(over) or 'none'}")
    return ops


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print(__doc__, file=sys.stderr)
        return 2
    for label, root in zip(argv[::2], argv[1::2]):
        report(label, Path(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
