"""Where does a round's delta spread come from: the samples inside a round, or the round itself?
(device experiment, analysed on the CPU too).

    python3 tests/device/rounds_within.py export ROOT OUT.json   # a calibrate/ab root's samples
    python3 tests/device/rounds_within.py show OUT.json|ROOT     # the table
    python3 tests/device/rounds_within.py show OUT.json LEVELS MATCH   # an older export's
        # cases matching MATCH split into LEVELS level placements (split_levels)

`export` keeps, per op, round and side, every shape's function-under-test samples in the order
they were taken (rounds in turns: sample k of A and sample k of B were neighbours on the
device) and the run's `turns` (rounds_spread.py writes it beside a plant/aa root).

`show`, per shape over rounds 1…: `sd` the spread of the rounds' deltas (100·ln(median A /
median B), the medians the runs reported: with --placements, the median of the placements'),
`within` the spread a round's delta would have from its own samples alone (a bootstrap of each
side's samples, root mean square over the rounds), `excess` what the rounds add beyond that
(sqrt(sd² − within²), 0 when none), `paired` the spread of the paired delta (the median of
100·ln(A_k / B_k) over neighbours), the samples per side and round, and the mean delta of each
estimator, `agree` the share of a round's neighbour pairs that read the way its paired delta
does (median over the rounds: about 0.5 where a round's delta is its samples' noise, near 1
where one run read slower than the other throughout, a level each run draws of its own — more
samples cannot narrow that), and `r` the correlation over rounds of the two sides' medians
(near 1 where a round's two runs share what moves them — twins that land their data alike —,
near 0 where each draws its own), `first` how much slower a round's first run read than its
second (ABBA cancels it in the mean, not in the spread). A `within` close to `sd` says more
samples per round would narrow the rounds; a large `excess` says only more rounds will. With
--placements (each row's `repeat_medians_ms`), two more: `pl.sd` the spread of a run's
placements about their own mean (100·ln, pooled over runs and sides) — placements that differ
as runs do show `pl.sd` near `sd`/√2 of the same shape's rounds without placements — and
`mean.sd` the rounds' spread had each run taken the mean of its placements instead of their
median, `trim.sd` the same for their mean without the lowest and highest (five placements and
more), and `half.sd` for the mean of the first half of its placements only (placements that
sample independent draws read `half.sd` about √2 times `mean.sd`). With level placements (a
case's `level_placements`, harness/run/level.py), `lv.mean` and `lv.sd`: the rounds' deltas
taken from the level placements in pairs, placement j of A against placement j of B, the median
over j of 100·ln(A_j / B_j) (`level_paired`).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

BOOT = 400
MIN_MS = 0.02


def _key(row: dict) -> str:
    return "|".join([row.get("variant") or row["op"], row.get("dtype") or "",
                     row.get("shape_detail") or "", str(row.get("occurrence", 0))])


def export(root: Path) -> dict:
    """{op dir: {"r<n>_<side>": {"turns": …, "shapes": {key: samples}, "medians": …,
    "placements": {key: the placements' medians}}}} of every run under root."""
    doc: dict = {}
    for results in sorted(Path(root).glob("*/r*_*/*/results.jsonl")):
        run_dir, round_dir = results.parent, results.parent.parent
        info = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").is_file() \
            else {}
        shapes, medians, placements, levels = {}, {}, {}, {}
        placed = (info.get("caliber") or {}).get("placements") or 1
        for line in results.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            samples = (row.get("gems") or {}).get("samples_ms")
            if row.get("status") == "SUCCESS" and samples:
                shapes[_key(row)] = samples
                medians[_key(row)] = row.get("gems_ms")
                if placed > 1:            # (with --repeat alone they are the repeats')
                    placements[_key(row)] = (row.get("gems") or {}).get("repeat_medians_ms")
                elif (row.get("extra") or {}).get("level_placements"):
                    levels[_key(row)] = (row.get("gems") or {}).get("repeat_medians_ms")
        doc.setdefault(round_dir.parent.name, {})[round_dir.name] = {
            "turns": info.get("turns"), "shapes": shapes, "medians": medians,
            "placements": placements, "levels": levels}
    return doc


def split_levels(doc: dict, count: int, match: str) -> dict:
    """An export made before `levels` was kept, given them: a run's samples of each case whose
    key contains `match`, timed on `count` level placements, split into `count` equal parts in
    the order taken, each part's median a placement's (every level placement took as many
    samples in the runs this was checked on; a case whose samples do not split evenly is left
    without). Returns `doc`."""
    for runs in doc.values():
        for run in runs.values():
            levels = run.setdefault("levels", {})
            for key, samples in run["shapes"].items():
                if match in key and key not in levels and len(samples) >= 2 * count \
                        and len(samples) % count == 0:
                    parts = np.asarray(samples, dtype=float).reshape(count, -1)
                    levels[key] = [float(v) for v in np.median(parts, axis=1)]
    return doc


def _sides(runs: dict, number: int, field: str, key: str) -> list:
    """[A's, B's] `field` (shapes, medians, placements, levels) of shape `key` in round
    `number`, None for a side without it."""
    return [(runs.get(f"r{number}_{side}") or {}).get(field, {}).get(key) for side in "AB"]


def _log_ratio(a, b) -> float:
    return 100.0 * math.log(float(np.median(a)) / float(np.median(b)))


def _pair_logs(a, b) -> np.ndarray:
    """ln(A_k / B_k) over pairs taken k with k: a round's neighbour samples, or its level
    placements."""
    k = min(len(a), len(b))
    return np.log(np.asarray(a[:k]) / np.asarray(b[:k]))


def _paired(logs: np.ndarray) -> float:
    return 100.0 * float(np.median(logs))


def _agreeing(logs: np.ndarray) -> float:
    """The share of neighbour pairs (A_k, B_k) that read the way the round's paired delta
    does: about one half where a round's delta is its samples' noise, near one where one
    side's run read slower than the other's throughout (a level of its own)."""
    middle = float(np.median(logs))
    return float(np.mean(np.sign(logs) == np.sign(middle))) if middle else 0.5


def _boot_sd(a, b, rng) -> float:
    a, b = np.asarray(a), np.asarray(b)
    draws = [_log_ratio(rng.choice(a, a.size), rng.choice(b, b.size)) for _ in range(BOOT)]
    return float(np.std(draws, ddof=1))


def placement_spread(runs: dict, numbers, key: str) -> dict:
    """`pl_sd`, `mean_sd`, `trim_sd` and `half_sd` (see the module's doc) of one shape, or {}
    without placements."""
    spread, deltas, trimmed, halves = [], [], [], []
    for n in numbers:
        got = _sides(runs, n, "placements", key)
        if not all(medians and len(medians) > 1 for medians in got):
            continue
        for medians in got:
            logs = 100.0 * np.log(np.asarray(medians, dtype=float))
            spread.append(float(np.var(logs, ddof=1)))
        deltas.append(_delta(got, np.mean))
        trimmed.append(_delta(got, _trimmed_mean))
        halves.append(_delta([m[:max(1, len(m) // 2)] for m in got], np.mean))
    if len(deltas) < 2:
        return {}
    return {"pl_sd": float(np.sqrt(np.mean(spread))), "mean_sd": float(np.std(deltas, ddof=1)),
            "trim_sd": float(np.std(trimmed, ddof=1)), "half_sd": float(np.std(halves, ddof=1))}


def level_paired(runs: dict, numbers, key: str) -> dict:
    """`lv_mean` and `lv_sd`: the mean and spread over rounds of a round's delta taken from its
    level placements in pairs — the median over j of 100·ln(A_j / B_j), placement j of A
    against placement j of B (a placement's spacer is seeded by its number, so twins that
    allocate alike may land placement j alike) — or {} where fewer than two rounds timed the
    case on as many level placements on both sides."""
    deltas = []
    for n in numbers:
        got = _sides(runs, n, "levels", key)
        if all(got) and len(got[0]) == len(got[1]) > 1:
            deltas.append(_paired(_pair_logs(got[0], got[1])))
    if len(deltas) < 2:
        return {}
    return {"lv_mean": float(np.mean(deltas)), "lv_sd": float(np.std(deltas, ddof=1))}


def _trimmed_mean(values) -> float:
    """The mean without the lowest and the highest value (five values and more), else the mean."""
    ordered = sorted(values)
    return float(np.mean(ordered[1:-1] if len(ordered) >= 5 else ordered))


def _delta(pair, combine) -> float:
    """100·ln(A / B) of two sides' placement medians, each side's combined by `combine`."""
    return 100.0 * math.log(float(combine(pair[0])) / float(combine(pair[1])))


def side_correlation(sides) -> float | None:
    """The correlation over rounds of side A's and side B's medians (100·ln): near 1 where a
    round's two runs share what moves them (where their data lies, twins), near 0 where each
    draws its own. None under three rounds or where a side did not move."""
    if len(sides) < 3:
        return None
    logs = 100.0 * np.log(np.asarray(sides, dtype=float))
    if min(np.std(logs[:, 0]), np.std(logs[:, 1])) == 0:
        return None
    return float(np.corrcoef(logs[:, 0], logs[:, 1])[0, 1])


def first_effect(deltas, signs) -> float | None:
    """How much slower (in %) a round's first run read than its second, over the rounds: the
    deltas (100·ln A/B) about their mean, each signed +1 where A ran first (ABBA: odd rounds)
    and −1 where B did, averaged. ABBA cancels it in the mean delta; it still spreads the
    rounds. None under two rounds of each order."""
    if min(signs.count(1.0), signs.count(-1.0)) < 2:
        return None
    centre = float(np.mean(deltas))
    return float(np.mean([(d - centre) * s for d, s in zip(deltas, signs)]))


def analyse(doc: dict) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for op, runs in sorted(doc.items()):
        numbers = sorted({int(name[1:].split("_")[0]) for name in runs} - {0})
        keys = sorted(set().union(*(set(r["shapes"]) for r in runs.values())))
        for key in keys:
            plain, paired, within, counts, ms, sides, firsts = [], [], [], [], [], [], []
            agree = []
            for n in numbers:
                a, b = _sides(runs, n, "shapes", key)
                if not a or not b or len(a) < 3 or len(b) < 3:
                    continue
                got = _sides(runs, n, "medians", key)
                plain.append(100.0 * math.log(got[0] / got[1]) if all(got) else _log_ratio(a, b))
                if all(got):
                    sides.append(got)
                firsts.append(1.0 if n % 2 else -1.0)     # ABBA: A first in odd rounds
                logs = _pair_logs(a, b)
                paired.append(_paired(logs))
                agree.append(_agreeing(logs))
                within.append(_boot_sd(a, b, rng))
                counts.append(min(len(a), len(b)))
                ms.append(float(np.median(a)))
            if len(plain) < 2:
                continue
            sd = float(np.std(plain, ddof=1))
            w = float(np.sqrt(np.mean(np.square(within))))
            rows.append({"op": op, "shape": key, "ms": float(np.median(ms)), "rounds": len(plain),
                         "samples": int(np.median(counts)), "mean": float(np.mean(plain)),
                         "sd": sd, "within": w, "excess": math.sqrt(max(sd * sd - w * w, 0.0)),
                         "paired_mean": float(np.mean(paired)),
                         "paired_sd": float(np.std(paired, ddof=1)),
                         "agree": float(np.median(agree)),
                         "r": side_correlation(sides),
                         "first": first_effect(plain, firsts),
                         **placement_spread(runs, numbers, key),
                         **level_paired(runs, numbers, key)})
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = [f"{'op':<14} {'shape':<40} {'us':>8} {'rounds':>6} {'n/side':>6} {'mean %':>7} "
             f"{'sd %':>6} {'within':>6} {'excess':>6} {'p.mean':>7} {'p.sd':>6} {'agree':>5} "
             f"{'r':>5} {'first':>6}"]
    placed = any("pl_sd" in r for r in rows)
    if placed:
        lines[0] += f" {'pl.sd':>6} {'mean.sd':>7} {'trim.sd':>7} {'half.sd':>7}"
    leveled = any("lv_sd" in r for r in rows)
    if leveled:
        lines[0] += f" {'lv.mean':>7} {'lv.sd':>6}"
    for r in rows:
        lines.append(f"{r['op'][:14]:<14} {r['shape'][:40]:<40} {r['ms'] * 1e3:>8.1f} "
                     f"{r['rounds']:>6} {r['samples']:>6} {r['mean']:>+7.3f} {r['sd']:>6.3f} "
                     f"{r['within']:>6.3f} {r['excess']:>6.3f} {r['paired_mean']:>+7.3f} "
                     f"{r['paired_sd']:>6.3f} {r['agree']:>5.2f} "
                     + ("    -" if r.get("r") is None else f"{r['r']:>+5.2f}")
                     + ("      -" if r.get("first") is None else f" {r['first']:>+6.3f}")
                     + (f" {r['pl_sd']:>6.3f} {r['mean_sd']:>7.3f} {r['trim_sd']:>7.3f} "
                        f"{r['half_sd']:>7.3f}" if "pl_sd" in r else " " * 31 * placed)
                     + (f" {r['lv_mean']:>+7.3f} {r['lv_sd']:>6.3f}" if "lv_sd" in r
                        else " " * 15 * leveled))
    big = [r for r in rows if r["ms"] >= MIN_MS]
    if big:
        med = {name: np.median([r[name] for r in big])
               for name in ("sd", "within", "excess", "paired_sd")}
        lines.append(f"shapes >= 20 us: {len(big)}; median sd {med['sd']:.3f} %, within "
                     f"{med['within']:.3f} %, excess {med['excess']:.3f} %, paired sd "
                     f"{med['paired_sd']:.3f} %")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "export":
        Path(argv[2]).write_text(json.dumps(export(Path(argv[1]))))
        return 0
    if len(argv) in (2, 4) and argv[0] == "show":
        src = Path(argv[1])
        doc = json.loads(src.read_text()) if src.is_file() else export(src)
        if len(argv) == 4:                  # show OUT.json LEVELS MATCH (split_levels)
            split_levels(doc, int(argv[2]), argv[3])
        print("\n".join(table(analyse(doc))))
        return 0
    usage = __doc__.split("\n\n")[1]           # the module's usage lines
    print("usage:\n" + usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
