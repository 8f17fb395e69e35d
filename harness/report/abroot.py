"""The models of roots holding a report.json: an A/B root (`zlh ab`), a calibrate root
(calibration.json beside it) and a campaign root (its merged report over the cards)."""
from __future__ import annotations

from pathlib import Path

from ..ab.report import ABReport, load_report
from ..common.errors import RunFailedError, UsageError
from ..common.files import read_json_object, read_text
from ..common.lock import root_in_use
from ..store.compiler import short as short_compiler
from . import runs, sources
from .model import (NOT_FINISHED, Headline, OpEntry, Report, Shape, Side, count, finite,
                    listed)

STATUS_TSV = "status.tsv"


def status_of(report: ABReport) -> str:
    """IR_CHANGED / NO_IR_DIFF / NO_IR / - from the op's verdict line."""
    verdict = (report.verdict or "-").split(":")[0].strip()
    return verdict.removeprefix("SWITCH_") or "-"


def _elapsed(root: Path) -> dict[str, float]:
    """Seconds per op summed over status.tsv's runs (both sides, every round)."""
    try:
        lines = read_text(root / STATUS_TSV).splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    if not lines:
        return {}
    header = lines[0].split("\t")
    out: dict[str, float] = {}
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t")))
        seconds = finite(row.get("elapsed_s"))
        if row.get("op") and seconds is not None:
            out[row["op"]] = out.get(row["op"], 0.0) + seconds
    return out


def entry_of(report: ABReport, root: Path, page_dir: Path, elapsed: dict) -> OpEntry:
    s = report.summary or {}
    status = status_of(report)
    entry = OpEntry(op=report.op, status=status, noise=status == "NO_IR_DIFF",
                    elapsed_s=elapsed.get(report.op),
                    notes="; ".join(report.markers[:3]),
                    reason="; ".join([*report.caliber_problems, *report.broken_by_b[:3]]))
    if status != "NO_IR" or report.caliber.get("backend") == "cpu":
        entry.delta = finite(s.get("delta_median_pct"))
        entry.low, entry.high = finite(s.get("delta_min_pct")), finite(s.get("delta_max_pct"))
    for row in report.rows:
        entry.shapes.append(Shape(
            label=runs.shape_label(report.op, row.variant, row.dtype, row.shape_detail,
                                   row.occurrence),
            delta=finite(row.delta_pct), low=finite(row.ci_low_pct),
            high=finite(row.ci_high_pct), a_ms=finite(row.a_ms), b_ms=finite(row.b_ms),
            significant=row.significant, flags=list(row.annotations),
            throttled=any("throttled" in a for a in row.annotations)))
    dirs = [(report.sides.get(k) or {}).get("run_dir") for k in ("A", "B")]
    dirs = [Path(d) if d and Path(d).is_absolute() else root / d if d else None for d in dirs]
    run_a, run_b = runs.load(dirs[0]), runs.load(dirs[1])
    runs.add_runs(entry, run_a, run_b, page_dir)
    if run_a is not None and run_b is not None and status == "IR_CHANGED":
        runs.add_kernels(entry, run_a.path, run_b.path, page_dir)
        entry.kernels = f"{len(entry.changed_kernels)} changed"
    return entry


def ab(root: Path, page_dir: Path, kind: str = "ab") -> Report:
    doc, reports = load_report(root)
    plan = _plan(root)
    holder, missing = root_in_use(root), _not_reported(plan, doc)
    if not reports:
        why = (f"it is still running ({holder})" if holder else
               f"no op finished: zlh ab --rescore {root} reports the rounds that did, if any"
               if missing else f"every op failed or was refused; see {root / STATUS_TSV}")
        raise RunFailedError(f"{root}: the report holds no op ({why})", "empty")
    elapsed = _elapsed(root)
    entries = [entry_of(r, root, page_dir, elapsed) for r in reports]
    first = reports[0]
    sides = []
    for key in ("A", "B"):
        side = first.sides.get(key) or {}
        sides.append(Side(side.get("label") or key, short_compiler(side.get("compiler")),
                          side.get("description") or side.get("switch") or "-"))
    infos = [sources.run_info((r.sides.get(k) or {}).get("run_dir")) for r in reports[:50]
             for k in ("A", "B")]
    started, took = sources.span(infos)
    points = sources.telemetry(root)
    if started == "-":
        started, took = sources.telemetry_span(points)
    # titled by what the root is and where it is now (a copied root keeps no old name)
    headline = Headline(kind=kind, title=f"zlh {kind} {Path(root).name}",
                        sides=sides, device=str(first.caliber.get("device", "-")),
                        caliber=sources.caliber_line(first.caliber), started=started,
                        duration_s=took, counts=count(e.status for e in entries))
    headline.counts.update({f"shapes {k}": sum(r.summary.get(k, 0) for r in reports)
                            for k in ("faster", "slower", "unchanged")})
    _plan_sides(plan, headline)
    if missing:
        headline.counts[NOT_FINISHED] = len(missing)
        headline.notes.append(
            f"{len(missing)} planned op(s) not in the report ({listed(missing)}): "
            + (f"still running ({holder})" if holder else
               f"cut short; zlh ab --rescore {root} reports the rounds they finished"))
    if kind == "calibrate":
        headline.notes += _calibration_notes(root)
    if kind == "campaign":
        _campaign(root, headline)
    return Report(headline, entries, points, str(root))


def _plan(root: Path) -> dict:
    """ROOT/plan.json (what `zlh ab` ran), or {} where the root has none that reads."""
    if not (root / "plan.json").is_file():
        return {}
    try:
        return read_json_object(root / "plan.json", "", "a zlh A/B plan")
    except UsageError:
        return {}


def _not_reported(plan: dict, doc: dict) -> list[str]:
    """The ops plan.json planned whose rounds never ended (report.json's `ops_done` lacks
    them: an A/B cut short, or still running); [] where the root has no plan (two stored
    runs compared) or its report predates `ops_done`."""
    done = doc.get("ops_done")
    ops = plan.get("ops") if isinstance(plan.get("ops"), list) else []
    if not isinstance(done, list):
        return []
    return [op for op in dict.fromkeys(o for o in ops if isinstance(o, str)) if op not in done]


def _plan_sides(plan: dict, headline: Headline) -> None:
    """Each side's switch from plan.json (what `zlh ab` ran), when the root has one."""
    for key, side in zip(("A", "B"), headline.sides):
        planned = plan.get(key) if isinstance(plan.get(key), dict) else {}
        if planned.get("description"):
            side.switch = planned["description"]


def _calibration_notes(root: Path) -> list[str]:
    doc = read_json_object(root / "calibration.json", f"{root}: no calibration.json",
                           "a zlh calibration")
    floor = doc.get("floor") if isinstance(doc.get("floor"), dict) else {}
    shown = ", ".join(f"{k} {v}" for k, v in floor.items() if not isinstance(v, (dict, list)))
    return [f"calibration: {doc.get('rounds')} rounds, planted "
            f"{doc.get('plant_pct') if doc.get('plant_pct') is not None else 'none (A/A)'}; "
            f"floor: {shown or '-'}"]


def _campaign(root: Path, headline: Headline) -> None:
    doc = read_json_object(root / "campaign.json", f"{root}: no campaign.json",
                           "a zlh campaign plan")
    devices = doc.get("devices") if isinstance(doc.get("devices"), list) else []
    headline.cards = ", ".join(str(d) for d in devices) or "-"
    for key, side in zip(("A", "B"), headline.sides):
        plan_side = doc.get(key) if isinstance(doc.get(key), dict) else {}
        if plan_side.get("description"):
            side.switch = plan_side["description"]
    headline.notes.append(f"campaign of screen {doc.get('screen', '-')}, "
                          f"{doc.get('rounds', '-')} round(s) per op")

