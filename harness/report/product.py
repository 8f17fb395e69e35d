"""The model of a product run root: status.csv (one line per task), each task's
task-receipt.json (class, rule, reason, cells, round deltas) and the campaign receipt."""
from __future__ import annotations

from pathlib import Path

from ..common.errors import UsageError
from ..product.receipts import CAMPAIGN_RECEIPT, STATUS_CSV, read_json
from ..product.tasks import TASK_RECEIPT
from . import runs, sources
from .model import Headline, OpEntry, Report, Side, count, finite


def _task(root: Path, row: dict, page_dir: Path) -> OpEntry:
    tid = row.get("task_id", "-")
    entry = OpEntry(op=row.get("op") or tid, status=row.get("class", "-"),
                    family=row.get("family", "-"), reason=row.get("reason", ""))
    path = root / "tasks" / tid / TASK_RECEIPT
    if not path.is_file():
        return entry
    entry.links.append(("task receipt", runs.link(path, page_dir)))
    try:
        receipt = read_json(path)
    except UsageError as exc:
        entry.notes = str(exc)
        return entry
    rounds = receipt.get("rounds") if isinstance(receipt.get("rounds"), dict) else {}
    last = rounds.get("b") or rounds.get("a") or {}
    entry.delta = finite(last.get("delta_median_pct"))
    entry.low, entry.high = finite(last.get("delta_min_pct")), finite(last.get("delta_max_pct"))
    entry.notes = f"task {tid}, rule {receipt.get('rule', '-')}"
    entry.extra = {"correctness": receipt.get("correctness") or {},
                   "rounds": {k: v for k, v in rounds.items() if isinstance(v, dict)}}
    rules = receipt.get("rules") if isinstance(receipt.get("rules"), dict) else {}
    cells = receipt.get("cells") if isinstance(receipt.get("cells"), dict) else {}
    rnd = "b" if "b" in cells else "a"
    baseline = (rules.get("cells") or [None])[0]
    candidate = rules.get("candidate")
    dirs = [_cell_run(root, receipt, rnd, name) for name in (baseline, candidate)]
    runs.fill(entry, dirs[0], dirs[1], page_dir, entry.status not in ("X",), summary=False)
    convert = [(cells.get(rnd) or {}).get(n, {}).get("convert_count") for n in
               (baseline, candidate)]
    entry.convert_layout = "→".join("-" if c is None else str(c) for c in convert)
    return entry


def _cell_run(root: Path, receipt: dict, rnd: str, cell) -> Path | None:
    rel = (receipt.get("receipts") or {}).get(f"{rnd}/{cell}")
    if not cell or not rel:
        return None
    try:
        cell_receipt = read_json(root / rel)
    except UsageError:
        return None
    run_dir = cell_receipt.get("run_dir")
    return root / run_dir if run_dir else None


def product(root: Path, page_dir: Path) -> Report:
    rows = sources.csv_rows(root / STATUS_CSV)
    entries = [_task(root, row, page_dir) for row in rows]
    receipt = {}
    if (root / CAMPAIGN_RECEIPT).is_file():
        try:
            receipt = read_json(root / CAMPAIGN_RECEIPT)
        except UsageError:
            receipt = {}
    scope = receipt.get("claim_scope") if isinstance(receipt.get("claim_scope"), dict) else {}
    device = scope.get("device") if isinstance(scope.get("device"), dict) else {}
    points = sources.telemetry(root)
    started, took = sources.telemetry_span(points)
    rules = receipt.get("rules") if isinstance(receipt.get("rules"), dict) else {}
    headline = Headline(
        kind="product", title=f"zlh product run {receipt.get('campaign_id') or root.name}",
        sides=[Side("baseline", "-", str((rules.get("cells") or ["-"])[0])),
               Side("candidate", "-", str(rules.get("candidate", "-")))],
        device=str(device.get("name") or device.get("model") or "-"),
        started=started, duration_s=took, counts=count(e.status for e in entries),
        delta_label="median delta % of the candidate against the baseline (faster > 0)")
    if receipt:
        headline.notes.append(f"selection {receipt.get('selection', '-')}, status "
                              f"{receipt.get('status', '-')}, canary gate "
                              f"{(receipt.get('canary_gate') or {}).get('passed', '-')}")
    return Report(headline, entries, points, str(root))
