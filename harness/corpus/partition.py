"""Spreading ops over devices by their measured cost (longest processing time first).

Weight of an op = elapsed_a + elapsed_b from a screen (one pair = two runs); N rounds cost
weight x N. Ops without a weight get the median weight (and one warning). Greedy: sort by
(-weight, name), give each op to the device with the least load, ties by device id — the
same input always gives the same plan.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import UsageError
from .verdict import read_tsv


MAX_ELAPSED_S = 1e9             # ~32 years: a screen time above it is a damaged table


@dataclass
class Partition:
    loads: dict[int, float]                     # device -> seconds
    assignment: dict[int, list[str]]            # device -> ops, in the order given
    weights: dict[str, float]                   # op -> seconds (rounds included)
    filtered: list[tuple[str, str]] = field(default_factory=list)   # (op, verdict)
    imputed: list[str] = field(default_factory=list)

    @property
    def critical_path_s(self) -> float:
        return max(self.loads.values()) if self.loads else 0.0

    @property
    def total_s(self) -> float:
        return sum(self.weights.values())

    @property
    def imbalance(self) -> float:
        mean = self.total_s / len(self.loads) if self.loads else 0.0
        return self.critical_path_s / mean if mean else 1.0

    @property
    def heaviest_s(self) -> float:
        return max(self.weights.values()) if self.weights else 0.0

    @property
    def lower_bound_s(self) -> float:
        """No plan beats the heaviest op alone, nor a perfect share of the total."""
        return max(self.heaviest_s, self.total_s / max(len(self.loads), 1))

    def device_of(self, op: str) -> int:
        return next(d for d, ops in self.assignment.items() if op in ops)


def weights_from_screen(path: Path, verdicts: tuple[str, ...] | None
                        ) -> tuple[dict[str, float | None], list[tuple[str, str]]]:
    """({op: seconds or None}, [(op, verdict) filtered out]) from a screen.tsv."""
    if Path(path).exists() and not Path(path).is_file():
        raise UsageError(f"{path}: not a regular file (a pipe or device); a screen root's "
                         f"screen.tsv is expected")
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such screen table (a screen root's screen.tsv)")
    rows = read_tsv(path)
    missing = [c for c in ("op", "verdict") if rows and c not in rows[0]]
    if missing:
        raise UsageError(f"{path} is not a screen table (no {' or '.join(missing)} column)")
    kept, filtered, seen = {}, [], {}
    for line, row in enumerate(rows, 2):
        if not row["op"].strip():
            raise UsageError(f"{path}: line {line} has no op name")
        if row["op"] in seen:
            raise UsageError(f"{path}: op {row['op']!r} appears twice (lines {seen[row['op']]} "
                             f"and {line}); one row per op")
        seen[row["op"]] = line
        if verdicts and row.get("verdict") not in verdicts:
            filtered.append((row["op"], row.get("verdict", "-")))
            continue
        kept[row["op"]] = _weight(row, f"{path}: line {line}")
    return kept, filtered


def _weight(row: dict, where: str) -> float | None:
    """elapsed_a + elapsed_b in seconds; None (the median is used) when either is not a
    finite number >= 0; UsageError for one above MAX_ELAPSED_S (sums of such would
    overflow into inf and nan)."""
    try:
        a, b = float(row["elapsed_a"]), float(row["elapsed_b"])
    except (KeyError, ValueError):
        return None
    for name, value in (("elapsed_a", a), ("elapsed_b", b)):
        if math.isfinite(value) and value > MAX_ELAPSED_S:
            raise UsageError(f"{where}: {name} {row[name].strip()} is not a plausible time in "
                             f"seconds (at most {MAX_ELAPSED_S:g}); fix or remove the row")
    return a + b if math.isfinite(a + b) and a >= 0 and b >= 0 else None


def partition(weights: dict[str, float | None], devices: list[int], rounds: int = 1,
              extra: list[str] = ()) -> Partition:
    if not devices:
        raise UsageError("no devices to partition over")
    known = [w for w in weights.values() if w is not None]
    median = statistics.median(known) if known else 1.0
    imputed = sorted(op for op, w in weights.items() if w is None)
    try:
        full = {op: (w if w is not None else median) * rounds for op, w in weights.items()}
        finite = math.isfinite(sum(full.values()) + median * rounds * len(extra))
    except OverflowError:
        finite = False
    if not finite:
        raise UsageError(f"--rounds {rounds}: the planned time overflows; give fewer rounds")
    loads = {d: 0.0 for d in devices}
    assignment: dict[int, list[str]] = {d: [] for d in devices}
    for op in sorted(full, key=lambda o: (-full[o], o)):
        device = min(devices, key=lambda d: (loads[d], d))
        assignment[device].append(op)
        loads[device] += full[op]
    for op in extra:                            # extra ops: to the least-loaded device
        if op in full:
            continue
        device = min(devices, key=lambda d: (loads[d], d))
        full[op] = median * rounds
        assignment[device].append(op)
        loads[device] += full[op]
        imputed.append(op)
    return Partition(loads, assignment, full, imputed=imputed)


def render(part: Partition, fmt: str = "text") -> str:
    if fmt == "tsv":
        lines = ["device\top\tweight_s"]
        lines += [f"{d}\t{op}\t{part.weights[op]:.3f}" for d, ops in part.assignment.items()
                  for op in ops]
        return "\n".join(lines) + "\n"
    lines = []
    for d, ops in part.assignment.items():
        lines.append(f"device {d}: {len(ops)} ops, {part.loads[d] / 60:.1f} min")
        lines += [f"    {op:<40} {part.weights[op] / 60:7.2f} min" for op in ops]
    lines += [f"critical path {part.critical_path_s / 60:.1f} min; single device "
              f"{part.total_s / 60:.1f} min; imbalance (max/mean load) {part.imbalance:.3f}; "
              f"lower bound {part.lower_bound_s / 60:.1f} min (heaviest op alone "
              f"{part.heaviest_s / 60:.1f} min)"]
    for op, verdict in part.filtered:
        lines.append(f"filtered out: {op} ({verdict})")
    return "\n".join(lines)
