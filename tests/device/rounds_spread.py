"""Rounds on a GPU: does a round in one persistent process spread like a round in a fresh
process, does pacing calm a GEMM under the power cap, and does `--rounds auto` find a planted
0.3 % (device experiment; real FlagGems, `source .fg/env.sh` first; each mode ≤ 8 minutes).

    python3 tests/device/rounds_spread.py spread     # fresh processes vs in-process rounds
    python3 tests/device/rounds_spread.py pace       # mm, --pace-us on vs off
    python3 tests/device/rounds_spread.py plant      # zlh calibrate --rounds auto --plant-pct 0.3
    python3 tests/device/rounds_spread.py aa         # the same without the plant (A/A)
    python3 tests/device/rounds_spread.py fresh3     # today's: --rounds 3, fresh processes
    python3 tests/device/rounds_spread.py plant+aa   # modes joined by +: one call, the box
                                                     # shared evenly between them
    python3 tests/device/rounds_spread.py summarize ROOT|JSON...   # (CPU too) groups added up

Environment: OPS (the ops; defaults below), K (rounds per arm, spread/pace: 5), VARIANTS
(spread: in-process arms among `full noshift nosettle`, default `full`), PACE_US (pace: 1000),
BOX_S (the mode's time box, 450), TARGET_PCT / MIN_ROUNDS / MAX_ROUNDS (plant, aa: 0.15, 6,
12), ROUND_PROCESS (plant, aa: `turns`, the two sides' samples in turns; or `persistent`,
`turns-fresh`, `twins`, `auto`), SETTLE_MS (plant, aa: `--settle-ms`; default zlh's), PILOT (summarize: test
every shape again on a two-stage pilot of that many rounds), PAIRS (summarize: 0 keeps the
deltas report.json holds; by default a root with samples.json has each round in turns
given its neighbour-pair delta again, and each level-placement shape its placement-pair
delta, as zlh now derives them, and the ops where a round was paired tested again:
pair_again), BUDGET (bench budget
options of every run, default `--warmup-ms 30 --max-time-ms 250`; fresh3 takes FRESH3_BUDGET
instead, with the same default, so that a BUDGET exported for plant / aa leaves the three
fresh rounds at the budget every set measured them with), COMMON (the rest: bfloat16, core, an isolated
tuner DB), WORK (scratch, default a temp dir). Output:
$OUT/rounds_spread.txt (the table), $OUT/<mode>.json (the numbers), and for plant / aa /
fresh3 the root's report.json, calibration.json, status.tsv and plan.json in
$OUT/<mode>_root/ (what `summarize` reads).

plant / aa / fresh3 run one group of ops per call (ACCEPT_GROUPS below, e.g.
`OPS="mm addmm" bash tests/device/rounds_spread.sh plant`); a box that ends mid-op stops
the calibration with SIGTERM 30 s before its end and rescores the root (`zlh ab --rescore`),
so the op cut short counts with the rounds it finished (`stopped_by: interrupted`);
`summarize ROOT…` adds groups up.

spread: one record run of OPS, then K rounds of each arm interleaved (fresh k, in-process k,
fresh k+1, …) so that a drift of the card falls on both: an arm's round is every op once.
Fresh: one `zlh bench OPS --replay` process. In-process: one worker (harness.corpus.worker,
started by supervisor.Worker) runs the op jobs; `full` re-randomises as `zlh ab
--round-process persistent` does (settle gap, allocator cache emptied, a seeded random-size
allocation before the inputs); `noshift` without the allocation; `nosettle` without the gap.
Per shape: sd of 100·ln(median) over the K rounds in each arm, the variance ratio in/fresh
with its 95 % F interval; per op the ratio pooled over its shapes ≥ 20 µs (degrees of freedom
summed). The decision rule: in-process rounds are honest for an op when its pooled ratio's 95 %
interval reaches 1 (upper end ≥ 1: the in-process spread is not demonstrably smaller than the
fresh one) and the pooled ratio is ≥ 0.5.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.ab.compare import paired_round_delta, took_turns  # noqa: E402
from harness.ab.family import decide  # noqa: E402
from harness.ab.report import load_report  # noqa: E402
from harness.measure import sequential, stats  # noqa: E402
from harness.measure.measurement import IQM, MEDIAN  # noqa: E402
from harness.store.rundir import safe_name  # noqa: E402
from harness.corpus.rounds import RUN_LINE, SETTLE_S, SHIFT_MAX_BYTES  # noqa: E402
from harness.corpus.supervisor import Lane, Worker  # noqa: E402
from harness.run.options import BenchOptions  # noqa: E402
from harness.run.plant_landing import CHECK_BAND  # noqa: E402
from harness.store.reader import load_run  # noqa: E402
from harness.store.results import SUCCESS  # noqa: E402

SPREAD_OPS = "fused_add_rms_norm softmax mm einsum_bmm:einsum sum"
# Five groups of the acceptance ops, one device call each (OPS="…"): every family, autotuned BLAS
# included. ACCEPT_OPS (all of them) is the default of a call given no OPS.
ACCEPT_GROUPS = ("mm addmm", "bmm einsum_bmm:einsum", "fused_add_rms_norm layer_norm softmax",
                 "sum cumsum", "gelu add")
ACCEPT_OPS = " ".join(ACCEPT_GROUPS)
MIN_MS = 0.02
COMMON = (os.environ.get("COMMON") or
          "--dtypes bfloat16 --level core --isolate-tuner-cache").split()


def env(name: str, default: str) -> str:
    return os.environ.get(name) or default


# ---- analysis (pure: tested on the CPU) -------------------------------------------------------
def log_sd(values) -> float | None:
    """sd (ddof 1) of 100 · ln(value): a relative spread in % of a shape's per-round medians."""
    v = np.array([x for x in values if x and x > 0], dtype=float)
    return float((100 * np.log(v)).std(ddof=1)) if v.size >= 2 else None


def f_interval(ratio: float, df1: int, df2: int, level: float = 0.95, sims: int = 200_000,
               seed: int = 0) -> tuple[float, float]:
    """The interval of a true variance ratio given an observed one on (df1, df2) degrees of
    freedom: ratio / F(1 - a/2), ratio / F(a/2), the F quantiles by simulation."""
    rng = np.random.default_rng(seed)
    f = (rng.chisquare(df1, sims) / df1) / (rng.chisquare(df2, sims) / df2)
    low_q, high_q = np.quantile(f, [(1 - level) / 2, (1 + level) / 2])
    return float(ratio / high_q), float(ratio / low_q)


def spread_rows(fresh: dict, inproc: dict, min_ms: float = MIN_MS) -> list[dict]:
    """Per shape (key: (op, variant, dtype, shape, occurrence) -> per-round ms in each arm)."""
    rows = []
    for key in sorted(set(fresh) & set(inproc)):
        a, b = fresh[key], inproc[key]
        sd_f, sd_i = log_sd(a), log_sd(b)
        row = {"op": key[0], "shape": key[3], "ms": float(np.median(a)), "sd_fresh": sd_f,
               "sd_in": sd_i, "df_fresh": len(a) - 1, "df_in": len(b) - 1,
               "shift_pct": 100 * (np.median(b) / np.median(a) - 1), "ratio": None}
        if sd_f and sd_i is not None:
            row["ratio"] = sd_i ** 2 / sd_f ** 2
            row["low"], row["high"] = f_interval(row["ratio"], row["df_in"], row["df_fresh"])
        row["counted"] = row["ms"] >= min_ms
        rows.append(row)
    return rows


def pooled(rows: list[dict]) -> dict:
    """Per op over its shapes ≥ 20 µs: pooled variances, their ratio, the F interval and the
    decision."""
    out = {}
    for op in dict.fromkeys(r["op"] for r in rows):
        mine = [r for r in rows if r["op"] == op and r["counted"] and r["sd_fresh"]
                and r["sd_in"] is not None]
        if not mine:
            continue
        df_f, df_i = sum(r["df_fresh"] for r in mine), sum(r["df_in"] for r in mine)
        var_f = sum(r["df_fresh"] * r["sd_fresh"] ** 2 for r in mine) / df_f
        var_i = sum(r["df_in"] * r["sd_in"] ** 2 for r in mine) / df_i
        ratio = var_i / var_f
        low, high = f_interval(ratio, df_i, df_f)
        out[op] = {"shapes": len(mine), "ratio": ratio, "low": low, "high": high,
                   "df": [df_i, df_f], "honest": high >= 1.0 and ratio >= 0.5}
    return out


def spread_text(rows: list[dict], ops: dict, title: str) -> list[str]:
    def n(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else "-"
    lines = [f"== {title}", f"{'op':20} {'shape':24} {'ms':>9} {'sd fresh %':>10} "
             f"{'sd in %':>9} {'ratio':>7} {'95% F interval':>18} {'shift %':>8}"]
    for r in rows:
        lines.append(f"{r['op']:20} {r['shape'][:24]:24} {n(r['ms'], '.5f'):>9} "
                     f"{n(r['sd_fresh'], '.3f'):>10} {n(r['sd_in'], '.3f'):>9} "
                     f"{n(r['ratio'], '.2f'):>7} "
                     f"[{n(r.get('low'), '.2f')}, {n(r.get('high'), '.2f')}]".rjust(18)
                     + f" {n(r['shift_pct'], '+.3f'):>8}" + ("" if r["counted"] else " (<20us)"))
    for op, p in ops.items():
        lines.append(f"{op}: pooled over {p['shapes']} shapes >= 20 us: var in/fresh "
                     f"{p['ratio']:.2f} [{p['low']:.2f}, {p['high']:.2f}] (df {p['df'][0]}/"
                     f"{p['df'][1]}) -> {'in-process rounds honest' if p['honest'] else 'NOT honest'}")
    return lines


def pace_lines(rows: list[dict]) -> list[str]:
    """Per shape ≥ 20 µs the pacing decision: it helps when the 95 % interval of var on/off
    lies below 1, and it leaves the median alone when |shift| ≤ 2 standard errors of the
    difference of the two arms' mean log medians."""
    lines = []
    for r in rows:
        if not r["counted"] or r["ratio"] is None or not r["sd_fresh"]:
            continue
        se = math.sqrt(r["sd_fresh"] ** 2 / (r["df_fresh"] + 1) + r["sd_in"] ** 2 /
                       (r["df_in"] + 1))
        helps, unbiased = r["high"] < 1.0, abs(r["shift_pct"]) <= 2 * se
        lines.append(f"{r['op']} {r['shape']}: sd off {r['sd_fresh']:.3f} % on "
                     f"{r['sd_in']:.3f} %, var ratio {r['ratio']:.2f} [{r['low']:.2f}, "
                     f"{r['high']:.2f}], median shift {r['shift_pct']:+.3f} % (2 se "
                     f"{2 * se:.3f} %) -> " + ("adopt pacing" if helps and unbiased else
                                               "keep pacing off") +
                     f" ({'lower sd' if helps else 'sd not lower'}, "
                     f"{'median unbiased' if unbiased else 'median shifted'})")
    return lines


def repilot(reports, pilot: int) -> None:
    """Every row tested again under the two-stage design with a pilot of `pilot` rounds (its
    interval, p-value and verdict, Holm over its op); decide() then applies Holm over the
    root. The rounds run stay the ones the root's own pilot chose: for ops that ran to the
    cap, a longer pilot would have chosen the same."""
    for report in reports:
        rows = [row for row in report.rows if (row.rounds or {}).get("deltas_pct")]
        retest(rows, sequential.two_stage_stats([row.rounds["deltas_pct"] for row in rows],
                                                pilot))


def retest(rows, tests) -> None:
    """Each row's interval, p-value and verdict from its test again (decide() then applies
    Holm over the root and sets the direction)."""
    for row, stat in zip(rows, tests):
        row.delta_pct, row.ci_low_pct, row.ci_high_pct = (stat.delta_pct, stat.ci_low_pct,
                                                          stat.ci_high_pct)
        row.p_value, row.significant = stat.p_value, stat.significant


def pair_again(reports, samples: dict) -> int:
    """Each row's per-round deltas derived again from the root's samples.json as zlh derives
    them now (ab.compare): a round whose two sides took turns throughout gets the median of
    its neighbour pairs (measure.paired); a shape both sides timed on as many level
    placements (samples.json's `levels`), where no neighbour pair gave one, the median of its
    placement pairs; any other keeps the delta report.json holds (the ratio of medians); then,
    in an op where some round was paired, every row is tested again under its op's design
    (two-stage on the op's pilot, else the fixed rounds' t test); an op with none keeps its
    stored verdicts. Returns the rounds paired anew."""
    key_of = within_module()._key             # samples.json's key of a shape
    paired_now = 0
    for report in reports:
        before = paired_now
        runs = samples.get(safe_name(report.op)) or {}
        design = report.summary.get("rounds_design") or {}
        rows = [row for row in report.rows if (row.rounds or {}).get("deltas_pct")]
        for row in rows:
            key = key_of({**vars(row), "op": report.op})
            deltas = list(row.rounds["deltas_pct"])
            for n in range(1, len(deltas) + 1):
                a, b = runs.get(f"r{n}_A") or {}, runs.get(f"r{n}_B") or {}
                got = _round_pairs(a, b, key)
                if got is not None:
                    deltas[n - 1], paired_now = got, paired_now + 1
            row.rounds["deltas_pct"] = deltas
        if paired_now == before:
            continue
        deltas = [r.rounds["deltas_pct"] for r in rows]
        retest(rows, sequential.two_stage_stats(deltas, int(design.get("min_rounds") or 2))
               if design.get("design") == "two-stage" else stats.rounds_stats(deltas))
    return paired_now


def _round_pairs(a: dict, b: dict, key: str) -> float | None:
    """One round's delta of shape `key` from pairs as zlh derives it
    (ab.compare.paired_round_delta), from the two sides' samples.json entries; None where
    nothing pairs."""
    turned = took_turns(a.get("turns")) and took_turns(b.get("turns"))
    return paired_round_delta(_as_measured(a, key), _as_measured(b, key), turned)[0]


def _as_measured(run: dict, key: str) -> SimpleNamespace:
    """A side's samples.json entry for shape `key` as paired_round_delta reads a measurement:
    its samples, and its level placements' medians where it was timed on them."""
    levels = (run.get("levels") or {}).get(key)
    return SimpleNamespace(samples_ms=(run.get("shapes") or {}).get(key),
                           repeats=tuple(levels or ()), center=IQM if levels else MEDIAN)


def within_module():
    """tests/device/rounds_within.py, imported from beside this script."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import rounds_within
    return rounds_within


def is_planted(root: Path) -> bool:
    """Whether a calibrate root planted a change on side B (its plan.json)."""
    plan = json.loads((Path(root) / "plan.json").read_text())
    return bool(((plan.get("B") or {}).get("options") or {}).get("plant_pct"))


def counted_elsewhere(roots: list[Path]) -> dict[str, dict[str, str]]:
    """Ops that ran in more than one of `roots` of one kind, planted or A/A (a box that cut an
    op, the op run again in a later call): each counts once, from the root where it ran the
    most rounds (the later root on a tie). {root: {op: the root that counts it}} for the
    roots that leave an op out."""
    ran = [(str(root), is_planted(root), report.op, int(report.summary.get("rounds") or 0),
            order) for order, root in enumerate(roots) for report in load_report(root)[1]]
    best = {}                        # (planted, op) -> (rounds, order, root) of the keeper
    for root, planted, op, rounds, order in ran:
        entry = (rounds, order, root)
        best[planted, op] = max(best.get((planted, op), entry), entry)
    out: dict[str, dict[str, str]] = {}
    for root, planted, op, _, _ in ran:
        keeper = best[planted, op][2]
        if keeper != root:
            out.setdefault(root, {})[op] = keeper
    return out


def summarize_root(root: Path, planted: bool, min_ms: float = MIN_MS,
                   pilot: int | None = None, elsewhere: dict[str, str] | None = None) -> dict:
    """The acceptance numbers of a `zlh calibrate` root (from report.json, rewritten after every
    op, so a root whose box ended still counts the ops it finished), its verdicts decided as
    zlh decides them now (Holm over every shape of the root; `significant_stored`: as the
    report had them; with `pilot`, tested again on that pilot: repilot), and each shape's sd
    over its rounds (`round_sd`: round_sd_lines). `elsewhere`: {op: root} of ops another root
    counts (counted_elsewhere), decided with the root's shapes and then left out here; the
    root's wall then loses their runs' time (status.tsv)."""
    elsewhere = elsewhere or {}
    doc, reports = load_report(root)
    kept = Path(root) / "samples.json"
    paired = (pair_again(reports, json.loads(kept.read_text()))
              if kept.is_file() and os.environ.get("PAIRS", "1") != "0" else None)
    if pilot:
        repilot(reports, pilot)
    decide(reports)                  # the root's family, as `zlh ab --rescore` would
    reports = [r for r in reports if r.op not in elsewhere]
    doc = dict(doc, ops=[op for op in doc.get("ops", []) if op.get("op") not in elsewhere])
    stored = sum(1 for op in doc.get("ops", []) for row in op.get("rows", [])
                 if row.get("significant"))
    shapes = [dict(vars(row), op=report.op, rounds_run=report.summary.get("rounds"))
              for report in reports for row in report.rows]
    big = [s for s in shapes if (s.get("a_ms") or 0) >= min_ms]
    out = {"root": str(root), "ops": len(reports), "shapes": len(shapes),
           "shapes_20us": len(big), "significant_stored": stored,
           "significant": sum(1 for s in shapes if s.get("significant")),
           "rounds": sorted({s["rounds_run"] for s in shapes if s.get("rounds_run")}),
           "wall_s": status_wall(Path(root)),
           "round_sd": round_sd_lines(shapes, min_ms), "counted_elsewhere": elsewhere,
           "rounds_paired_again": paired,
           "op_spans": {op: span for op, span in op_spans(Path(root)).items()
                        if op not in elsewhere}}
    cal = Path(root) / "calibration.json"
    calibration = json.loads(cal.read_text()) if cal.is_file() else {}
    out["wall_s"] = calibration.get("wall_s") or out["wall_s"]
    if elsewhere and out["wall_s"] is not None:
        out["wall_s"] = round(out["wall_s"] - (status_wall(Path(root), set(elsewhere)) or 0), 1)
    if planted:
        over = over_landed(calibration)
        counted = [s for s in big if _case(s) not in over]
        out["over_landed_20us"] = len(big) - len(counted)
        out["shapes_20us"] = len(counted)
        out["found_20us"] = sum(1 for s in counted
                                if s.get("significant") and s.get("direction") == -1)
        out["wrong_sign"] = sum(1 for s in shapes if s.get("significant") and s.get("direction") == 1)
        out["rate_20us"] = out["found_20us"] / len(counted) if counted else None
    else:
        deltas = [abs(s["delta_pct"]) for s in big if s.get("delta_pct") is not None]
        out["abs_delta_median_20us"] = float(np.median(deltas)) if deltas else None
        out["abs_delta_max_20us"] = max(deltas) if deltas else None
        out["abs_deltas_20us"] = deltas
    return out


def _case(shape: dict) -> tuple:
    return (shape.get("variant"), shape.get("dtype"), shape.get("shape_detail"),
            shape.get("occurrence", 0))


def over_landed(calibration: dict) -> set[tuple]:
    """The cases whose plant the record's probe measured to land more than CHECK_BAND's upper
    bound times the asked size (`sized_by: landing`): not a plant of that size, so neither found
    nor missed at it (a probe made before its check was added could pass so)."""
    return {_case(s) for op in calibration.get("ops") or [] for s in op.get("shapes") or []
            if s.get("plant_sized_by") == "landing" and s.get("landed_pct") is not None
            and s.get("planted_pct") and s["landed_pct"] > CHECK_BAND[1] * s["planted_pct"]}


def status_rows(root: Path) -> tuple[list[str], list[list[str]]]:
    """status.tsv's header and rows, each split into its cells; ([], []) without the file."""
    path = root / "status.tsv"
    if not path.is_file():
        return [], []
    lines = path.read_text().splitlines()
    return lines[0].split("\t"), [ln.split("\t") for ln in lines[1:]]


def status_wall(root: Path, only: set[str] | None = None) -> float | None:
    """The sum of the runs' elapsed_s in status.tsv (what the rounds themselves took); with
    `only`, of those ops' runs alone."""
    head, rows = status_rows(root)
    if not head:
        return None
    col, op = head.index("elapsed_s"), head.index("op")
    return round(sum(float(r[col]) for r in rows if only is None or r[op] in only), 1)


def op_spans(root: Path) -> dict[str, float]:
    """Per op of status.tsv, the wall from its first run's start to its last run's end: a
    run's start is the timestamp its run directory is named by (`<op>_YYYYmmdd-HHMMSS`, to
    the second), its end that start plus its elapsed_s. Runs of both sides at once (twins,
    turns) count once, unlike status_wall's sum. Ops with no named run are left out."""
    head, rows = status_rows(root)
    if "run_dir" not in head:
        return {}
    col, op_col, dir_col = head.index("elapsed_s"), head.index("op"), head.index("run_dir")
    bounds: dict[str, list[float]] = {}
    for cells in rows:
        stamp = re.search(r"_(\d{8}-\d{6})(?:-\d+)?$", cells[dir_col])
        if not stamp:
            continue
        start = time.mktime(time.strptime(stamp.group(1), "%Y%m%d-%H%M%S"))
        low, high = bounds.setdefault(cells[op_col], [math.inf, -math.inf])
        bounds[cells[op_col]] = [min(low, start), max(high, start + float(cells[col]))]
    return {op: round(high - low, 1) for op, (low, high) in bounds.items()}


# ---- running ----------------------------------------------------------------------------------
class Box:
    def __init__(self, seconds: float):
        self.end = time.time() + seconds

    def left(self) -> float:
        return self.end - time.time()


def bench(ops, out: Path, extra, timeout: float) -> int:
    cmd = [sys.executable, "-m", "harness", "bench", *ops, *COMMON, *extra, "--out", str(out)]
    with open(out.parent / f"{out.name}.log", "w") as log:
        try:
            return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                  timeout=max(timeout, 1)).returncode
        except subprocess.TimeoutExpired:
            return 124


def log_tail(out: Path, lines: int = 5) -> list[str]:
    """The last lines of a `bench` call's log (why it failed)."""
    log = out.parent / f"{out.name}.log"
    text = log.read_text(errors="replace").splitlines() if log.is_file() else ["(no log)"]
    return [f"  {line}" for line in text[-lines:]]


def medians(folder: Path) -> dict:
    """(op, variant, dtype, shape, occurrence) -> gems ms of every run directory under folder."""
    out = {}
    for run_json in sorted(folder.rglob("run.json")):
        try:
            run = load_run(run_json.parent)
        except Exception:  # noqa: BLE001 - a broken run is left out, the table says fewer
            continue
        for r in run.rows:
            if r.status == SUCCESS and r.gems_ms:
                out[(run.op, r.variant, r.dtype, r.shape_detail, r.occurrence)] = r.gems_ms
    return out


def worker_round(worker: Worker, ops, out: Path, extra, rec: Path, seed: int, shift: bool,
                 settle: float, timeout: float) -> None:
    time.sleep(settle)
    for op in ops:
        opts = BenchOptions.from_argv([*COMMON, *extra, "--replay", str(rec), "--out", str(out)])
        job = {"op": op, "args": opts.to_argv(), "log": str(out / f"{op}.log"),
               "argv": ["zlh", "bench", op]}
        if shift:
            job["round"] = {"seed": seed, "shift_max_bytes": SHIFT_MAX_BYTES}
        out.mkdir(parents=True, exist_ok=True)
        worker.run(job, timeout, out / f"{op}.log", out)


def collect(rounds: list[Path]) -> dict:
    table: dict = {}
    for folder in rounds:
        for key, ms in medians(folder).items():
            table.setdefault(key, []).append(ms)
    return table


def spread(work: Path, box: Box, out: Path) -> list[str]:
    ops, k = env("OPS", SPREAD_OPS).split(), int(env("K", "5"))
    budget = env("BUDGET", "--warmup-ms 50 --max-time-ms 300").split()
    variants = env("VARIANTS", "full").split()
    rec = work / "record"
    rc = bench(ops, rec, budget, min(200, box.left()))
    lines = [f"record rc={rc} ({', '.join(ops)}; {' '.join(budget)})"]
    if rc not in (0, 1):                 # 1: some case failed, the others are recorded
        return lines + log_tail(rec)
    workers = {v: Worker(Lane(), work / f"worker_{v}.log") for v in variants}
    fresh_dirs, in_dirs = [], {v: [] for v in variants}
    for number in range(k):
        if box.left() < 60:
            lines.append(f"box ended after {number} rounds")
            break
        started = time.time()
        fresh_dirs.append(work / f"fresh{number}")
        bench(ops, fresh_dirs[-1], [*budget, "--replay", str(rec)], box.left())
        walls = [f"fresh {time.time() - started:.1f}s"]
        for v, worker in workers.items():
            started = time.time()
            in_dirs[v].append(work / f"in_{v}{number}")
            worker_round(worker, ops, in_dirs[v][-1], budget, rec, 1000 + number,
                         shift=v != "noshift", settle=0.0 if v == "nosettle" else SETTLE_S,
                         timeout=box.left())
            walls.append(f"{v} {time.time() - started:.1f}s")
        lines.append(f"round {number + 1}: " + ", ".join(walls))
    for worker in workers.values():
        worker.stop()
    fresh = collect(fresh_dirs)
    numbers = {}
    for v, dirs in in_dirs.items():
        rows = spread_rows(fresh, collect(dirs))
        ops_pooled = pooled(rows)
        lines += spread_text(rows, ops_pooled, f"fresh processes vs in-process rounds ({v}), "
                                              f"K={len(dirs)}")
        numbers[v] = {"rows": rows, "pooled": ops_pooled}
    (out / "spread.json").write_text(json.dumps(numbers, indent=1, default=str))
    return lines


def pace(work: Path, box: Box, out: Path) -> list[str]:
    ops, k = env("OPS", "mm").split(), int(env("K", "5"))
    pace_us = env("PACE_US", "1000")
    budget = env("BUDGET", "").split()
    rec = work / "record"
    rc = bench(ops, rec, budget, min(200, box.left()))
    worker = Worker(Lane(), work / "worker_pace.log")
    arms = {"off": [], "on": []}
    for number in range(k):
        for arm in (("off", "on") if number % 2 == 0 else ("on", "off")):
            if box.left() < 30:
                break
            extra = [*budget] + (["--pace-us", pace_us] if arm == "on" else [])
            arms[arm].append(work / f"pace_{arm}{number}")
            worker_round(worker, ops, arms[arm][-1], extra, rec, 2000 + number, True,
                         SETTLE_S, box.left())
    worker.stop()
    rows = spread_rows(collect(arms["off"]), collect(arms["on"]))
    lines = [f"record rc={rc}; pace {pace_us} us; K={len(arms['on'])} rounds per arm (ABBA)"]
    lines += spread_text(rows, {}, "pace off (\"sd fresh\" column) vs on (\"sd in\" column); "
                                   "ratio = var on / off; shift % = median on / off - 1")
    lines += pace_lines(rows)
    (out / "pace.json").write_text(json.dumps(rows, indent=1, default=str))
    return lines


STOP_S = 30          # what a box keeps for stopping a calibration and rescoring its rounds


def run_boxed(cmd, log, seconds: float) -> int:
    """Run `cmd` for at most `seconds`, then stop it as a user would (SIGTERM: zlh ends its
    runs and keeps the rounds that finished; SIGKILL 10 s later): 124 when it was stopped."""
    child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        return child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        return 124


def calibrate(work: Path, box: Box, out: Path, mode: str) -> list[str]:
    ops = env("OPS", ACCEPT_OPS).split()
    today = "--warmup-ms 30 --max-time-ms 250"     # what every set's fresh3 ran at
    budget = (env("FRESH3_BUDGET", today) if mode == "fresh3" else env("BUDGET", today)).split()
    root = work / mode
    if mode == "fresh3":
        rounds = ["--rounds", "3"]
    else:
        rounds = ["--rounds", "auto", "--target-pct", env("TARGET_PCT", "0.15"),
                  "--min-rounds", env("MIN_ROUNDS", "6"), "--max-rounds",
                  env("MAX_ROUNDS", "12"), "--round-process", env("ROUND_PROCESS", "turns")]
        if os.environ.get("SETTLE_MS"):
            rounds += ["--settle-ms", os.environ["SETTLE_MS"]]
    plant = [] if mode == "aa" else ["--plant-pct", "0.3"]
    cmd = [sys.executable, "-m", "harness", "calibrate", *ops, *COMMON, *budget, *rounds,
           *plant, "--root", str(root), "-q"]
    started = time.time()
    with open(out / f"{mode}.log", "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        rc = run_boxed(cmd, log, max(box.left() - STOP_S, 1))
        if rc == 124 and (root / "plan.json").is_file():
            rescore = [sys.executable, "-m", "harness", "ab", "--rescore", str(root)]
            log.write("box ended: " + " ".join(rescore[3:]) + "\n")
            log.flush()
            run_boxed(rescore, log, max(box.left() - 5, 1))
    wall = time.time() - started
    lines = [f"{mode}: rc={rc}, wall {wall:.0f} s: {' '.join(cmd[3:])}"]
    kept = out / f"{mode}_root"                 # what summarize reads, back with $OUT
    kept.mkdir(exist_ok=True)
    for name in ("report.json", "calibration.json", "status.tsv", "plan.json"):
        if (root / name).is_file():
            shutil.copyfile(root / name, kept / name)
    keep_records(root, kept)
    samples = None
    if root.is_dir():                           # every sample, for rounds_within.py
        lines += phase_lines(root)
        rounds_within = within_module()
        samples = rounds_within.export(root)
        (kept / "samples.json").write_text(json.dumps(samples))
    if (root / "report.json").is_file():
        numbers = summarize_root(root, planted=mode != "aa")
        numbers["command_wall_s"] = round(wall, 1)
        lines += summary_lines(numbers)
        (out / f"{mode}.json").write_text(json.dumps(numbers, indent=1))
    if samples is not None:                     # last: its bootstraps take seconds
        lines += within_lines(rounds_within, samples)
    return lines


RECORD_FILES = ("results.jsonl", "autotune/records.json", "ttgir/index.tsv")


def keep_records(root: Path, kept: Path) -> None:
    """Each op's record (round 0, the run every replay pins to): its rows, the configs it
    tuned and its kernels' index, under kept/records/OP/SIDE/, so that two records of one op
    (a plant's and an A/A's) can be compared after the call."""
    for run in sorted(root.glob("*/r0_*/*/")):
        for name in RECORD_FILES:
            if (run / name).is_file():
                target = kept / "records" / run.parent.parent.name / run.parent.name / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(run / name, target)


def within_lines(rounds_within, samples: dict, min_ms: float = MIN_MS) -> list[str]:
    """rounds_within.py's table for the shapes >= 20 us (where each round's spread comes
    from: its samples, a level per run (`agree`), the placements), printed with the call."""
    rows = [r for r in rounds_within.analyse(samples) if r["ms"] >= min_ms]
    return rounds_within.table(rows) if rows else []


def round_sd_lines(shapes: list[dict], min_ms: float = MIN_MS) -> list[str]:
    """Per shape >= min_ms (rows as summarize_root decided them, each with its `op`): the sd
    of its per-round deltas over all its rounds (`rounds.deltas_pct`; `rounds.sd_pct` is a
    pilot's), and whether it was called."""
    lines = []
    for row in shapes:
        deltas = (row.get("rounds") or {}).get("deltas_pct") or []
        if (row.get("a_ms") or 0) < min_ms or len(deltas) < 2:
            continue
        delta = row.get("delta_pct")
        lines.append(f"{row['op']} {row.get('shape_detail')}: {1000 * row['a_ms']:.1f} us, "
                     f"{len(deltas)} rounds, sd {np.std(deltas, ddof=1):.3f} %, delta "
                     + ("-" if delta is None else f"{delta:+.3f} %")
                     + (", significant" if row.get("significant") else ""))
    return lines


def new_memory_lines(root: Path) -> list[str]:
    """Per op, from its replayed runs' results: how many placements took new memory
    (`--placement-memory new`: extra.placements_new_memory) of how many could have, and how
    many moved made-once inputs by a copy (extra.placements_copied) or could not
    (placements_not_moved)."""
    lines = []
    for op_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        took = could = copied = stayed = 0
        for results in sorted(op_dir.glob("r*_*/*/results.jsonl")):
            info = results.parent / "run.json"
            placed = ((json.loads(info.read_text()).get("caliber") or {}).get("placements")
                      if info.is_file() else None) or 1
            for line in results.read_text().splitlines():
                extra = json.loads(line).get("extra") or {}
                copied += extra.get("placements_copied", 0)
                stayed += extra.get("placements_not_moved", 0)
                if "placements_new_memory" in extra:
                    took += extra["placements_new_memory"]
                    could += placed - 1
        if could:
            lines.append(f"{op_dir.name}: {took} of {could} later placements in new memory")
        if copied or stayed:
            lines.append(f"{op_dir.name}: {copied} later placements moved the adapter's "
                         f"made-once inputs by a copy, {stayed} could not (no room)")
    return lines


def phase_lines(root: Path) -> list[str]:
    """Per op, the median of where a replayed round's run spent its time (run.json's wall_s,
    inputs_s, compile_s, measure_s): what a round costs besides its samples."""
    names, lines = ("wall_s", "inputs_s", "compile_s", "measure_s"), []
    for op_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        infos = [json.loads(f.read_text()) for f in sorted(op_dir.glob("r*_*/*/run.json"))]
        infos = [i for i in infos if i.get("autotune_mode") == "replay"]
        if infos:
            lines.append(f"{op_dir.name}: {len(infos)} replayed runs, median " + ", ".join(
                f"{n} {np.median([float(i.get(n) or 0) for i in infos]):.2f}" for n in names))
    return (lines + job_lines(root) + round_lines(root) + new_memory_lines(root)
            + level_lines(root))


def level_lines(root: Path) -> list[str]:
    """Per op, its record's level probe (round 0's results, `--level-placements`): each case
    flagged (latency, the probe's spread, its level placements), how many stayed under the
    spread and their largest, and how many the floor left unprobed (`--level-min-us`)."""
    lines = []
    for op_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        flagged, calm, unprobed = [], [], 0
        for results in sorted(op_dir.glob("r0_*/*/results.jsonl")):
            for line in results.read_text().splitlines():
                row = json.loads(line)
                extra, gems = row.get("extra") or {}, row.get("gems") or {}
                spread = extra.get("level_spread_pct")
                if spread is None:
                    unprobed += 1
                elif extra.get("level_placements"):
                    us = 1000 * (gems.get("median_ms") or 0)
                    flagged.append(f"{row.get('shape_detail')} {us:.1f} us {spread:.2f} % "
                                   f"({extra['level_placements']} placements)")
                else:
                    calm.append(spread)
        if flagged or calm:
            lines.append(f"{op_dir.name}: record's level probe: flagged "
                         + ("; ".join(flagged) or "none") + f"; {len(calm)} under the spread"
                         + (f" (at most {max(calm):.2f} %)" if calm else "")
                         + f"; {unprobed} not probed")
    return lines


RUN_TAG = re.compile("^" + re.escape(RUN_LINE).replace(re.escape("{}"), r"\S+"))
RUN_RE = re.compile(r"(?P<op>\S+) round (?P<n>\d+) side (?P<side>\S+): asked (?P<asked>[\d.]+), "
                    r"spare ready (?P<wait>[\d.]+) s later, run ended (?P<ended>[\d.]+), "
                    r"stopped in (?P<stop>[\d.]+) s(?:, spares (?P<spares>\d+))?$")


def round_lines(root: Path) -> list[str]:
    """Per op, from the run lines of the workers' logs (`zlh turns-fresh run:`, `zlh twins
    run:`):
    the median round period (one ask to the next), the wait for a ready spare, the run
    (asked to ended), the stop, the gap from the later side's stop to the next round, and the
    spares each side kept after its last run."""
    runs: dict = {}
    for log in sorted(Path(root).glob("worker_*.log")):
        for line in log.read_text(errors="replace").splitlines():
            tag = RUN_TAG.match(line)
            got = RUN_RE.match(line[tag.end():].strip()) if tag else None
            if got:
                runs.setdefault(got["op"], {}).setdefault(int(got["n"]), []).append(
                    (float(got["asked"]), float(got["wait"]), float(got["ended"]),
                     float(got["stop"]), got["spares"], got["side"]))
    lines = []
    for op, rounds in runs.items():
        numbers = sorted(n for n in rounds if n > 0)
        every = [r for n in numbers for r in rounds[n]]
        if not every:
            continue
        asks = [min(r[0] for r in rounds[n]) for n in numbers]
        done = [max(r[2] + r[3] for r in rounds[n]) for n in numbers]
        period = np.diff(asks) if len(asks) > 1 else [0.0]
        gap = [a - d for a, d in zip(asks[1:], done[:-1])] or [0.0]
        last = {r[5]: r[4] for r in sorted(every) if r[4] is not None}
        # one side after the other (twins): from the first run's stop to the second's ask
        after = [b[0] - (a[2] + a[3]) for a, b in
                 (sorted(rounds[n])[:2] for n in numbers if len(rounds[n]) == 2)]
        twins = (f", second side asked {np.median(after):.2f} s after the first stopped"
                 if after and min(after) >= 0 else "")
        lines.append(f"{op}: {len(numbers)} rounds, median period {np.median(period):.2f} s: "
                     f"spare wait {np.median([r[1] for r in every]):.2f} s, run "
                     f"{np.median([r[2] - r[0] for r in every]):.2f} s, stop "
                     f"{np.median([r[3] for r in every]):.2f} s, between rounds "
                     f"{np.median(gap):.2f} s" + twins + (", spares at the end " + ", ".join(
                         f"{side} {n}" for side, n in sorted(last.items())) if last else ""))
    return lines


def job_lines(root: Path) -> list[str]:
    """Per op, the median of a worker job's stretches (the workers' `zlh job OP: set up …
    s, bench … s, turns ended … s, reset … s` lines): what a round's job spends outside
    the run's own wall_s."""
    stretches: dict = {}
    for log in sorted(Path(root).glob("worker_*.log")):
        for line in log.read_text(errors="replace").splitlines():
            head, sep, rest = line.partition(": ")
            if not (sep and head.startswith("zlh job ")):
                continue
            for part in rest.split(", "):
                name, _, seconds = part.rpartition(" ")[0].rpartition(" ")
                with contextlib.suppress(ValueError):
                    stretches.setdefault(head[8:], {}).setdefault(name, []).append(
                        float(seconds))
    return [f"{op}: {len(next(iter(parts.values())))} jobs, median " + ", ".join(
        f"{name} {np.median(values):.2f} s" for name, values in parts.items())
        for op, parts in stretches.items()]


def summary_lines(n: dict) -> list[str]:
    lines = [f"{n['root']}: {n['ops']} ops, {n['shapes']} shapes ({n['shapes_20us']} >= 20 us), "
             f"rounds {n['rounds']}, runs' wall {n['wall_s']} s, significant {n['significant']}"
             + (f" (as stored: {n['significant_stored']})"
                if n.get("significant_stored", n["significant"]) != n["significant"] else "")]
    if n.get("rounds_paired_again"):
        lines.append(f"{n['rounds_paired_again']} shape-rounds given their paired delta "
                     f"again (neighbour samples in turns, else level placements; "
                     f"samples.json; PAIRS=0: as stored)")
    lines += [f"{op}: counted from {keeper} (more rounds there), not here"
              for op, keeper in sorted((n.get("counted_elsewhere") or {}).items())]
    if "found_20us" in n:
        rate = n["rate_20us"]
        lines.append(f"planted 0.3 % found with the right sign on {n['found_20us']}/"
                     f"{n['shapes_20us']} shapes >= 20 us"
                     + (f" ({100 * rate:.0f} %)" if rate is not None else "")
                     + f"; wrong sign {n['wrong_sign']}"
                     + (f"; left out, their plant landed over {CHECK_BAND[1]:g} times its "
                        f"size: {n['over_landed_20us']}" if n.get("over_landed_20us") else ""))
    else:
        med, top = n["abs_delta_median_20us"], n["abs_delta_max_20us"]
        lines.append(f"A/A: {n['significant']} shapes called significant; shapes >= 20 us "
                     f"|delta| median {'-' if med is None else format(med, '.3f')} % max "
                     f"{'-' if top is None else format(top, '.3f')} %")
    if n.get("op_spans"):
        lines.append("wall an op, first run's start to last run's end (to the second): "
                     + ", ".join(f"{op} {span:.1f} s" for op, span in n["op_spans"].items()))
    return lines + n.get("round_sd", [])      # (a <mode>.json of older calls has none)


def total_lines(parts: list[dict]) -> list[str]:
    """The groups added up: planted shapes found, A/A significant shapes, walls."""
    lines = []
    for planted in (True, False):
        mine = [p for p in parts if ("found_20us" in p) is planted]
        if not mine:
            continue
        wall = sum(p["wall_s"] or 0 for p in mine)
        shapes = sum(p["shapes_20us"] for p in mine)
        if planted:
            found = sum(p["found_20us"] for p in mine)
            lines.append(f"all planted roots: found {found}/{shapes} shapes >= 20 us"
                         + (f" ({100 * found / shapes:.1f} %)" if shapes else "")
                         + f", wrong sign {sum(p['wrong_sign'] for p in mine)}, runs' wall "
                           f"{wall:.0f} s"
                         + (f"; left out (plant landed over {CHECK_BAND[1]:g} times its size) "
                            f"{over}" if (over := sum(p.get("over_landed_20us") or 0
                                                      for p in mine)) else ""))
        else:
            worst = max((p["abs_delta_max_20us"] or 0 for p in mine), default=0)
            pooled = [d for p in mine for d in p.get("abs_deltas_20us") or []]
            middle = f"median {np.median(pooled):.3f} % " if pooled else ""
            lines.append(f"all A/A roots: {sum(p['significant'] for p in mine)} significant of "
                         f"{sum(p['shapes'] for p in mine)} shapes; |delta| (>= 20 us) "
                         f"{middle}max {worst:.3f} %; runs' wall {wall:.0f} s")
    return lines


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "spread"
    out = Path(os.environ.get("OUT") or "device-out")
    out.mkdir(parents=True, exist_ok=True)
    if mode == "summarize":
        lines, parts = [], []
        dirs = [Path(r) for r in argv[1:] if not Path(r).is_file()]
        elsewhere = counted_elsewhere(dirs)
        for root in argv[1:]:
            if Path(root).is_file():         # a call's $OUT/<mode>.json
                parts.append(json.loads(Path(root).read_text()))
            else:                            # a root, or a call's $OUT/<mode>_root
                planted = is_planted(Path(root))
                pilot = int(os.environ.get("PILOT") or 0) or None
                parts.append(summarize_root(Path(root), planted, pilot=pilot,
                                            elsewhere=elsewhere.get(str(Path(root)))))
            lines += summary_lines(parts[-1])
        print("\n".join(lines + total_lines(parts)))
        return 0
    work = Path(os.environ.get("WORK") or tempfile.mkdtemp(prefix="zlh-rounds-"))
    work.mkdir(parents=True, exist_ok=True)
    box = Box(float(env("BOX_S", "450")))
    started = time.time()
    modes = mode.split("+")              # e.g. plant+aa: one call, the box shared evenly
    unknown = [m for m in modes if m not in ("spread", "pace", "plant", "aa", "fresh3")]
    if unknown:
        print(f"unknown mode {unknown[0]!r}", file=sys.stderr)
        return 2
    lines = []
    for k, one in enumerate(modes):
        share = Box(box.left() / (len(modes) - k))
        if one == "spread":
            lines += spread(work, share, out)
        elif one == "pace":
            lines += pace(work, share, out)
        else:
            lines += calibrate(work, share, out, one)
    lines.append(f"{mode}: {time.time() - started:.0f} s in all; scratch {work}")
    text = "\n".join(lines) + "\n"
    with open(out / "rounds_spread.txt", "a") as handle:
        handle.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
