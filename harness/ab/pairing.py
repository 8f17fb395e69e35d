"""Which cases of two runs pair, which outputs differ, and what to note on a pair."""
from __future__ import annotations

from ..common import markers
from ..run import outputs
from ..store.reader import StoredRun
from ..store.results import FAILED, SUCCESS, Row, row_key  # noqa: F401 - row_key: ours too

KEY_FIELDS = ("variant", "dtype", "shape_detail", "occurrence")


def pair_rows(rows_a: list[Row], rows_b: list[Row]):
    """(pairs, unpaired): pairs of SUCCESS rows with positive latency on both sides, by
    (variant, dtype, shape detail, occurrence); everything else is listed, never dropped."""
    index_b = {row_key(r): r for r in rows_b}
    pairs, unpaired, seen = [], [], set()
    for ra in rows_a:
        key = row_key(ra)
        seen.add(key)
        rb = index_b.get(key)
        if rb is None:
            unpaired.append(unpaired_entry("A", ra, "no such case on side B"))
        elif usable(ra) and usable(rb):
            pairs.append((ra, rb))
        else:
            for side, row in (("A", ra), ("B", rb)):
                if not usable(row):
                    unpaired.append(unpaired_entry(side, row, row.reason or "no latency"))
    for rb in rows_b:
        if row_key(rb) not in seen:
            unpaired.append(unpaired_entry("B", rb, "no such case on side A"))
    return pairs, unpaired


def usable(row: Row) -> bool:
    return row.status == SUCCESS and bool(row.gems_ms) and row.gems_ms > 0


def unpaired_entry(side: str, row: Row, reason: str) -> dict:
    return {"side": side, "variant": row.variant, "dtype": row.dtype,
            "shape_detail": row.shape_detail, "occurrence": row.occurrence,
            "status": row.status, "reason": reason}


def output_mismatches(rounds: list[tuple[StoredRun, StoredRun]]) -> list[dict]:
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


def broken_by_b(run_a: StoredRun | None, run_b: StoredRun | None,
                b_died: bool = False) -> list[str]:
    """Cases SUCCESS on A that B failed, as `dtype shape`: a change that breaks shapes must
    never read as "no change". A failure before B's cases were known (the benchmark's input
    builder raised: a FAILED row named after the op, the shapes after it never built) takes
    the A cases B then lacks with it: they are listed too, as `dtype shape (not run on B)`;
    so does a B whose process died under its cases (`b_died`: a crash, the device made
    unusable), which leaves no row for the case that killed it."""
    if run_a is None or run_b is None:
        return []
    failed_b = [r for r in run_b.rows if r.status == FAILED]
    if not failed_b and not b_died:
        return []
    keys_b = {row_key(r) for r in run_b.rows}
    failed_keys = {row_key(r) for r in failed_b}
    found = []
    for ra in run_a.rows:
        if ra.status != SUCCESS:
            continue
        key = row_key(ra)
        if key in failed_keys:
            found.append(f"{ra.dtype} {ra.shape_detail}")
        elif key not in keys_b:
            found.append(f"{ra.dtype} {ra.shape_detail} (not run on B)")
    return found


def annotations(pairs) -> list[str]:
    notes = set()
    for ra, rb in pairs:
        if ra.timer != rb.timer:
            notes.add(f"timer A={ra.timer} B={rb.timer}")
        for side, row in (("A", ra), ("B", rb)):
            if row.throttled:
                notes.add(f"{side}: throttled")
            for line in row.markers:
                name = markers.marker_name(line)
                if name in (markers.NO_GRAPH, markers.REPLAY_FALLBACK):
                    notes.add(f"{side}: {name}")
            for flag in row.gems.flags if row.gems is not None else ():
                notes.add(f"{side}: {flag}")     # the compared latency's own samples
    return sorted(notes)
