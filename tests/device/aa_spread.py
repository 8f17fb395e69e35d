"""Device check: per-shape A/A spread between two runs of the same op and caliber.

Usage: python tests/device/aa_spread.py RUN_A RUN_B
Prints per shape |gems_A / gems_B - 1| and the median and max over shapes.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

from harness.store.reader import read_rows
from harness.store.results import SUCCESS


def spread(dir_a, dir_b):
    a = {(r.dtype, r.shape_detail, r.occurrence): r for r in read_rows(Path(dir_a) / "results.jsonl")
         if r.status == SUCCESS}
    b = {(r.dtype, r.shape_detail, r.occurrence): r for r in read_rows(Path(dir_b) / "results.jsonl")
         if r.status == SUCCESS}
    deltas = []
    for key in sorted(set(a) & set(b)):
        d = (a[key].gems_ms / b[key].gems_ms - 1) * 100
        deltas.append(abs(d))
        print(f"{key[0]:9} {key[1]:16} A {a[key].gems_ms:10.5f} B {b[key].gems_ms:10.5f} "
              f"delta {d:+7.3f}%")
    if deltas:
        deltas.sort()
        print(f"A/A {Path(dir_a).name} vs {Path(dir_b).name}: n={len(deltas)} median |delta| "
              f"{statistics.median(deltas):.3f}% max {deltas[-1]:.3f}%")


if __name__ == "__main__":
    spread(sys.argv[1], sys.argv[2])
