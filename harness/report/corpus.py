"""The models of a screen root (screen.json, screen.tsv, the sides' batch roots A/ and B/)
and of a batch root (batch.json, ops_status.csv, one run directory per op)."""
from __future__ import annotations

from pathlib import Path

from ..common.errors import UsageError
from ..common.files import read_json_object
from ..corpus.files import BATCH_JSON, OPS_STATUS_COLUMNS, read_complete
from ..corpus.screen_plan import TIMED
from ..corpus.verdict import IR_CHANGED, NO_IR_DIFF, NO_ROWS, NO_TRITON, read_tsv
from ..store.caliber import UNTIMED
from ..store.reader import StoredRun
from . import runs, sources
from .model import (NOT_FINISHED, Headline, OpEntry, Report, Shape, Side, arrow, count,
                    finite, listed)

SCREEN_JSON, SCREEN_TSV, OPS_STATUS = "screen.json", "screen.tsv", "ops_status.csv"


def _outcome_dir(side_root: Path, op: str):
    try:
        found = read_complete(side_root, op)
    except UsageError:
        return None, None
    return (found[0].run_dir, found[0]) if found else (None, None)


def _side(doc: dict, label: str, infos: list[dict]) -> Side:
    side = doc.get(label) if isinstance(doc.get(label), dict) else {}
    switch = side.get("description") or " ".join(f"{k}={v}" for k, v in
                                                 (side.get("env") or {}).items()) or "-"
    if side.get("python"):
        switch += f" (python {side['python']})"
    return Side(label, sources.compiler(next((i for i in infos if i), {})), switch)


def screen(root: Path, page_dir: Path) -> Report:
    """(long: one pass over the table, reading each op's two runs as it goes)"""
    doc = read_json_object(root / SCREEN_JSON, f"{root}: no {SCREEN_JSON}", "a zlh screen plan")
    rows = read_tsv(root / SCREEN_TSV) if (root / SCREEN_TSV).is_file() else []
    scrub = doc.get("scrub") if isinstance(doc.get("scrub"), list) else []
    entries, infos_a, infos_b = [], [], []
    for row in rows:
        op, verdict = row["op"], row.get("verdict", "-")
        entry = OpEntry(op=op, status=verdict, family=sources.family(row.get("op_file")),
                        kernels=arrow(row.get("kernels_a"), row.get("kernels_b")),
                        convert_layout=arrow(row.get("cvt_a"), row.get("cvt_b")),
                        notes=row.get("note", ""),
                        noise=verdict == NO_IR_DIFF and row.get("timed") != "no")
        shown = verdict not in (NO_ROWS, NO_TRITON)
        entry.delta = finite(row.get("median_delta_pct")) if shown else None
        elapsed = [finite(row.get(k)) for k in ("elapsed_a", "elapsed_b")]
        entry.elapsed_s = sum(e for e in elapsed if e is not None) if any(
            e is not None for e in elapsed) else None
        dir_a, out_a = _outcome_dir(root / "A", op)
        dir_b, out_b = _outcome_dir(root / "B", op)
        entry.reason = "; ".join(f"{s}: {o.reason}" for s, o in (("A", out_a), ("B", out_b))
                                 if o is not None and o.reason)
        dir_a, dir_b = _timed_pair(root, op, row) or (dir_a, dir_b)
        run_a, run_b = runs.fill(entry, dir_a, dir_b, page_dir, verdict == IR_CHANGED, scrub,
                                 summary=shown)
        entry.family = sources.family(row.get("op_file"), run_a or run_b)
        infos_a += [run_a.info] if run_a else []
        infos_b += [run_b.info] if run_b else []
        entries.append(entry)
    plan = doc.get("batch") if isinstance(doc.get("batch"), dict) else {}
    return Report(_screen_headline(root, doc, plan, rows, infos_a, infos_b), entries,
                  sources.telemetry(root), str(root))


def _timed_pair(root: Path, op: str, row: dict):
    """(A, B) run directories of the op's timed pair (`--timing changed`: A.timed/, B.timed/,
    where its delta and range come from; its untimed pair in A/, B/ has no latency), or None
    when the row's delta is from A/ and B/ or it has none."""
    if row.get("timed") != "yes":
        return None
    pair = tuple(_outcome_dir(root / f"{side}{TIMED}", op)[0] for side in ("A", "B"))
    return pair if all(pair) else None


def _screen_headline(root: Path, doc: dict, plan: dict, rows: list[dict], infos_a, infos_b
                     ) -> Headline:
    started, took = sources.span(infos_a + infos_b)
    left = unfinished(root, plan, [r.get("op") for r in rows], "screen")
    first = rows[0] if rows else {}
    calibers = [i["caliber"] for i in infos_a if isinstance(i.get("caliber"), dict)]
    # a timed run's caliber where there is one (--timing changed: the verdict pass timed nothing)
    caliber = next((c for c in calibers if c.get("timer") != UNTIMED), None) or \
        next(iter(calibers), None)
    return Headline(
        kind="screen", title=f"zlh screen {root.name}",
        sides=[_side(doc, "A", infos_a), _side(doc, "B", infos_b)],
        device=first.get("device", "-"), cards=_cards(plan.get("devices")),
        caliber=sources.caliber_line(caliber), started=started, duration_s=took,
        counts={**count(r.get("verdict", "-") for r in rows), **left[0]},
        notes=([f"scrub: {', '.join(doc['scrub'])}"] if doc.get("scrub") else []) + left[1])


def _cards(devices) -> str:
    return ", ".join(str(d) for d in devices) if isinstance(devices, list) and devices else "-"


def unfinished(root: Path, plan: dict, done: list[str], kind: str) -> tuple[dict, list[str]]:
    """({NOT_FINISHED: n}, [the note]) for the ops `plan` (batch.json, or a screen's batch
    plan) planned that the table lacks — a command cut short, or a `--partial` merge —; ({},
    []) when every planned op has its row."""
    planned = [o.get("op") for o in plan.get("ops") or [] if isinstance(o, dict)]
    missing = [op for op in planned if op not in set(done)]
    if not missing:
        return {}, []
    then = ("resume the shards that ran them, then zlh merge again" if plan.get("merged")
            else f"zlh {kind} --resume {root} runs them")
    return ({NOT_FINISHED: len(missing)},
            [f"{len(missing)} of {len(planned)} planned ops not finished ({listed(missing)}): "
             f"{then}"])


def _status_rows(path: Path) -> list[dict]:
    """ops_status.csv's rows; a table without zlh's header is damaged (one line, exit 2)."""
    if not path.is_file():
        return []
    rows = sources.csv_rows(path)
    header = list(rows[0]) if rows else (path.read_text().splitlines() or [""])[0].split(",")
    if not {"op", "status"} <= set(header) and (rows or header != [""]):
        raise UsageError(f"{path}: not the table zlh batch writes (no op and status columns "
                         f"in its header, {','.join(OPS_STATUS_COLUMNS[:3])},…); zlh batch "
                         f"--resume {path.parent} writes it again")
    return rows


def batch(root: Path, page_dir: Path) -> Report:
    doc = read_json_object(root / BATCH_JSON, f"{root}: no {BATCH_JSON}", "a zlh batch plan")
    rows = _status_rows(root / OPS_STATUS)
    entries, infos = [], []
    for row in rows:
        entry = OpEntry(op=row.get("op", "-"), status=row.get("status", "-"),
                        family=sources.family(row.get("op_file")),
                        elapsed_s=finite(row.get("elapsed_s")), notes=row.get("notes", ""),
                        reason=row.get("reason", ""))
        run_dir = root / row["run_dir"] if row.get("run_dir") else None
        run = runs.load(run_dir)
        if run is not None:
            entry.family = sources.family(row.get("op_file"), run)
            infos.append(run.info)
            entry.links.append(("run", runs.link(run.path, page_dir)))
            entry.shapes = speedups(run)
            runs.summarize(entry)
            split = runs.read_split(run)
            if split:
                entry.split["run"] = split
        entries.append(entry)
    started, took = sources.span(infos)
    left = unfinished(root, doc, [r.get("op") for r in rows], "batch")
    caliber = doc.get("caliber") if isinstance(doc.get("caliber"), dict) else None
    info = infos[0] if infos else {}
    device = (info.get("device") or {}).get("name") if isinstance(info.get("device"), dict) \
        else None
    side = doc.get("screen_side")
    headline = Headline(
        kind="batch", title=f"zlh batch {root.name}" + (f" (screen side {side})" if side else ""),
        sides=[Side(side or "batch", sources.compiler(info),
                    " ".join(str(a) for a in doc.get("command") or [])[:300] or "-")],
        device=device or (caliber or {}).get("device", "-"), cards=_cards(doc.get("devices")),
        caliber=sources.caliber_line(caliber), started=started, duration_s=took,
        counts={**count(r.get("status", "-") for r in rows), **left[0]}, notes=left[1],
        delta_label="FlagGems vs torch: median speedup - 1, % (FlagGems faster > 0)")
    return Report(headline, entries, sources.telemetry(root), str(root))


def speedups(run: StoredRun) -> list[Shape]:
    """A batch op's shapes: FlagGems against torch, (torch / gems - 1) x 100."""
    out = []
    for row in run.rows:
        t, g = finite(row.torch_ms), finite(row.gems_ms)
        delta = (t / g - 1) * 100 if t and g and t > 0 and g > 0 else None
        label = " ".join(p for p in (row.dtype, row.shape_detail) if p)
        out.append(Shape(label=label, delta=delta, a_ms=t, b_ms=g,
                         flags=list(row.flags) + ([row.status] if row.status != "SUCCESS"
                                                  else []),
                         throttled=bool(row.throttled)))
    return out
