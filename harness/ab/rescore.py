"""`zlh ab --rescore ROOT`: the report of an A/B root recomputed from its stored runs.

Each op's rounds are read back from ROOT/<op>/r<n>_<side>/ (the newest run directory of each;
rounds where a side has none are left out), guarded as when they ran, IR-compared with the
root's scrub patterns plus the new ones, and reported again; report.json, report.csv and
report.html (when there was one) are rewritten, the previous ones kept beside them as
`*.before-rescore`. Nothing is run.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ..common.errors import EXIT_CALIBER, EXIT_FAILED_CASES, UsageError
from ..common.files import atomic_write_text, read_json_object
from ..common.log import Echo
from ..store.reader import StoredRun, load_run
from ..store.rundir import safe_name
from ..telemetry.chart import for_report
from .guard import check_caliber
from .family import ALPHA, decide
from .html import render_html
from .orchestrate import build_report, guard, ir_verdict, later_rounds_pass
from .report import ABReport, report_document, write_reports
from .rounds import AutoRounds

REPORT_FILES = ("report.json", "report.csv", "report.html")
BEFORE = ".before-rescore"


def read_ab_plan(root: Path) -> dict:
    """ROOT/plan.json (what `zlh ab` ran), or one UsageError line."""
    doc = read_json_object(Path(root) / "plan.json",
                           f"{root} is not an A/B root that ran both sides here (no plan.json; "
                           f"--rescore recomputes what `zlh ab OP --switch/--env-*/--python-*` "
                           f"stored)", "an A/B plan")
    ops = doc.get("ops")
    if not isinstance(ops, list) or not all(isinstance(o, str) and o for o in ops):
        raise UsageError(f"{root}/plan.json: field ops: expected a list of op names")
    return doc


def stored_pairs(root: Path, op: str) -> list[tuple[StoredRun, StoredRun]]:
    """(A, B) per round, round 1 first, while both sides have a run directory."""
    pairs, number = [], 1
    while True:
        sides = [_newest(Path(root) / safe_name(op) / f"r{number}_{side}") for side in "AB"]
        if None in sides:
            return pairs
        pairs.append((load_run(sides[0]), load_run(sides[1])))
        number += 1


def _newest(folder: Path) -> Path | None:
    runs = sorted(p for p in folder.iterdir() if (p / "run.json").is_file()) \
        if folder.is_dir() else []
    return runs[-1] if runs else None


def rescore(root: Path, extra_scrub: list[str], noise_floor, allow_caliber_mismatch: bool,
            echo: Echo) -> tuple[list[ABReport], int]:
    """The reports recomputed and written; (reports, exit code as `zlh ab` would give)."""
    plan = read_ab_plan(root)
    scrub = [*(plan.get("scrub") or []), *extra_scrub]
    labels = tuple((plan.get(side) or {}).get("description", "") for side in "AB")
    auto = AutoRounds.from_dict(plan.get("rounds_auto"))
    reports, code = [], 0
    for op in dict.fromkeys(plan["ops"]):
        pairs = stored_pairs(root, op)
        if not pairs:
            echo(f"!!! {op}: no round with a run of both sides under {root / safe_name(op)}; "
                 f"not in the report")
            code = max(code, EXIT_FAILED_CASES)
            continue
        a, b = pairs[0]
        check = check_caliber(a, b, op)
        if not (guard(check, op, allow_caliber_mismatch, echo)
                and later_rounds_pass(a, pairs, op, allow_caliber_mismatch, echo)):
            code = max(code, EXIT_CALIBER)
            continue
        report, op_code = build_report(pairs, ALPHA, ir_verdict(a.path, b.path, scrub), check,
                                       labels, noise_floor, echo, auto)
        code = max(code, op_code)
        if report is not None:
            reports.append(report)
    decide(reports, ALPHA)                  # Holm over every shape of the A/B
    had_html = (Path(root) / "report.html").is_file()
    keep_previous(root)
    write_reports(root, reports)
    if had_html:
        write_html(root, reports)
    return reports, code


def keep_previous(root: Path) -> None:
    """The report files as they were, renamed `*.before-rescore` (an older copy replaced)."""
    for name in REPORT_FILES:
        path = Path(root) / name
        if path.is_file():
            shutil.copyfile(path, path.with_name(name + BEFORE))


def write_html(root: Path, reports: list[ABReport]) -> None:
    page = render_html({**report_document(root, reports),
                        "ops": [r.to_dict() for r in reports],
                        "telemetry": for_report(root, [r.op for r in reports])})
    atomic_write_text(Path(root) / "report.html", page)
