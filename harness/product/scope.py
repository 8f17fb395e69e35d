"""The IR scope of one cell: what the function under test launched, and what it amounts to.

zlh already tells measured kernels (launched by calls of the function under test) from set-up
kernels (input building, capture set-up), so the convert count and the fingerprint cover the
measured ones. The measured launch floor narrows further: a variant counts only when
`ttgir/index.tsv` records more than `floor` launches of it by the function under test (floor 0:
every measured variant). Nothing is trusted that cannot be scoped: a dumped file missing from
the index, a measured variant whose IR is missing, no index, IR capture off or hooks absent,
or no IR at all because Triton's interpreter ran (cpu) make the scope incomplete.
"""
from __future__ import annotations

from pathlib import Path

from ..common.errors import UsageError
from ..common.files import read_text
from ..compile.ir.dump import DUMPED, MEASURED, MISSING, SETUP
from ..compile.ir.fingerprint import (convert_layout_count, fingerprint, ir_files, ir_root,
                                       read_index)
from ..store.reader import load_run


def ir_scope(run_dir: Path | None, floor: int = 0, scrub=(), stage: str = "ttgir") -> dict:
    """convert_count (measured variants above the floor), convert_count_all (every dumped
    variant, set-up ones included), fingerprint (of the files above the floor), the files
    left out, and whether the scope is complete (with the problems when not)."""
    out = {"measured_launch_floor": floor, "convert_count": None, "convert_count_all": None,
           "fingerprint": None, "measured_files": 0, "excluded": [], "unindexed": [],
           "complete": False, "problems": []}
    problems = _run_problems(run_dir)
    if run_dir is None or problems[:1] == ["no run directory"]:
        out["problems"] = problems
        return out
    files = {rel: path for rel, path in ir_files(run_dir, "ttgir", MEASURED)}
    rows = read_index(run_dir)
    if not (ir_root(run_dir) / "index.tsv").is_file():
        problems.append("no ttgir/index.tsv: launches cannot be attributed")
    measured = [r for r in rows if r.get("role") == MEASURED]
    problems += [f"IR missing for measured variant {r.get('kernel')} ({r.get('shape')})"
                 for r in measured if r.get("status") == MISSING]
    launches = {r["file"]: _int(r.get("launches")) for r in measured if r.get("status") == DUMPED}
    unindexed = sorted(rel for rel in files if rel not in launches)
    if unindexed:
        problems.append(f"{len(unindexed)} dumped file(s) not in index.tsv")
    kept = {rel for rel in files if rel in unindexed or launches[rel] > floor}
    out["excluded"] = [{"file": rel, "launches": launches[rel],
                        "convert_layout": _count(files[rel])}
                       for rel in sorted(files) if rel not in kept]
    out["unindexed"] = unindexed
    out["measured_files"] = len(kept)
    out["convert_count"] = _hash_total(measured, floor) + sum(_count(files[r]) for r in unindexed)
    out["convert_count_all"] = _hash_total(measured + [r for r in rows if r.get("role") == SETUP],
                                           None) + sum(_count(files[r]) for r in unindexed)
    stems = {rel.rsplit(".", 1)[0] for rel in kept}
    out["fingerprint"] = fingerprint(run_dir, scrub, stage=stage,
                                     keep=lambda rel: rel.rsplit(".", 1)[0] in stems)
    out["problems"] = problems
    out["complete"] = not problems
    return out


def _run_problems(run_dir: Path | None) -> list[str]:
    if run_dir is None or not Path(run_dir).is_dir():
        return ["no run directory"]
    try:
        info = load_run(run_dir).info
    except UsageError as exc:
        return [f"run directory unreadable: {exc.message}"]
    caliber, ir = info.get("caliber") or {}, info.get("ir") or {}
    problems = []
    if caliber.get("ir_capture") is False:
        problems.append("IR capture was off")
    if caliber.get("backend") == "cpu":
        problems.append("no IR: Triton's interpreter compiles nothing (cpu backend)")
    if ir.get("hooks_ok") is not True:
        problems.append("the compiler's IR hooks were not available in this run")
    return problems


def _hash_total(rows: list[dict], floor: int | None) -> int:
    """convert_layout per variant (each hash once, however many shapes it ran in) over the
    variants the function under test launched more than `floor` times (None: every row)."""
    counts: dict[str, int] = {}
    peak: dict[str, int] = {}
    for r in rows:
        h = r.get("hash", "")
        peak[h] = max(peak.get(h, 0), _int(r.get("launches")))
        if str(r.get("convert_layout", "")).isdigit():
            counts[h] = int(r["convert_layout"])
    return sum(n for h, n in counts.items() if floor is None or peak.get(h, 0) > floor)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _count(path: Path) -> int:
    return convert_layout_count(read_text(path, errors="replace"))
