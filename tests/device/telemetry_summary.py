"""Summaries for check_telemetry.sh.

    python tests/device/telemetry_summary.py tsv ROOT            # telemetry.tsv over time
    python tests/device/telemetry_summary.py cases OFF_ROOT ON_ROOT   # per-case clocks, and
          the same cases with telemetry off vs sampled every 50 ms (perturbation check)
    python tests/device/telemetry_summary.py calibration ROOT    # calibration.json table
"""
import json
import statistics
import sys
from pathlib import Path

from harness.calibrate.run import render
from harness.store.reader import load_run
from harness.telemetry import chart, tsv


def timeline(root: Path) -> None:
    points = tsv.read(root / tsv.FILE)
    err = root / tsv.ERROR_FILE
    if err.exists():
        print("telemetry.err:", err.read_text().strip())
    if not points:
        print(f"{root}: no telemetry samples")
        return
    print(json.dumps(tsv.summarize(points)))
    print("physical device(s):", sorted({p.physical for p in points}), "source:",
          sorted({p.source for p in points}))
    ops = [p.name for p in sorted(root.iterdir()) if p.is_dir()]
    windows = chart.for_report(root, ops)["windows"]
    t0 = points[0].time
    for op, (start, end) in windows.items():
        inside = [p for p in points if start - 1 <= p.time <= end + 1]
        clocks = [p.sm_clock_mhz for p in inside if p.sm_clock_mhz is not None]
        if clocks:
            print(f"  {op:10} t={start - t0:6.1f}..{end - t0:6.1f}s  samples {len(inside):3}  "
                  f"SM {min(clocks):.0f}/{statistics.median(clocks):.0f}/{max(clocks):.0f} MHz "
                  f"(min/median/max)  slowdown samples {sum(1 for p in inside if p.slowdowns)}")
    step = max(1, len(points) // 25)
    print("  t_s     sm   mem  temp  power  util  throttle  cost_us")
    for p in points[::step]:
        print(f"  {p.time - t0:6.1f} {p.sm_clock_mhz or 0:5.0f} {p.mem_clock_mhz or 0:5.0f} "
              f"{p.temp_c or 0:5.0f} {p.power_w or 0:6.1f} {p.util_pct or 0:5.0f}  "
              f"{','.join(p.throttle) if p.throttle else p.throttle}  {p.cost_us}")


def _rows(root: Path):
    out = {}
    for run_dir in sorted(root.glob("*_*")):
        if (run_dir / "run.json").exists():
            for r in load_run(run_dir).rows:
                out[(r.op, r.dtype, r.shape_detail, r.occurrence)] = r
    return out


def cases(off_root: Path, on_root: Path) -> None:
    off, on = _rows(off_root), _rows(on_root)
    print("op       dtype     shape              gems ms   clocks gems (start>end MHz, usual)"
          "   torch         throttled  |d| on-vs-off %")
    deltas = []
    for key, row in list(on.items())[:30]:
        other = off.get(key)
        d = (abs(row.gems_ms / other.gems_ms - 1) * 100 if other and other.gems_ms and row.gems_ms
             else None)
        if d is not None:
            deltas.append(d)
        print(f"{key[0]:8} {key[1]:9} {key[2]:18} {row.gems_ms or 0:.5f}  "
              f"{_clocks(row.gems):28} {_clocks(row.torch):14} {str(row.throttled):9}  "
              f"{'-' if d is None else f'{d:.3f}'}")
    if deltas:
        print(f"telemetry every 50 ms vs off, same cases: |d| median "
              f"{statistics.median(deltas):.3f}% max {max(deltas):.3f}% over {len(deltas)} cases")
    for root in (on_root,):
        for run_dir in sorted(root.glob("*_*")):
            info = json.loads((run_dir / "run.json").read_text())
            tel = info.get("telemetry") or {}
            print(f"{run_dir.name}: throttled cases {info.get('throttled_cases')}, samples "
                  f"{tel.get('samples')}, sampler cost per sample {tel.get('sample_cost_us')} us")


def _clocks(measurement) -> str:
    if measurement is None or not measurement.clocks:
        return "-"
    c = measurement.clocks
    usual = c[0].usual_sm_mhz
    reasons = sorted({r for x in c for r in x.throttle})
    return (f"{_mhz(c[0].sm_clock_mhz)}>{_mhz(c[-1].sm_clock_mhz)} ({_mhz(usual)})"
            + (f" {','.join(reasons)}" if reasons else ""))


def _mhz(value) -> str:
    return "?" if value is None else f"{value:.0f}"


def calibration(root: Path) -> None:
    path = root / "calibration.json"
    if not path.exists():
        print(f"{root}: no calibration.json")
        return
    for line in render(json.loads(path.read_text())):
        print(line)


if __name__ == "__main__":
    what, *paths = sys.argv[1:]
    {"tsv": timeline, "cases": cases, "calibration": calibration}[what](*map(Path, paths))
