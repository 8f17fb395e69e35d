"""Summaries for check_kernel_meta.sh.

    python3 tests/device/kernel_meta_summary.py split RUN_DIR...   # kernel_split.tsv per case
    python3 tests/device/kernel_meta_summary.py meta SCREEN_ROOT   # index.tsv metadata per run

`split`: per case, each kernel's time per call, share and launches, then the sum of the
kernels' times (graph timer) or the device span (event timer) beside the op's measured
latency (kernel_split.case_sums), `ok` within LIMIT_PCT (2 %) and `OFF` beyond; exit 1 when a case is off or a run has no split. `meta`: every measured row of
each side's ttgir/index.tsv with n_regs, n_spills, shared, num_warps, num_stages, num_ctas
and convert_layout, then the screen's verdict and note per op.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.compile.ir.fingerprint import read_index  # noqa: E402
from harness.compile.ir.kernel_meta import META_COLUMNS  # noqa: E402
from harness.common.errors import UsageError  # noqa: E402
from harness.store.reader import read_info  # noqa: E402
from harness.telemetry.kernel_split import case_sums, read_split  # noqa: E402

LIMIT_PCT = 2.0


def _timer(run: str) -> str | None:
    """The run's timer (run.json's caliber), for files that do not name one."""
    try:
        return (read_info(run).get("caliber") or {}).get("timer")
    except UsageError:
        return None


def split(runs: list[str]) -> int:
    bad = 0
    for run in runs:
        rows = read_split(run)
        print(f"== {run}")
        if not rows:
            print("   no kernel_split.tsv rows")
            bad += 1
            continue
        for case in case_sums(rows, _timer(run)):
            key = (case["dtype"], case["shape"], case["variant"], case["occurrence"])
            print(f"   case {case['dtype']} {case['shape']}"
                  + (f" variant={case['variant']}" if case["variant"] else ""))
            for row in rows:
                if (row["dtype"], row["shape"], row["variant"], row["occurrence"]) == key:
                    print(f"     {float(row['time_us']):10.3f} us  share {float(row['share']):6.4f}"
                          f"  calls {row['calls']:>4}  {row['kernel']}")
            latency, gap = case["op_latency_us"], case["gap_pct"]
            verdict = ("no latency" if gap is None else
                       "ok" if abs(gap) <= LIMIT_PCT else "OFF")
            bad += verdict != "ok"
            if case["span_us"] is not None:
                print(f"     idle between kernels {case['idle_us']:.3f} us; device span per "
                      f"call {case['span_us']:.3f} us (kernels + idle)")
            whole = "device span" if case["compared"] == "span" else "sum of kernels"
            print(f"     sum of kernels {case['kernels_us']:.3f} us; {whole} vs measured latency "
                  f"{latency if latency is not None else '-'} us: gap "
                  f"{'-' if gap is None else f'{gap:+.2f}%'} -> {verdict} "
                  f"(limit {LIMIT_PCT:g}%)")
    return 1 if bad else 0


def meta(root: str) -> int:
    base = Path(root)
    runs = sorted(base.glob("[AB]/*/*_*/ttgir/index.tsv"))
    if not runs:
        print(f"no ttgir/index.tsv under {root}/A or {root}/B")
        return 1
    for index in runs:
        run = index.parent.parent
        print(f"== {run.relative_to(base)}")
        rows = [r for r in read_index(run) if r.get("role") == "measured"]
        print("   " + "\t".join(("shape", "kernel", *META_COLUMNS)))
        for r in rows:
            print("   " + "\t".join([r.get("shape", ""), r.get("kernel", "")[:40],
                                     *(r.get(c, "?") for c in META_COLUMNS)]))
    screen = base / "screen.tsv"
    if screen.is_file():
        lines = screen.read_text().splitlines()
        header = lines[0].split("\t")
        print("== screen.tsv")
        for line in lines[1:]:
            row = dict(zip(header, line.split("\t")))
            print(f"   {row.get('op', '?'):10} {row.get('verdict', '?'):12} "
                  f"{row.get('median_delta_pct', '')} | {row.get('note', '')}")
    return 0


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    sys.exit(split(args) if what == "split" else meta(args[0]))
