"""Summaries for the corpus device checks.

    python tests/device/corpus_summary.py batch ROOT [ROOT_REFERENCE]
        per-status counts, ops per minute, reasons of every non-PASS op; with a reference
        batch (same ops, e.g. one device vs two, reused workers vs fresh processes): status
        agreement and per-shape gems latency |delta| (median, max) over ops PASS in both.
        Also the overhead per op beyond its own run (elapsed in ops_status.csv minus the run's
        wall_s in run.json: worker hand-over, resets, files; with --fresh-process also the
        interpreter and library start) and the time the whole corpus (CORPUS_OPS, default
        1100 ops) would take at this batch's median op time on its devices.
    python tests/device/corpus_summary.py screen ROOT
        verdict counts, op time and wall per op pair (overlapped ops counted once), where the
        time went (worker start, inputs, compile, sweep, measure, lock wait, outside the
        runs; the device held by some run against the seconds some run was going, and the
        runs that held it longest in one stretch), an example op per verdict, the corpus
        extrapolation
    python tests/device/corpus_summary.py screens ROOT ROOT_REFERENCE
        verdict agreement op by op with a reference screen of the same ops
    python tests/device/corpus_summary.py floors ROOT ROOT_REFERENCE
        the NO_IR_DIFF noise floors of both screens (the range of per-shape deltas, as `zlh
        report` reads it) op by op: widths, their medians, and the ops whose floor is wider
        here than in the reference
"""
from __future__ import annotations

import csv
import json
import os
import statistics
import sys
from pathlib import Path

from harness.corpus.files import op_dir

CORPUS_OPS = int(os.environ.get("CORPUS_OPS", "1100"))


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def batch(root: Path, reference: Path | None = None) -> None:
    rows = read_csv(root / "ops_status.csv")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    ran = [r for r in rows if r["run_dir"] not in ("", "-")]     # not a no_record SKIP
    busy = sum(float(r["elapsed_s"]) for r in ran)
    plan = json.loads((root / "batch.json").read_text())
    print(f"{root.name}: {len(rows)}/{len(plan['ops'])} ops finished, {counts}; op time "
          f"{busy:.0f} s ({60 * len(ran) / busy if busy else 0:.1f} ops/min of op time over "
          f"{len(ran)} ops that ran)")
    for r in rows:
        if r["status"] != "PASS":
            print(f"   {r['status']:<8} {r['op']:<36} {r['notes']:<20} {r['reason'][:150]}")
    kinds: dict[str, list[str]] = {}           # notes by kind: what replaced workers, fallbacks
    for r in rows:
        for note in r["notes"].split():
            kinds.setdefault(note.split("=")[0], []).append(r["op"])
    for kind, ops in sorted(kinds.items()):
        print(f"   note {kind}: {len(ops)} ops ({', '.join(ops[:8])}{' …' if len(ops) > 8 else ''})")
    overhead(root, rows, len(plan.get("devices") or [0]))
    ops = [r["op"] for r in rows]
    busy = lane_wall([root], ops)
    print(f"   overlap {'on' if plan.get('overlap') else 'off'}; wall (time some op ran) "
          f"{busy:.0f} s, {busy / max(len(ops), 1):.1f} s per op")
    where([root], ops)
    if reference is None:
        return
    ref = {r["op"]: r for r in read_csv(reference / "ops_status.csv")}
    both = [r for r in rows if r["op"] in ref]
    agree = sum(1 for r in both if r["status"] == ref[r["op"]]["status"])
    print(f"status agreement with {reference.name}: {agree}/{len(both)}")
    for r in both:
        if r["status"] != ref[r["op"]]["status"]:
            print(f"   differs: {r['op']} {r['status']} vs {ref[r['op']]['status']}")
    mine = {(s["op"], s["dtype"], s["shape"]): s for s in read_csv(root / "summary.csv")}
    theirs = {(s["op"], s["dtype"], s["shape"]): s for s in read_csv(reference / "summary.csv")}
    deltas = []
    per_op: dict[str, list[float]] = {}
    for key, s in mine.items():
        t = theirs.get(key)
        if t and s["gems_ms"] and t["gems_ms"] and s["status"] == t["status"] == "SUCCESS":
            d = abs(float(s["gems_ms"]) / float(t["gems_ms"]) - 1) * 100
            deltas.append(d)
            per_op.setdefault(key[0], []).append(d)
    if deltas:
        print(f"per-shape gems latency |delta| vs {reference.name}: n={len(deltas)} over "
              f"{len(per_op)} ops, median {statistics.median(deltas):.3f}% max {max(deltas):.3f}%")
        worst = sorted(per_op.items(), key=lambda kv: -max(kv[1]))[:5]
        print("   largest: " + ", ".join(f"{op} {max(v):.2f}%" for op, v in worst))


def overhead(root: Path, rows: list[dict], devices: int) -> None:
    """Per op: elapsed (supervisor's clock) minus the run's own wall_s (run.json)."""
    extra, elapsed = [], []
    first, later = [], []            # a worker's first op (process start-up inside) vs the rest
    seen: set = set()
    for r in rows:
        elapsed.append(float(r["elapsed_s"]))
        run = root / r["run_dir"] if r["run_dir"] not in ("", "-") else None
        try:
            info = json.loads((run / "run.json").read_text()) if run else {}
            wall, pid = info["wall_s"], info.get("pid")
        except (OSError, ValueError, KeyError):
            wall, pid = None, None
        if wall is not None:
            extra.append(float(r["elapsed_s"]) - float(wall))
            (later if pid in seen else first).append(extra[-1])
            seen.add(pid)
    if extra:
        print(f"   overhead per op beyond its run: median {statistics.median(extra):.2f} s, "
              f"max {max(extra):.2f} s (n={len(extra)})")
    for label, values in (("a worker's first op", first), ("later ops of a worker", later)):
        if values:
            print(f"      {label}: median {statistics.median(values):.2f} s, "
                  f"max {max(values):.2f} s (n={len(values)})")
    if elapsed:
        hours = CORPUS_OPS * statistics.median(elapsed) / devices / 3600
        print(f"   corpus of {CORPUS_OPS} ops at the median op time "
              f"{statistics.median(elapsed):.1f} s on {devices} device(s): {hours:.2f} h")


def screen_rows(root: Path) -> list[dict]:
    lines = (root / "screen.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, ln.split("\t"))) for ln in lines[1:]]


def screens(root: Path, reference: Path) -> None:
    mine = {r["op"]: r["verdict"] for r in screen_rows(root)}
    theirs = {r["op"]: r["verdict"] for r in screen_rows(reference)}
    both = sorted(set(mine) & set(theirs))
    agree = [op for op in both if mine[op] == theirs[op]]
    print(f"verdict agreement with {reference.name}: {len(agree)}/{len(both)} "
          f"(only here: {sorted(set(mine) - set(theirs))}, only there: "
          f"{sorted(set(theirs) - set(mine))})")
    for op in both:
        print(f"   {op:<24} {mine[op]:<12} {'=' if mine[op] == theirs[op] else '!='} {theirs[op]}")


def floor_widths(root: Path) -> dict[str, float]:
    """{op: width in percentage points} of the screen's NO_IR_DIFF rows that carry a range."""
    import tempfile
    from harness.report.build import build
    with tempfile.TemporaryDirectory() as page_dir:
        report = build(root, Path(page_dir))
    return {e.op: e.high - e.low for e in report.ops
            if e.status == "NO_IR_DIFF" and e.noise and e.low is not None and e.high is not None}


def floors(root: Path, reference: Path) -> int:
    mine, theirs = floor_widths(root), floor_widths(reference)
    both = sorted(set(mine) & set(theirs))
    if not both:
        print(f"no NO_IR_DIFF op with a noise floor in both {root.name} and {reference.name}")
        return 1
    wider = [op for op in both if mine[op] > theirs[op]]
    for op in both:
        print(f"   {op:<28} {mine[op]:7.3f} pp  vs {theirs[op]:7.3f} pp"
              + ("  WIDER" if op in wider else ""))
    print(f"NO_IR_DIFF floors over {len(both)} ops: median width {statistics.median(mine[o] for o in both):.3f} "
          f"pp here vs {statistics.median(theirs[o] for o in both):.3f} pp in {reference.name}; "
          f"wider here: {len(wider)} ({', '.join(wider) or 'none'})")
    return 0


PHASES = ("inputs_s", "compile_s", "sweep_s", "measure_s", "lock_wait_s")
COMPILE_TIMES = ("kernel_compile_s", "sweep_compile_s", "compiles")   # run.json's ir


def where(sides: list[Path], ops: list[str]) -> None:
    """Where the op time went, summed over `sides` (batch roots: a screen's A and B): the
    worker start an op waited for (.complete start_s: process start, and a spare's imports
    when it was not ready yet; 0 when a ready spare took over), what a cold worker's first op
    spent importing torch and zlh's runner (.complete import_s), the runs' own wall_s split
    into inputs, compile, autotune sweeps,
    measurement and lock waits (run.json; the rest of a run: files, checks, first run.json),
    and what lies outside the runs (planning, the adapter's library import in a worker's
    first op, resets, hand-over). Runs of every attempt count."""
    total = start = imports = run_wall = 0.0
    phases = dict.fromkeys(PHASES, 0.0)
    held = dict.fromkeys(("held_s", "shared_s", "aside_s", "runs"), 0.0)
    compiling = dict.fromkeys(COMPILE_TIMES, 0.0)
    for side in sides:
        for op in ops:
            try:
                done = json.loads((op_dir(side, op) / ".complete").read_text())
            except (OSError, ValueError):
                continue
            start += float(done.get("start_s") or 0)      # not part of elapsed_s
            imports += float(done.get("import_s") or 0)    # part of elapsed_s
            total += float(done.get("elapsed_s") or 0) + float(done.get("start_s") or 0)
            for info_path in op_dir(side, op).glob("*/run.json"):
                info = json.loads(info_path.read_text())
                run_wall += float(info.get("wall_s") or 0)
                for name in PHASES:
                    phases[name] += float(info.get(name) or 0)
                lock = info.get("device_lock") if isinstance(info.get("device_lock"), dict) else {}
                if lock:
                    held["runs"] += 1
                    held["held_s"] += float(lock.get("held_s") or 0)
                    held["aside_s"] += float(lock.get("aside_s") or 0)
                    held["shared_s"] += float(lock.get("shared_s") or 0)
                ir = info.get("ir") if isinstance(info.get("ir"), dict) else {}
                for name in COMPILE_TIMES:
                    compiling[name] += float(ir.get(name) or 0)
    if not total:
        return
    inside = sum(phases.values())
    rest = run_wall - inside
    # The phases are not a partition where they nest (a sweep inside input building, a wait
    # for the device inside either): then no remainder is printed, the overlap is said.
    remainder = (f"rest of the runs {rest:.0f} s" if rest >= 0 else
                 f"these overlap by {-rest:.0f} s: a sweep can run inside input building, "
                 f"a wait for the device inside either")
    print(f"   where it went: op time {total:.0f} s = worker start {start:.0f} s + imports in "
          f"ops {imports:.0f} s + runs' own wall {run_wall:.0f} s [inputs {phases['inputs_s']:.0f} s, compile "
          f"{phases['compile_s']:.0f} s, sweep {phases['sweep_s']:.0f} s, measure "
          f"{phases['measure_s']:.0f} s, lock wait {phases['lock_wait_s']:.0f} s; {remainder}] "
          f"+ outside the runs {total - start - imports - run_wall:.0f} "
          f"s (plan, the library's import in a worker's first op, reset, hand-over)")
    if held["runs"]:
        print(f"   device held (the lock, summed over {held['runs']:.0f} runs): "
              f"{held['held_s']:.0f} s; let go for compiles {held['aside_s']:.0f} s; held "
              f"shared (beside other untimed runs) {held['shared_s']:.0f} s, alone "
              f"{held['held_s'] - held['shared_s']:.0f} s")
        device_view(sides, ops)
    if compiling["compiles"]:
        print(f"   Triton's own compile time (run.json ir): {compiling['kernel_compile_s']:.0f} s "
              f"over {compiling['compiles']:.0f} compiles, {compiling['sweep_compile_s']:.0f} s "
              f"of it inside sweeps (so the sweeps' benchmarking and the rest: "
              f"{phases['sweep_s'] - compiling['sweep_compile_s']:.0f} s)")


def covered(spans) -> float:
    """Seconds inside at least one of the (begin, end) spans: overlapping ones count once."""
    total, reach = 0.0, None
    for begin, end in sorted(spans):
        if reach is None or begin > reach:
            total += end - begin
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def device_view(sides: list[Path], ops: list[str], longest: int = 5) -> None:
    """The device's side of the wall: the union of every run's held stretches (run.json
    device_lock.sections: the seconds the device was in use by some run) against the union of
    the runs' spans (the seconds some run was going), and the runs that held it longest in
    one stretch (what every neighbour waited for, under overlap)."""
    held, spans, holds = [], [], []
    for side in sides:
        for op in ops:
            for info_path in op_dir(side, op).glob("*/run.json"):
                try:
                    lock = json.loads(info_path.read_text()).get("device_lock")
                except (OSError, ValueError):
                    continue
                if not isinstance(lock, dict) or not lock.get("run_span"):
                    continue
                sections = [(float(a), float(b)) for a, b in lock.get("sections") or []]
                held += sections
                spans.append(tuple(float(t) for t in lock["run_span"]))
                if sections:
                    holds.append((max(b - a for a, b in sections), f"{side.name}/{op}"))
    if not spans:
        return
    busy, going = covered(held), covered(spans)
    print(f"   the device: held by some run {busy:.0f} s of the {going:.0f} s some run was "
          f"going ({100 * busy / going if going else 0:.0f} %); longest single holds: "
          + ", ".join(f"{name} {s:.0f}s" for s, name in sorted(holds, reverse=True)[:longest]))


def lane_wall(sides: list[Path], ops: list[str]) -> float:
    """Seconds during which some op of these sides ran or waited for its worker: the union of
    each finished side's [end - elapsed - start, end] (end: its .complete's time), so that ops
    run at once (overlap, devices) count once and the gaps between resumed calls not at all."""
    spans = []
    for side in sides:
        for op in ops:
            path = op_dir(side, op) / ".complete"
            try:
                end = path.stat().st_mtime
                done = json.loads(path.read_text())
                spans.append((end - float(done["elapsed_s"]) - float(done.get("start_s", 0)),
                              end))
            except (OSError, ValueError, KeyError):
                continue
    return covered(spans)


def screen(root: Path) -> None:
    rows = screen_rows(root)
    counts: dict[str, list[str]] = {}
    for r in rows:
        counts.setdefault(r["verdict"], []).append(r["op"])
    walls = [float(r["elapsed_a"]) + float(r["elapsed_b"]) for r in rows
             if r["elapsed_a"] not in ("-", "") and r["elapsed_b"] not in ("-", "")]
    print(f"{root.name}: {len(rows)} ops; " +
          ", ".join(f"{v} {len(ops)}" for v, ops in counts.items()))
    if walls:
        mean = sum(walls) / len(walls)
        print(f"   op time per op pair: mean {mean:.1f} s, median {statistics.median(walls):.1f} "
              f"s, total {sum(walls):.0f} s of op time over {len(walls)} pairs; corpus of "
              f"{CORPUS_OPS} ops on one device at the mean pair: {CORPUS_OPS * mean / 3600:.2f} h "
              f"(at the median: {CORPUS_OPS * statistics.median(walls) / 3600:.2f} h)")
        ops = [r["op"] for r in rows]
        devices = len(json.loads((root / "screen.json").read_text())["batch"]["devices"])
        sides = [root / name for name in ("A", "B", "A.timed", "B.timed") if (root / name).is_dir()]
        busy = lane_wall(sides, ops)
        print(f"   wall per op pair (time some op ran, overlapped ops counted once): "
              f"{busy / len(rows):.1f} s over {len(rows)} ops on {devices} device(s); corpus "
              f"of {CORPUS_OPS} ops at that rate: {CORPUS_OPS * busy / len(rows) / 3600:.2f} h")
        where(sides, ops)
        slow = sorted(((float(r["elapsed_a"]) + float(r["elapsed_b"]), r["op"]) for r in rows
                       if r["elapsed_a"] not in ("-", "") and r["elapsed_b"] not in ("-", "")),
                      reverse=True)[:12]
        print("   slowest pairs: " + ", ".join(f"{op} {w:.0f}s" for w, op in slow))
    for verdict, ops in counts.items():
        example = next(r for r in rows if r["verdict"] == verdict)
        print(f"   {verdict}: {', '.join(ops)}")
        print(f"      e.g. {example['op']}: {example['note'][:160]} "
              f"(median delta {example['median_delta_pct']})")


if __name__ == "__main__":
    kind, *roots = sys.argv[1:]
    if kind == "batch":
        batch(Path(roots[0]), Path(roots[1]) if len(roots) > 1 else None)
    elif kind == "screens":
        screens(Path(roots[0]), Path(roots[1]))
    elif kind == "floors":
        sys.exit(floors(Path(roots[0]), Path(roots[1])))
    else:
        screen(Path(roots[0]))
