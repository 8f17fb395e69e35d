"""`zlh ab --rescore ROOT`: the report of an A/B root recomputed from its stored runs.

Each op's rounds are read back from ROOT/<op>/r<n>_<side>/ (the newest run directory of each),
round 1 on, up to the first round where a side has no run or one that did not complete (an
A/B stopped by Ctrl-C, a kill, a full disk: the rounds before it are reported, the line says
which were left out), guarded as when they ran, IR-compared with the root's scrub patterns
plus the new ones, and reported again; report.json, report.csv and report.html (when there
was one) are rewritten, the ones from before the first rescore kept beside them as
`*.before-rescore` (a later rescore leaves that copy as it is). A run that failed (its exit
status in status.tsv, else its run.json) fails its op, as in `zlh ab`. Nothing is run. The
root is held for the rescore: not while the A/B that writes it still runs.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ..common.errors import EXIT_CALIBER, EXIT_FAILED_CASES, UsageError
from ..common.fields import Fields
from ..common.files import atomic_write_text, keep_first, not_a_folder, read_json_object
from ..common.lock import holding
from ..common.tsv import read_tsv_rows
from ..common.log import Echo
from ..store.reader import ABANDONED, COMPLETE, RUNNING, load_run, status_detail
from ..store.rundir import op_folder
from ..telemetry.chart import for_report
from .guard import check_caliber, guard, later_rounds_pass
from .family import ALPHA, decide
from .html import render_html
from .orchestrate import build_report, ir_verdict
from .preflight import check_scrub
from .report import ABReport, report_document, write_reports
from .rounds import AutoRounds, note_choice
from .runs import PASSED_RCS, exit_status

REPORT_FILES = ("report.json", "report.csv", "report.html")
BEFORE = ".before-rescore"


def read_ab_plan(root: Path) -> dict:
    """ROOT/plan.json (what `zlh ab` ran), or one UsageError line naming the field that is
    damaged (a damaged plan is refused, not read as an A/B of no ops)."""
    why = not_a_folder(root)
    if why is not None:
        raise UsageError(f"--rescore {root}: {why}")
    doc = read_json_object(Path(root) / "plan.json",
                           f"{root} is not an A/B root that ran both sides here (no plan.json; "
                           f"--rescore recomputes what `zlh ab OP --switch/--env-*/--python-*` "
                           f"stored)", "an A/B plan")
    ops = doc.get("ops")
    if not isinstance(ops, list) or not ops or not all(isinstance(o, str) and o for o in ops):
        raise UsageError(f"{root}/plan.json: field ops: expected a list of op names")
    scrub = doc.get("scrub")
    if scrub is not None and not (isinstance(scrub, list)
                                  and all(isinstance(x, str) for x in scrub)):
        raise UsageError(f"{root}/plan.json: field scrub: expected a list of patterns")
    try:
        check_scrub(scrub or [])
    except UsageError as exc:
        raise UsageError(f"{root}/plan.json: field scrub: {exc.message}") from None
    if doc.get("rounds") is not None:          # None: an auto design, its cap in rounds_auto
        Fields(doc, f"{root}/plan.json").int("rounds", low=1)
    if doc.get("stop_rc") is not None:         # None: written before zlh recorded it
        Fields(doc, f"{root}/plan.json").int("stop_rc")
    auto = doc.get("rounds_auto")
    try:
        if auto is not None and not isinstance(auto, dict):
            raise UsageError("expected an object with target_pct, min_rounds and max_rounds")
        AutoRounds.from_dict(auto)
    except UsageError as exc:
        said = exc.message.removeprefix("plan.json: ")
        raise UsageError(f"{root}/plan.json: field rounds_auto: {said}") from None
    for side in "AB":
        entry = doc.get(side)
        if entry is not None and not (isinstance(entry, dict) and isinstance(
                entry.get("description", ""), str)):
            raise UsageError(f"{root}/plan.json: field {side}: expected an object with a "
                             f"description")
    return doc


CUT_SHORT = ("interrupted", ABANDONED, RUNNING)    # a run a signal or a kill stopped
# Roots written before plan.json's `stop_rc`: the exit statuses in status.tsv that a stop of
# the A/B gave, not a failure of the run: none recorded (-1), SIGHUP, SIGINT, SIGKILL (a stop's
# escalation, also an out-of-memory kill), SIGTERM, negative or 128 + the signal from a
# handler — a stop only where the A/B went no further (a stopped A/B runs nothing more); a
# kill of the very last run leaves no later row and reads as a stop there.
LEGACY_STOPPED_RCS = {-1, -2, -9, -15, 129, 130, 137, 143}


class Ended(NamedTuple):
    """How status.tsv says a run ended: its exit status (its last row), and whether that was
    a stop of the A/B (not a failure of the run)."""
    rc: int
    stop: bool


def ended_rcs(root: Path, stop_rc: int | None) -> dict[tuple[str, int, str], Ended]:
    """{(op, round, side): how that run ended (Ended)}. `stop_rc`: plan.json's, the one code
    the root records a stop with (runs.STOP_RC); None for a root written before it."""
    order = []
    for row in read_tsv_rows(Path(root) / "status.tsv"):
        try:
            order.append(((row["op"], int(row["round"]), row["side"]), int(row["rc"])))
        except (KeyError, ValueError):
            continue                         # a damaged row says nothing
    ended, later = {}, set()                 # later: the (op, round)s of the rows after
    for key, rc in reversed(order):
        if key not in ended:
            stop = rc == stop_rc if stop_rc is not None else \
                rc in LEGACY_STOPPED_RCS and not later - {key[:2]}
            ended[key] = Ended(rc, stop)
        later.add(key[:2])
    return ended


def _failed(run, ended: Ended | None) -> bool:
    """Whether a side's run of a round failed as `zlh ab` would have said: its exit status
    (status.tsv) neither a pass nor a stop of the A/B — a crash, an abort, a timeout (124),
    no result (125), a kill of that run alone (out of memory), whatever its run.json says —,
    or, without one, a run.json that is neither complete nor cut short (crashed, failed,
    poisoned, rows lost)."""
    if ended is not None and ended.rc not in PASSED_RCS and not ended.stop:
        return True
    return run is not None and run.status != COMPLETE and run.status not in CUT_SHORT


def stored_pairs(root: Path, op: str, echo: Echo, rcs: dict) -> tuple[list, bool, bool]:
    """((A, B) per round, round 1 first, while both sides have a run directory whose run
    completed; whether rounds were left out; whether a run failed). A round cut short (a
    side without a run, or one interrupted, killed or still running) ends the pairs, said in
    one line when it holds a run of either side or a later round was run; a run that failed
    (_failed: as `zlh ab` decided) fails the op: no report for it, as in `zlh ab`. `rcs`:
    ended_rcs(root, …), read once for every op."""
    pairs, number = [], 1
    while True:
        folder = op_folder(root, op)
        paths = [_newest(folder / f"r{number}_{side}") for side in "AB"]
        runs = [load_run(path) if path is not None else None for path in paths]
        ends = [rcs.get((op, number, side)) for side in "AB"]
        failed = [(side, run, end.rc if end else None)
                  for side, run, end in zip("AB", runs, ends) if _failed(run, end)]
        short = [(side, run, end.rc if end else None) for side, run, end in zip("AB", runs, ends)
                 if run is None or run.status != COMPLETE]
        if not failed and not short:
            pairs.append((runs[0], runs[1]))
            number += 1
            continue
        why = "; ".join(f"side {side} " + ("has no run" if run is None else f"{run.status}"
                                           + (f" ({d})" if (d := status_detail(run)) else ""))
                        + (f", {exit_status(rc)}" if rc not in (None, 0) else "")
                        for side, run, rc in failed or short)
        if failed:
            echo(f"!!! {op}: round {number} failed ({why}); no report for this op")
            return pairs, False, True
        later = _newest(folder / f"r{number + 1}_A") or _newest(folder / f"r{number + 1}_B")
        left_out = any(run is not None for run in runs) or later is not None
        if left_out:
            echo(f"WARNING {op}: round {number} and later left out ({why}); reporting "
                 f"{len(pairs)} round(s)")
        return pairs, left_out, False


def ops_done(root: Path) -> list[str]:
    """The ops whose rounds ended, as the root's report.json says (none where it is missing
    or damaged): an op among them whose folder is gone was damaged, not never run."""
    try:
        done = read_json_object(Path(root) / "report.json", "report.json").get("ops_done")
    except UsageError:
        return []
    return [op for op in done if isinstance(op, str)] if isinstance(done, list) else []


def _fewer_than_planned(plan: dict, auto, pairs: list, verdict: str) -> bool:
    """Whether an op's rounds stop short of what plan.json asked with no round left behind
    (cut at a round's boundary): fewer than the fixed rounds or the least auto rounds; one
    round after identical generated code is what `zlh ab` runs, not a cut."""
    want = auto.min_rounds if auto is not None else plan.get("rounds")  # read_ab_plan checked
    if want is None or len(pairs) >= want:
        return False
    return not (len(pairs) == 1 and verdict == "NO_IR_DIFF")


def _newest(folder: Path) -> Path | None:
    runs = sorted(p for p in folder.iterdir() if (p / "run.json").is_file()) \
        if folder.is_dir() else []
    return runs[-1] if runs else None


def rescore(root: Path, extra_scrub: list[str], noise_floor, allow_caliber_mismatch: bool,
            echo: Echo) -> tuple[list[ABReport], int]:
    """The reports recomputed and written; (reports, exit code as `zlh ab` would give)."""
    plan = read_ab_plan(root)
    with holding(Path(root), "ab --rescore", f"then run zlh ab --rescore {root}"):
        return _rescore_held(root, plan, extra_scrub, noise_floor, allow_caliber_mismatch,
                             echo)


def _rescore_held(root: Path, plan: dict, extra_scrub: list[str], noise_floor,
                  allow_caliber_mismatch: bool, echo: Echo) -> tuple[list[ABReport], int]:
    scrub = [*(plan.get("scrub") or []), *extra_scrub]
    labels = tuple((plan.get(side) or {}).get("description", "") for side in "AB")
    auto = AutoRounds.from_dict(plan.get("rounds_auto"))
    reports, code, done = [], 0, []
    # plan.json's stop_rc (read_ab_plan checked it); None: a root written before it
    finished, rcs = ops_done(root), ended_rcs(root, plan.get("stop_rc"))
    for op in dict.fromkeys(plan["ops"]):
        pairs, cut, failed = stored_pairs(root, op, echo, rcs)
        if failed or pairs:
            done.append(op)              # its rounds ended (a report, or a failure)
        if failed:
            code = max(code, EXIT_FAILED_CASES)
            continue
        if not pairs and op not in finished and not op_folder(root, op).exists():
            echo(f"WARNING {op}: never ran (the A/B was cut short before it); not in the "
                 f"report")
            continue
        if not pairs:
            echo(f"!!! {op}: no round whose runs of both sides completed under "
                 f"{op_folder(root, op)}; not in the report")
            code = max(code, EXIT_FAILED_CASES)
            continue
        a, b = pairs[0]
        check = check_caliber(a, b, op)
        if not (guard(check, op, allow_caliber_mismatch, echo)
                and later_rounds_pass(a, pairs, op, allow_caliber_mismatch, echo)):
            code = max(code, EXIT_CALIBER)
            continue
        verdict = ir_verdict(a.path, b.path, scrub)
        if not cut and _fewer_than_planned(plan, auto, pairs, verdict):
            cut = True
            echo(f"WARNING {op}: round {len(pairs) + 1} and later never ran; reporting "
                 f"{len(pairs)} round(s)")
        report, op_code = build_report(pairs, ALPHA, verdict, check, labels, noise_floor,
                                       echo, auto)
        code = max(code, op_code)
        note_choice(report, op_folder(root, op))
        design = report.summary.get("rounds_design") if report is not None else None
        if cut and isinstance(design, dict) and "stopped_by" in design:
            design["stopped_by"] = "interrupted"     # neither the target nor the cap
        if report is not None:
            reports.append(report)
    decide(reports, ALPHA)                  # Holm over every shape of the A/B
    had_html = (Path(root) / "report.html").is_file()
    keep_previous(root)
    write_reports(root, reports, done=done)
    if had_html:
        write_html(root, reports)
    return reports, code


def keep_previous(root: Path) -> None:
    """The report files as they were before the first rescore, kept once as
    `*.before-rescore` and never replaced by a later rescore."""
    for name in REPORT_FILES:
        keep_first(Path(root) / name, BEFORE)


def write_html(root: Path, reports: list[ABReport]) -> None:
    page = render_html({**report_document(root, reports),
                        "ops": [r.to_dict() for r in reports],
                        "telemetry": for_report(root, [r.op for r in reports])})
    atomic_write_text(Path(root) / "report.html", page)
