"""Stored runs in, the typed report out: pairing across rounds, statistics, summary.

Data only: statistics live in `measure.stats`, presentation in `render` / `html`.
"""
from __future__ import annotations

from ..measure import sequential, stats
from ..measure.measurement import IQM
from ..measure.paired import paired_delta_pct
from ..store.reader import StoredRun
from .pairing import annotations, output_mismatches, pair_rows, row_key
from .report import ABReport, ABRow


def compare_runs(rounds: list[tuple[StoredRun, StoredRun]], alpha: float = 0.05,
                 auto=None) -> ABReport:
    """The report for one op over one or more (A, B) rounds.

    With several rounds, a shape counts only when it paired in every round; its latencies and
    delta are the medians across rounds, and its interval and p-value treat each round's
    delta as one observation (Student's t; see stats) — under `auto` (rounds.AutoRounds, the
    rounds `--rounds auto` chose) the two-stage test, with the pilot rounds' spread (see
    measure.sequential). One round: bootstrap and rank test over the raw samples of the two
    processes. A round whose two sides took turns throughout (run.json `turns`, none lost)
    gives each shape the delta of its neighbour samples (measure.paired); a shape timed on
    level placements on both sides, the delta of its placement pairs; any other the ratio of
    the two sides' medians."""
    first_a, first_b = rounds[0]
    per_round = [pair_rows(a.rows, b.rows) for a, b in rounds]
    keys = [set(row_key(ra) for ra, _ in pairs) for pairs, _ in per_round]
    common = set.intersection(*keys) if keys else set()
    ordered = [row_key(ra) for ra, _ in per_round[0][0] if row_key(ra) in common]
    by_round = [{row_key(ra): (ra, rb) for ra, rb in pairs} for pairs, _ in per_round]
    pairs_of = {key: [br[key] for br in by_round] for key in ordered}
    multi = len(rounds) > 1
    rows = [_row(key, pairs_of[key]) for key in ordered]
    if multi:
        deltas, paired, turned = _deltas_by_shape(rounds, [pairs_of[k] for k in ordered])
        shape_stats = (sequential.two_stage_stats(deltas, auto.min_rounds, alpha)
                       if auto is not None else stats.rounds_stats(deltas, alpha))
    else:
        shape_stats = stats.shape_stats(
            [(ra.gems.samples_ms, rb.gems.samples_ms, row.a_ms, row.b_ms)
             for row, ((ra, rb),) in zip(rows, (pairs_of[k] for k in ordered))], alpha=alpha)
    for row, stat in zip(rows, shape_stats):
        _apply(row, stat, "rounds" if multi else "samples")
    summary = stats.summarize(shape_stats)
    if multi:
        low, high = stats.geomean_rounds_interval(deltas, alpha)
    else:
        low, high = stats.geomean_samples_interval(
            [(ra.gems.samples_ms, rb.gems.samples_ms) for ((ra, rb),) in
             (pairs_of[k] for k in ordered)], alpha=alpha)
    summary.update(geomean_ci_low=low, geomean_ci_high=high,
                   geomean_interval="rounds" if multi else "samples")
    if multi and rows:
        _add_rounds(rows, summary, deltas, [pairs_of[k] for k in ordered], len(rounds),
                    paired, turned)
        _add_design(rows, summary, deltas, auto, alpha, len(rounds))
    summary["rounds"] = len(rounds)
    mismatches = output_mismatches(rounds)
    return ABReport(
        op=first_a.op,
        caliber=_object(first_a.info.get("caliber")),
        sides={"A": {"run_dir": str(first_a.path), "label": "A",
                     "compiler": first_a.info.get("compiler")},
               "B": {"run_dir": str(first_b.path), "label": "B",
                     "compiler": first_b.info.get("compiler")}},
        rows=rows,
        unpaired=_unpaired(per_round, keys, common),
        output_mismatches=mismatches,
        summary=summary,
        markers=_marker_lines(rounds, mismatches))


def took_turns(turns) -> bool:
    """Whether a run's samples were taken in turns with the other side's throughout, from
    its run.json's `turns`: there, and with no `lost`."""
    return isinstance(turns, dict) and not turns.get("lost")


def _deltas_by_shape(rounds, pairs_per_shape) -> tuple[list[list[float]], list[tuple], int]:
    """Each shape's per-round deltas (_round_deltas), how many of them were paired (all, and
    of those by level placements), and how many rounds took turns throughout on both sides."""
    in_turns = [took_turns(a.info.get("turns")) and took_turns(b.info.get("turns"))
                for a, b in rounds]
    per_shape = [_round_deltas(pairs, in_turns) for pairs in pairs_per_shape]
    return [own for own, _ in per_shape], [counts for _, counts in per_shape], sum(in_turns)


def _round_deltas(pairs, in_turns: list[bool]) -> tuple[list[float], tuple[int, int]]:
    """One shape's delta in each round — from pairs where they exist (paired_round_delta), else
    the ratio of the medians — and how many rounds were paired: all, and by level placements."""
    deltas, paired, levelled = [], 0, 0
    for (ra, rb), turned in zip(pairs, in_turns):
        delta, by_level = paired_round_delta(ra.gems, rb.gems, turned)
        paired += delta is not None
        levelled += by_level
        deltas.append(stats.delta_pct(ra.gems_ms, rb.gems_ms) if delta is None else delta)
    return deltas, (paired, levelled)


def paired_round_delta(gems_a, gems_b, turned: bool) -> tuple[float | None, bool]:
    """A round's delta of one shape from pairs (measure.paired), or None, and whether level
    placements gave it: the neighbour samples where the round took turns and they pair; else,
    where both sides' latency is the interquartile mean of level placements (run/level.py),
    placement j of A against placement j of B — the two lie behind spacers of one size, so the
    level a placement draws cancels in its pair. `gems_*`: a side's measurement, or anything
    with its `samples_ms`, `repeats` and `center`."""
    if turned:
        delta = paired_delta_pct(getattr(gems_a, "samples_ms", None),
                                 getattr(gems_b, "samples_ms", None))
        if delta is not None:
            return delta, False
    if _levelled(gems_a) and _levelled(gems_b):
        delta = paired_delta_pct(gems_a.repeats, gems_b.repeats)
        return delta, delta is not None
    return None, False


def _levelled(gems) -> bool:
    """Whether a side's latency is the interquartile mean of its level placements."""
    return getattr(gems, "center", None) == IQM and bool(getattr(gems, "repeats", ()))


def _row(key: tuple, pairs) -> ABRow:
    return ABRow(variant=key[0], dtype=key[1], shape_detail=key[2], occurrence=key[3],
                 a_ms=_median([ra.gems_ms for ra, _ in pairs]),
                 b_ms=_median([rb.gems_ms for _, rb in pairs]),
                 annotations=annotations(pairs),
                 timer_a=pairs[0][0].timer, timer_b=pairs[0][1].timer)


def _apply(row: ABRow, stat: stats.ShapeStat, interval: str) -> None:
    row.delta_pct, row.ci_low_pct, row.ci_high_pct = (stat.delta_pct, stat.ci_low_pct,
                                                      stat.ci_high_pct)
    row.p_value, row.significant, row.interval = stat.p_value, stat.significant, interval
    row.direction = stats.direction(stat) if stat.significant else 0


def _add_rounds(rows: list[ABRow], summary: dict, deltas, pairs_per_row, n_rounds: int,
                paired: list[tuple], turned: int) -> None:
    """Per shape: spread across rounds and per side, and how many of its rounds' deltas were
    paired (all, and by level placements); per op: per-round median deltas, the sign-unstable
    count, the median side spread, the rounds in turns and the shapes paired by level
    placements (_deltas_by_shape)."""
    for row, agg, pairs, own, (count, levelled) in zip(
            rows, stats.round_stats([list(d) for d in zip(*deltas)]), pairs_per_row, deltas,
            paired):
        row.rounds = dict(agg, deltas_pct=list(own),      # each round's delta, in order
                          paired_rounds=count, level_paired_rounds=levelled)
        row.spread_a_pct = stats.side_spread([ra.gems_ms for ra, _ in pairs])
        row.spread_b_pct = stats.side_spread([rb.gems_ms for _, rb in pairs])
    summary["per_round_median_delta_pct"] = [_median([d[i] for d in deltas])
                                             for i in range(n_rounds)]
    summary["rounds_in_turns"] = turned
    summary["level_paired_shapes"] = sum(1 for _, levelled in paired if levelled)
    summary["sign_unstable"] = sum(1 for r in rows if not r.rounds["sign_stable"])
    summary["side_spread_median_pct"] = {"A": _median([r.spread_a_pct for r in rows]),
                                         "B": _median([r.spread_b_pct for r in rows])}


def _add_design(rows: list[ABRow], summary: dict, deltas, auto, alpha: float,
                n_rounds: int) -> None:
    """Per shape what its rounds could see (rounds run, spread, half-width, smallest
    detectable change at 80 % power; with `auto` the rounds this shape alone needed); per op
    the design and what stopped it (`target`: every shape reached the half-width; `cap`;
    `short`: fewer rounds than needed and than the cap, the later ones never ran)."""
    pilot, target = (auto.min_rounds, auto.target_pct) if auto is not None else (None, None)
    for row, own in zip(rows, deltas):
        row.rounds.update(sequential.shape_rounds(own, pilot, target, alpha))
    design = {"design": "fixed"} if auto is None else dict(auto.to_dict())
    if auto is not None:
        needed = max((r.rounds.get("needed", 0) for r in rows), default=0)
        design["stopped_by"] = ("target" if needed <= n_rounds else
                                "cap" if n_rounds >= auto.max_rounds else "short")
    summary["rounds_design"] = design


def _unpaired(per_round, keys, common) -> list[dict]:
    unpaired = list(per_round[0][1])
    for number, (_, missing) in enumerate(per_round[1:], start=2):
        unpaired += [dict(u, round=number) for u in missing]
    if len(keys) > 1:
        unpaired += [{"side": "A+B", "variant": k[0], "dtype": k[1], "shape_detail": k[2],
                      "occurrence": k[3], "status": "-",
                      "reason": "did not pair in every round"}
                     for k in sorted(set.union(*keys) - common)]
    return unpaired


def _marker_lines(rounds, mismatches) -> list[str]:
    lines = sorted({m for a, b in rounds for run in (a, b) for r in run.rows for m in r.markers})
    return lines + [f"OUTPUT_MISMATCH round={m['round']} dtype={m['dtype']} "
                    f"shape={m['shape_detail']} detail={m['reason']}" for m in mismatches]


def _median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _object(value) -> dict:
    """A run.json field that should be an object, or {} (a damaged caliber is a run without
    identity: the guard says so; the report still holds an object)."""
    return value if isinstance(value, dict) else {}
