"""Comparing runs: the caliber guard, pairing of cases, and the report data.

Data in, data out: this module reads run directories and returns plain dicts; statistics live
in `compare_stats`, presentation in `ab_table` / `report_html`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import compare_stats, markers, outputs
from .autotune import records_digest
from .errors import UsageError
from .identity import CALIBER_FIELDS
from .results import SUCCESS, Row, read_rows

KEY_FIELDS = ("variant", "dtype", "shape_detail", "occurrence")


@dataclass
class Run:
    path: Path
    info: dict
    rows: list[Row]

    @property
    def op(self) -> str:
        return self.info.get("op", "?")

    @property
    def caliber(self) -> dict | None:
        return self.info.get("caliber")


def load_run(path) -> Run:
    path = Path(path)
    try:
        info = json.loads((path / "run.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} is not a run directory (no run.json)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}/run.json cannot be read: {exc}") from None
    results = path / "results.jsonl"
    rows = read_rows(results) if results.exists() else []
    return Run(path, info, rows)


# ---- caliber guard ---------------------------------------------------------------------------
@dataclass
class CaliberCheck:
    problems: list[str] = field(default_factory=list)   # refusals
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_caliber(a: Run, b: Run, label: str | None = None) -> CaliberCheck:
    """Every caliber field must match, except autotune_mode (record vs replay is the point);
    both sides recording is refused, a missing identity is refused."""
    label = label or a.op
    check = CaliberCheck()
    for side, run in (("A", a), ("B", b)):
        if not run.caliber:
            check.problems.append(f"!!! [caliber] {label}: side {side} has no identity "
                                  f"({run.path}/run.json has no caliber)")
    if check.problems:
        return check
    for name in CALIBER_FIELDS:
        if name == "autotune_mode":
            continue
        va, vb = a.caliber.get(name, "<missing>"), b.caliber.get(name, "<missing>")
        if va != vb:
            check.problems.append(f"!!! [caliber] {label}: {name} differs: A={_short(va)}, "
                                  f"B={_short(vb)}")
    modes = (a.caliber.get("autotune_mode"), b.caliber.get("autotune_mode"))
    if modes == ("record", "record"):
        check.problems.append(f"!!! [caliber] {label}: autotune_mode: both sides record — "
                              f"configs are not pinned; replay one side from the other")
    for side, run in (("A", a), ("B", b)):
        cache = str(run.caliber.get("tuner_cache", ""))
        if run.caliber.get("autotune_mode") == "record" and cache.startswith("shared"):
            check.warnings.append(f"WARNING [caliber] {label}: side {side} recorded on a shared "
                                  f"tuner cache {cache}")
    source_a, source_b = _replay_source(a), _replay_source(b)
    if not _same_record(source_a, source_b):
        check.problems.append(f"!!! [caliber] {label}: configs not pinned to the same record: "
                              f"A uses {_describe(source_a)}, B uses {_describe(source_b)}")
    if a.op != b.op:
        check.problems.append(f"!!! [caliber] {label}: op differs: A={a.op}, B={b.op}")
    return check


def _replay_source(run: Run) -> tuple[str | None, str]:
    """(digest of its records file, run id) of the record whose configs a run used — itself
    when it recorded. The digest lets runs copied or moved elsewhere still pair; the run id
    (the record directory's name) stands in where a digest cannot be had (runs written
    before digests were stored, whose record is no longer where the replay saw it)."""
    if run.caliber and run.caliber.get("autotune_mode") == "replay":
        source = Path(run.info.get("autotune_replay_from") or run.path)
        digest = run.info.get("autotune_replay_records_sha256") or records_digest(source)
    else:
        source, digest = run.path, records_digest(run.path)
    return digest, source.resolve().name


def _same_record(source_a: tuple[str | None, str], source_b: tuple[str | None, str]) -> bool:
    (digest_a, id_a), (digest_b, id_b) = source_a, source_b
    return digest_a == digest_b if digest_a and digest_b else id_a == id_b


def _describe(source: tuple[str | None, str]) -> str:
    digest, run_id = source
    return f"{run_id} (records {digest[:12]})" if digest else run_id


def _short(value) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)


# ---- pairing ---------------------------------------------------------------------------------
def row_key(row: Row) -> tuple:
    return (row.variant, row.dtype, row.shape_detail, row.occurrence)


def pair_rows(rows_a: list[Row], rows_b: list[Row]):
    """(pairs, unpaired): pairs of SUCCESS rows with positive latency on both sides, by
    (dtype, shape detail, occurrence); everything else is listed, never dropped."""
    index_b = {row_key(r): r for r in rows_b}
    pairs, unpaired, seen = [], [], set()
    for ra in rows_a:
        key = row_key(ra)
        seen.add(key)
        rb = index_b.get(key)
        if rb is None:
            unpaired.append(_unpaired("A", ra, "no such case on side B"))
        elif _usable(ra) and _usable(rb):
            pairs.append((ra, rb))
        else:
            for side, row in (("A", ra), ("B", rb)):
                if not _usable(row):
                    unpaired.append(_unpaired(side, row, row.reason or "no latency"))
    for rb in rows_b:
        if row_key(rb) not in seen:
            unpaired.append(_unpaired("B", rb, "no such case on side A"))
    return pairs, unpaired


def _usable(row: Row) -> bool:
    return row.status == SUCCESS and bool(row.gems_ms) and row.gems_ms > 0


def _unpaired(side: str, row: Row, reason: str) -> dict:
    return {"side": side, "variant": row.variant, "dtype": row.dtype,
            "shape_detail": row.shape_detail,
            "occurrence": row.occurrence, "status": row.status, "reason": reason}


# ---- report data -----------------------------------------------------------------------------
def compare_runs(rounds: list[tuple[Run, Run]], alpha: float = 0.05) -> dict:
    """Report data for one op over one or more (A, B) rounds.

    With several rounds, a shape counts only when it paired in every round; its latencies and
    delta are the medians across rounds, and its interval and p-value treat each round's
    delta as one observation (Student's t; see compare_stats). One round: bootstrap and rank
    test over the raw samples of the two processes."""
    first_a, first_b = rounds[0]
    per_round = [pair_rows(a.rows, b.rows) for a, b in rounds]
    keys = [set(row_key(ra) for ra, _ in pairs) for pairs, _ in per_round]
    common = set.intersection(*keys) if keys else set()
    ordered = [row_key(ra) for ra, _ in per_round[0][0] if row_key(ra) in common]
    by_round = [{row_key(ra): (ra, rb) for ra, rb in pairs} for pairs, _ in per_round]
    multi = len(rounds) > 1
    rows, inputs, round_deltas = [], [], []
    for key in ordered:
        pairs = [br[key] for br in by_round]
        a_ms = _median([ra.gems_ms for ra, _ in pairs])
        b_ms = _median([rb.gems_ms for _, rb in pairs])
        if multi:
            round_deltas.append([compare_stats.delta_pct(ra.gems_ms, rb.gems_ms)
                                 for ra, rb in pairs])
        else:
            (ra, rb), = pairs
            inputs.append((ra.gems.samples_ms, rb.gems.samples_ms, a_ms, b_ms))
        rows.append({"variant": key[0], "dtype": key[1], "shape_detail": key[2],
                     "occurrence": key[3],
                     "a_ms": a_ms, "b_ms": b_ms, "annotations": _annotations(pairs),
                     "timer_a": pairs[0][0].timer, "timer_b": pairs[0][1].timer})
    stats = (compare_stats.rounds_stats(round_deltas, alpha) if multi
             else compare_stats.shape_stats(inputs, alpha=alpha))
    for row, stat in zip(rows, stats):
        row.update({"delta_pct": stat.delta_pct, "ci_low_pct": stat.ci_low_pct,
                    "ci_high_pct": stat.ci_high_pct, "p_value": stat.p_value,
                    "significant": stat.significant, "rounds": None,
                    "interval": "rounds" if multi else "samples"})
    if multi and rows:
        shape_rounds = compare_stats.round_stats([list(d) for d in zip(*round_deltas)])
        for row, agg, key in zip(rows, shape_rounds, ordered):
            row["rounds"] = agg
            pairs = [br[key] for br in by_round]
            row["spread_a_pct"] = compare_stats.side_spread([ra.gems_ms for ra, _ in pairs])
            row["spread_b_pct"] = compare_stats.side_spread([rb.gems_ms for _, rb in pairs])
    unpaired = list(per_round[0][1])
    for number, (_, missing) in enumerate(per_round[1:], start=2):
        unpaired += [dict(u, round=number) for u in missing]
    extra_unpaired = [{"side": "A+B", "variant": k[0], "dtype": k[1], "shape_detail": k[2],
                       "occurrence": k[3],
                       "status": "-", "reason": "did not pair in every round"}
                      for k in sorted(set.union(*keys) - common)] if len(keys) > 1 else []
    summary = compare_stats.summarize(stats)
    if multi and rows:
        summary["per_round_median_delta_pct"] = [
            _median([d[i] for d in round_deltas]) for i in range(len(rounds))]
        summary["sign_unstable"] = sum(1 for r in rows if not r["rounds"]["sign_stable"])
        summary["side_spread_median_pct"] = {
            "A": _median([r["spread_a_pct"] for r in rows]),
            "B": _median([r["spread_b_pct"] for r in rows])}
    summary["rounds"] = len(rounds)
    marker_lines = sorted({m for a, b in rounds for run in (a, b) for r in run.rows
                           for m in r.markers})
    mismatches = output_mismatches(rounds)
    marker_lines += [f"OUTPUT_MISMATCH round={m['round']} dtype={m['dtype']} "
                     f"shape={m['shape_detail']} detail={m['reason']}" for m in mismatches]
    return {
        "op": first_a.op,
        "caliber": first_a.caliber or {},
        "sides": {"A": {"run_dir": str(first_a.path), "label": "A"},
                  "B": {"run_dir": str(first_b.path), "label": "B"}},
        "rows": rows,
        "unpaired": unpaired + extra_unpaired,
        "output_mismatches": mismatches,
        "summary": summary,
        "markers": marker_lines,
    }


def output_mismatches(rounds: list[tuple[Run, Run]]) -> list[dict]:
    """Cases whose function-under-test output differs between A and B (same seed)."""
    found = []
    for i, (a, b) in enumerate(rounds, 1):
        index_b = {row_key(r): r for r in b.rows}
        for ra in a.rows:
            rb = index_b.get(row_key(ra))
            if rb is None or "output" not in ra.extra or "output" not in rb.extra:
                continue
            reason = outputs.compare(ra.extra["output"], rb.extra["output"])
            if reason:
                found.append({"round": i, "variant": ra.variant, "dtype": ra.dtype,
                              "shape_detail": ra.shape_detail,
                              "occurrence": ra.occurrence, "reason": reason})
    return found


def _annotations(pairs) -> list[str]:
    notes = set()
    for ra, rb in pairs:
        if ra.timer != rb.timer:
            notes.add(f"timer A={ra.timer} B={rb.timer}")
        for side, row in (("A", ra), ("B", rb)):
            for line in row.markers:
                name = markers.marker_name(line)
                if name in (markers.NO_GRAPH, markers.REPLAY_FALLBACK):
                    notes.add(f"{side}: {name}")
    return sorted(notes)


def _median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
