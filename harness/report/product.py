"""The model of a product run root: status.csv (one line per task), each task's
task-receipt.json (class, rule, reason, cells, round deltas) and the campaign receipt."""
from __future__ import annotations

from pathlib import Path

from ..common.errors import UsageError
from ..product.receipts import CAMPAIGN_RECEIPT, STATUS_CSV, read_json
from ..product.tasks import TASK_RECEIPT
from . import runs, sources
from .model import Headline, OpEntry, Report, Side, count, finite


def _task(root: Path, row: dict, page_dir: Path, infos: list | None = None) -> OpEntry:
    """One task's entry; the run.json of its baseline and candidate cell runs go to
    `infos` (the headline's compiler, caliber and times)."""
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
    read = runs.fill(entry, dirs[0], dirs[1], page_dir, entry.status not in ("X",),
                     summary=False)
    if infos is not None:
        infos.append(tuple(run.info if run is not None else {} for run in read))
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
    infos: list = []                    # (baseline run.json, candidate run.json) per task
    entries = [_task(root, row, page_dir, infos) for row in rows]
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
    if started in (None, "-"):             # no telemetry: the cell runs' own times
        started, took = sources.span([i for pair in infos for i in pair])
    rules = receipt.get("rules") if isinstance(receipt.get("rules"), dict) else {}
    first = [next((pair[k] for pair in infos if pair[k]), {}) for k in (0, 1)]
    headline = Headline(
        kind="product", title=f"zlh product run {receipt.get('campaign_id') or root.name}",
        sides=[Side("baseline", sources.compiler(first[0]),
                    str((rules.get("cells") or ["-"])[0])),
               Side("candidate", sources.compiler(first[1]), str(rules.get("candidate", "-")))],
        device=str(((first[0].get("device") or {}) if isinstance(first[0].get("device"), dict)
                    else {}).get("name") or device.get("name_contains")
                   or device.get("physical_device") or "-"),
        caliber=sources.caliber_line(first[0].get("caliber")),
        started=started, duration_s=took, counts=count(e.status for e in entries),
        delta_label="median delta % of the candidate against the baseline (faster > 0)")
    if receipt:
        gate = receipt.get("canary_gate")
        passed = gate.get("pass") if isinstance(gate, dict) else None
        headline.notes.append(f"selection {receipt.get('selection', '-')}, status "
                              f"{receipt.get('status', '-')}, canary gate "
                              f"{'-' if passed is None else 'PASS' if passed else 'FAIL'}")
    else:
        frozen = _frozen_dir(root)
        headline.notes.append(f"no {CAMPAIGN_RECEIPT}: the run did not end (cut short, or "
                              f"still running); zlh product run {frozen} --resume"
                              + ("" if Path(frozen) / "run" == root else f" --out {root}")
                              + " goes on")
    return Report(headline, entries, points, str(root))


def _frozen_dir(root: Path) -> str:
    """The frozen plan a run root came from (its contract receipt names it), else the
    default place: the run root's parent."""
    try:
        contract = read_json(root / "contract-receipt.json") \
            if (root / "contract-receipt.json").is_file() else {}
    except UsageError:
        contract = {}
    frozen = contract.get("frozen_dir") if isinstance(contract, dict) else None
    return str(frozen) if isinstance(frozen, str) and frozen else str(root.parent)
