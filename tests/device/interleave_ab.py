"""Do two sides measured in turns see the same card? A device experiment for GEMMs under the
power cap, whose per-round delta no number of whole-side rounds brings to 0.3 %
(tests/device/README.md, twentieth set: sd 1.1-7.8 % for mm/addmm at 2048² and 4096²).

    python3 tests/device/interleave_ab.py            # on a GPU (FlagGems optional)
    python3 tests/device/interleave_ab.py --summary FILE.json     # (CPU too) the table again

In one process, per shape: side A is the kernel behind a zero-cycle device spin, side B the
same kernel behind a spin of PLANT_PCT % of its latency (as `zlh calibrate --plant-pct` plants
it: same launches on both sides, B slower by a known amount). Each sample is one CUDA-graph
replay of K calls (K: about SAMPLE_MS of work). A round measures the two sides in each arm:

  block        A's samples for WINDOW_MS, then B's for WINDOW_MS (B first on odd rounds): how
               a round of `zlh ab` measures today, one side after the other;
  block_hot    the same, each side first run for HOT_MS (a steady power and temperature before
               it is timed: what a longer --warmup-ms would do);
  interleaved  A and B take turns sample by sample (A B B A …) for 2 × WINDOW_MS, queued back
               to back: both sides see the same clock and temperature;
  handoff      the same turns with the device drained and GAP_US of host time between any two
               samples: what turns between two processes (one per side) would cost.

The turns' arms also give `<arm>_paired`: the median of the ratios of neighbouring A and B
samples instead of the ratio of the two medians.

Each arm warms its side(s) for WARMUP_MS first; the arms of a round run in rotated order and
SETTLE_S of idle comes before each round. Per round and arm, delta = 100·(median A / median B
- 1) (zlh's sign: B slower reads negative); per shape and arm over ROUNDS rounds: the mean, the
sd, zlh's t interval (harness.measure.stats.rounds_interval), found (significant with the
right sign), the change it could detect and the rounds it would need to see PLANT_PCT
(calibrate's formula). Environment: SHAPES ("mm:2048 mm:4096 addmm:2048 addmm:4096"), LIB
(gems: FlagGems' kernels through flag_gems.use_gems(), if importable; torch: cuBLAS), ROUNDS
(12), WINDOW_MS (250), WARMUP_MS (30), HOT_MS (1500), SAMPLE_MS (1.0), PLANT_PCT (0.3),
GAP_US (50), SETTLE_S (1.0), ARMS ("block block_hot interleaved handoff"). Output: the table
on stdout and in $OUT/interleave_ab.txt, the numbers in $OUT/interleave_ab.json.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backends import get_backend  # noqa: E402
from harness.calibrate.floor import rounds_to_detect, shape_floor  # noqa: E402
from harness.measure.stats import delta_pct, rounds_interval  # noqa: E402

ARMS = ("block", "block_hot", "interleaved", "handoff")
ALPHA = 0.05


def env(name: str, default: str) -> str:
    return os.environ.get(name) or default


# ---- analysis (pure: tested on the CPU) -------------------------------------------------------
def turns(n: int) -> list[str]:
    """The order of n samples taken in turns: A B B A A B B A … (a drift falls on both)."""
    return ["AB"[(k + 1) // 2 % 2] for k in range(n)]


def round_delta(a_ms, b_ms) -> float:
    """One round's delta from the two sides' samples: zlh's sign (B slower: negative)."""
    return delta_pct(float(np.median(a_ms)), float(np.median(b_ms)))


def paired_delta(a_ms, b_ms) -> float:
    """A round's delta from the turns' neighbours: the median over k of 100·(A_k / B_k - 1),
    A_k and B_k taken next to each other (turns: A0 B0 B1 A1 …), so that what drifts slower
    than a sample cancels pair by pair."""
    k = min(len(a_ms), len(b_ms))
    return float(np.median(np.asarray(a_ms[:k]) / np.asarray(b_ms[:k])) - 1.0) * 100.0


def arm_summary(deltas, plant_pct: float, alpha: float = ALPHA) -> dict:
    """What an arm's per-round deltas show: found = significant with the planted sign
    (B slower: the interval lies below 0)."""
    floor = shape_floor(deltas, alpha)
    low, high, p = rounds_interval(deltas, alpha)
    significant = bool(math.isfinite(p) and p < alpha)
    return {"rounds": floor["rounds"], "mean_pct": floor["mean_pct"], "sd_pct": floor["sd_pct"],
            "ci_low_pct": low, "ci_high_pct": high, "p_value": p,
            "found": significant and high < 0, "wrong_sign": significant and low > 0,
            "detectable_pct": floor["detectable_pct"],
            "rounds_needed": rounds_to_detect(floor["sd_pct"], plant_pct, alpha)}


def table(doc: dict) -> list[str]:
    lines = [f"{'shape':<14} {'arm':<18} {'rounds':>6} {'mean %':>8} {'sd %':>7} "
             f"{'detect %':>8} {'needed':>7}  found"]
    for shape, arms in doc["shapes"].items():
        for arm, s in arms.items():
            def num(v, spec, width):
                return ("-" if v is None else format(v, spec)).rjust(width)
            lines.append(f"{shape:<14} {arm:<18} {s['rounds']:>6} {num(s['mean_pct'], '+.3f', 8)} "
                         f"{num(s['sd_pct'], '.3f', 7)} {num(s['detectable_pct'], '.3f', 8)} "
                         f"{num(s['rounds_needed'], 'd', 7)}  "
                         + ("yes" if s["found"] else "WRONG SIGN" if s["wrong_sign"] else "no"))
    series = list(dict.fromkeys(name for arms in doc["shapes"].values() for name in arms))
    for arm in series:
        found = sum(1 for arms in doc["shapes"].values() if arms.get(arm, {}).get("found"))
        lines.append(f"{arm}: planted {doc['plant_pct']} % found on {found} of "
                     f"{len(doc['shapes'])} shapes")
    return lines


# ---- the device -------------------------------------------------------------------------------
def build(torch, name: str, n: int):
    """(function of no arguments, its inputs kept alive) for a shape of SHAPES."""
    gen = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
    if name == "mm":
        return (lambda: torch.mm(x, y)), (x, y)
    if name == "addmm":
        bias = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
        return (lambda: torch.addmm(bias, x, y)), (x, y, bias)
    raise SystemExit(f"interleave_ab: unknown op {name!r} in SHAPES (mm, addmm)")


def library():
    """flag_gems.use_gems (LIB=gems, the default where it imports), else no context."""
    if env("LIB", "gems") == "gems":
        try:
            import flag_gems
            return flag_gems.use_gems, "FlagGems " + getattr(flag_gems, "__version__", "")
        except Exception as exc:  # noqa: BLE001 - said in the output, then cuBLAS
            print(f"flag_gems not importable ({type(exc).__name__}: {exc}); torch's kernels")
    return contextlib.nullcontext, "torch"


def captured(torch, fn, calls: int, spin_cycles: int):
    """A CUDA graph of `calls` × (spin, fn): one sample."""
    for _ in range(3):
        torch.cuda._sleep(spin_cycles)
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            torch.cuda._sleep(spin_cycles)
            fn()
    torch.cuda.synchronize()
    return graph


def take(torch, graphs: dict, order, calls: int, gap_s: float | None) -> dict:
    """Samples in `order` (labels of `graphs`), ms per call; queued in batches of 16 with
    one sync each, or (gap_s not None) drained after each sample with gap_s of host time."""
    times = {label: [] for label in graphs}
    batch = 1 if gap_s is not None else 16
    for start in range(0, len(order), batch):
        pending = []
        for label in order[start:start + batch]:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            graphs[label].replay()
            end.record()
            pending.append((label, begin, end))
            if gap_s is not None:
                torch.cuda.synchronize()
                time.sleep(gap_s)
        torch.cuda.synchronize()
        for label, begin, end in pending:
            times[label].append(begin.elapsed_time(end) / calls)
    return times


def measure_arm(torch, arm: str, graphs: dict, per_sample_ms: float, calls: int,
                number: int) -> dict:
    """{series: this round's delta}: the arm's, and for turns also `<arm>_paired`."""
    window, warm = float(env("WINDOW_MS", "250")), float(env("WARMUP_MS", "30"))
    n = max(5, int(window / per_sample_ms))
    gap = float(env("GAP_US", "50")) / 1e6 if arm == "handoff" else None
    if arm.startswith("block"):
        first = "AB" if number % 2 == 0 else "BA"
        if arm == "block_hot":
            warm = float(env("HOT_MS", "1500"))
        got = {}
        for label in first:
            take(torch, graphs, [label] * max(1, int(warm / per_sample_ms)), calls, None)
            got.update({label: take(torch, graphs, [label] * n, calls, None)[label]})
        return {arm: round_delta(got["A"], got["B"])}
    take(torch, graphs, turns(max(2, int(warm / per_sample_ms))), calls, None)
    got = take(torch, graphs, turns(2 * n), calls, gap)
    return {arm: round_delta(got["A"], got["B"]), f"{arm}_paired": paired_delta(got["A"], got["B"])}


def first_latency(torch, fn) -> float:
    """ms per call of 20 eager calls, after one untimed call (autotune, compile) outside any
    graph."""
    fn()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(20):
        fn()
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) / 20


def run_shape(torch, spec: str, use, arms, rounds: int, plant_pct: float) -> dict:
    name, n = spec.split(":")
    fn, keep = build(torch, name, int(n))
    with use():
        latency_ms = first_latency(torch, fn)
        calls = max(1, round(float(env("SAMPLE_MS", "1.0")) / latency_ms))
        per_ms = get_backend("cuda").spin_cycles_per_ms(torch.cuda.current_device())
        cycles = round(plant_pct / 100 * latency_ms * per_ms)
        graphs = {"A": captured(torch, fn, calls, 0), "B": captured(torch, fn, calls, cycles)}
    deltas: dict = {}
    settle = float(env("SETTLE_S", "1.0"))
    for number in range(rounds):
        time.sleep(settle)
        for k in range(len(arms)):
            arm = arms[(number + k) % len(arms)]
            for series, value in measure_arm(torch, arm, graphs, latency_ms * calls, calls,
                                             number).items():
                deltas.setdefault(series, []).append(value)
    del keep
    return {"latency_ms": latency_ms, "calls_per_sample": calls, "spin_cycles": cycles,
            "deltas": deltas}


def main(argv: list[str]) -> int:
    out = Path(os.environ.get("OUT") or "device-out")
    out.mkdir(parents=True, exist_ok=True)
    if argv[:1] == ["--summary"]:
        print("\n".join(table(json.loads(Path(argv[1]).read_text()))))
        return 0
    import torch
    arms = [a for a in env("ARMS", " ".join(ARMS)).split() if a in ARMS]
    rounds, plant = int(env("ROUNDS", "12")), float(env("PLANT_PCT", "0.3"))
    use, lib = library()
    started = time.time()
    doc = {"lib": lib, "device": torch.cuda.get_device_name(), "arms": arms, "rounds": rounds,
           "plant_pct": plant, "shapes": {}, "raw": {}}
    for spec in env("SHAPES", "mm:2048 mm:4096 addmm:2048 addmm:4096").split():
        raw = run_shape(torch, spec, use, arms, rounds, plant)
        doc["raw"][spec] = raw
        doc["shapes"][spec] = {series: arm_summary(values, plant)
                               for series, values in raw["deltas"].items()}
        print(f"{spec}: {raw['latency_ms'] * 1e3:.1f} us, {raw['calls_per_sample']} calls per "
              f"sample, spin {raw['spin_cycles']} cycles", flush=True)
    doc["wall_s"] = round(time.time() - started, 1)
    text = "\n".join([f"{lib} on {doc['device']}, {rounds} rounds, {doc['wall_s']} s"]
                     + table(doc)) + "\n"
    (out / "interleave_ab.json").write_text(json.dumps(doc, indent=1))
    (out / "interleave_ab.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
