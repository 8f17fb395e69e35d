"""The merged root of a campaign (`zlh campaign`): every card root's status rows and reports
in one status.tsv, one report (Holm over every shape of the campaign) and merged.json with
the totals — the runs of an op a resume ran again counted as superseded, not failed."""
from __future__ import annotations

from ..ab.family import decide
from ..ab.html import render_html
from ..ab.report import report_document, write_reports
from ..ab.runs import STATUS_COLUMNS
from ..common.files import atomic_write_json, atomic_write_text
from ..common.tsv import tsv_text
from ..common.log import Echo
from .campaign import CampaignPlan, card_files, card_roots


def merge(plan: CampaignPlan, cards: dict[int, dict], echo: Echo | None = None) -> dict:
    """status.tsv (device column), report.json/csv/html over all cards; totals."""
    status_rows, reports, ran, reported = [], [], {}, {}
    roots = sorted(((root, device) for device in plan.devices
                    for root in card_roots(plan, device)), key=lambda rd: _written(rd[0]))
    for root, device in roots:            # oldest first: a resume's root after the one it
        rows, card_reports = card_files(root, echo)        # went on from, whatever its name
        status_rows += [{"device": device, **row, "_root": root} for row in rows]
        reports += [(root, r) for r in card_reports]
        ran.update({row["op"]: root for row in rows})
        reported.update({r.op: root for r in card_reports})
    # an op's runs count from the last card root that reported it (else that ran it); runs
    # of an earlier attempt a resume ran again are superseded
    final = {**ran, **reported}
    superseded = [row for row in status_rows if final[row["op"]] != row.pop("_root")]
    reports = [r for root, r in reports if reported.get(r.op) == root]
    decide(reports)                         # Holm over every shape of the campaign
    write_reports(plan.root, reports, "campaign")
    atomic_write_text(plan.root / "report.html",
                      render_html({**report_document(plan.root, reports, "campaign"),
                                   "ops": [r.to_dict() for r in reports]}))
    columns = ["device"] + [c for c in (status_rows[0] if status_rows else STATUS_COLUMNS)
                            if c != "device"]
    atomic_write_text(plan.root / "status.tsv", tsv_text(columns, status_rows))
    totals = _totals(status_rows, len(superseded),
                     _totals(superseded)["failed_runs_per_card"])
    doc = {"cards": {str(d): {**info, "planned_s": plan.part.loads.get(d)}
                     for d, info in cards.items()}, **totals,
           "ops_reported": sorted(r.op for r in reports)}
    atomic_write_json(plan.root / "merged.json", {"schema_version": 1, **doc})
    return doc


def _written(root) -> float:
    """When a card root was last written (its status.tsv, else the folder)."""
    for path in (root / "status.tsv", root):
        try:
            return path.stat().st_mtime
        except OSError:
            continue
    return 0.0


def _totals(status_rows: list[dict], superseded: int = 0,
            superseded_failed: dict | None = None) -> dict:
    """Counts over the merged status rows. `superseded`: how many of them belong to an
    attempt a resume ran again (an op cut short, then reported by a later card root); their
    failures (`superseded_failed`, per card) are history, not failures of the campaign."""
    def total(key):
        return sum(int(r.get(key) or 0) for r in status_rows)
    failed: dict[str, int] = {}
    for row in status_rows:
        if str(row.get("rc")) not in ("0", "1"):
            failed[str(row["device"])] = failed.get(str(row["device"]), 0) + 1
    for card, n in (superseded_failed or {}).items():
        failed[card] -= n
        if not failed[card]:
            del failed[card]
    return {"runs": len(status_rows), "superseded_runs": superseded,
            "failed_runs_per_card": failed,
            "replay_fallbacks": total("replay_fallbacks"),
            "graph_fallbacks": total("graph_fallbacks"), "poisoned": total("poisoned")}
