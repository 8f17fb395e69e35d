"""One run of an A/B side as the orchestration sees it (`RunOutcome`: exit status, time, run
directory, log) and its row in the root's `status.tsv` — the same whichever way the run was
started (a fresh `zlh bench` process, or a round in a side's persistent worker); and the
progress line per finished run (`RunCounter`)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..common import markers
from ..common.errors import (EXIT_FAILED_CASES, EXIT_OK, EXIT_PREFLIGHT, EXIT_USAGE, Terminated,
                             UsageError)
from ..common.tsv import append_tsv_row
from ..common.log import Echo
from ..launch.launcher import CRASH_RC, TIMEOUT_RC
from ..store.reader import COMPLETE, RESULTS_LOST, load_run, read_info, status_detail
from ..store.results import FAILED, SUCCESS

STATUS_COLUMNS = ("round", "op", "side", "rc", "elapsed_s", "rows_ok", "rows_failed",
                  "replay_fallbacks", "graph_fallbacks", "poisoned", "run_dir")
# status.tsv's rc of a run whose process gave none of its own and was not stopped: it never
# started (a worker that did not come up) or it ended without an exit status; a failure, where
# STOP_RC is a run the A/B's stop cut short. 125 as timeout(1)'s own failure.
NO_RESULT_RC = 125
# status.tsv's rc of a run that a stop of the A/B (Ctrl-C, SIGTERM, SIGHUP) cut short, whatever
# its process's own status then: plan.json's `stop_rc` says that a root records its stops so,
# and only so (then a signal's code in status.tsv is a kill of that run alone: a failure)
STOP_RC = -1
PASSED_RCS = (EXIT_OK, EXIT_FAILED_CASES)      # all cases ok, some case failed: it compares
RC_MEANINGS = {TIMEOUT_RC: "timed out", NO_RESULT_RC: "its process gave no result"}


def exit_status(rc: int) -> str:
    """`exit status N`, with what N means where zlh gave it (a timeout, no result)."""
    meaning = RC_MEANINGS.get(rc)
    return f"exit status {rc}" + (f" ({meaning})" if meaning else "")


def recorded_rc(rc: int, stopped: bool = False) -> int:
    """status.tsv's rc of a run that ended while zlh ab waited on it: STOP_RC where a stop of
    the A/B ended it (`stopped`: one seen by another thread) before it passed, NO_RESULT_RC
    where its process gave no exit status of its own (launcher.CRASH_RC: it exited 124
    itself, died of its own SIGHUP, or its worker ended without a reply), else its own."""
    if stopped and rc not in PASSED_RCS:
        return STOP_RC
    return NO_RESULT_RC if rc == CRASH_RC else rc


def ended_by(exc: BaseException, stopped: bool = False) -> int:
    """status.tsv's rc of a run that an exception ended while zlh ab waited on it: STOP_RC
    for a stop of the A/B (Ctrl-C, SIGTERM, SIGHUP; `stopped`: one seen by another thread),
    NO_RESULT_RC for anything else (an error of zlh's own: a failure, not a stop)."""
    return STOP_RC if stopped or isinstance(exc, (KeyboardInterrupt, Terminated)) \
        else NO_RESULT_RC


@dataclass
class RunOutcome:
    round: int
    side: str
    rc: int
    elapsed_s: float
    run_dir: Path | None
    log: Path | None = None

    def problem(self) -> str | None:
        """Why this run cannot be compared (None: it can): an exit status other than 0 (all
        cases ok) or 1 (some case failed), no run directory, or a run.json that does not
        say `complete` (a crashed or killed child)."""
        if self.rc not in PASSED_RCS:
            return f"rc={self.rc}"
        if self.run_dir is None:
            return f"rc={self.rc}, no run directory"
        try:
            run = load_run(self.run_dir)
        except UsageError as exc:
            return f"rc={self.rc}, {exc.message}"
        detail = status_detail(run) if run.status == RESULTS_LOST else ""
        return None if run.status == COMPLETE else \
            f"rc={self.rc}, status {run.status}" + (f": {detail}" if detail else "")

    def exit_code(self) -> int:
        """What the failed run means for `zlh ab`: its own bad-input or preflight code (2, 3)
        when it gave one, else 1."""
        return self.rc if self.rc in (EXIT_USAGE, EXIT_PREFLIGHT) else EXIT_FAILED_CASES

    def turns_lost(self) -> str | None:
        """Why this run's samples stopped being taken in turns with the other side's (its
        run.json's `turns.lost`), or None (taken in turns throughout, or not in turns)."""
        if self.run_dir is None:
            return None
        try:
            turns = read_info(self.run_dir).get("turns")
        except UsageError:             # problem() says what is wrong with the run
            return None
        return turns.get("lost") if isinstance(turns, dict) else None

    def last_words(self) -> str:
        """The last line the run printed (the one-line error of a failed run)."""
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except (OSError, AttributeError):
            return ""
        return lines[-1].strip() if len(lines) > 1 else ""


def outcome_of(out: Path, number: int, label: str, rc: int, started: float) -> RunOutcome:
    runs = sorted(p for p in out.iterdir() if p.is_dir() and (p / "run.json").exists())
    return RunOutcome(number, label, rc, round(time.time() - started, 3),
                      runs[-1] if runs else None, out / "bench.log")


def append_status(root: Path, op: str, outcome: RunOutcome) -> None:
    counts = {"rows_ok": 0, "rows_failed": 0, "replay_fallbacks": 0, "graph_fallbacks": 0,
              "poisoned": 0}
    if outcome.run_dir is not None and (outcome.run_dir / "results.jsonl").exists():
        run = load_run(outcome.run_dir)
        counts["rows_ok"] = sum(1 for r in run.rows if r.status == SUCCESS)
        counts["rows_failed"] = sum(1 for r in run.rows if r.status == FAILED)
        names = [markers.marker_name(m) for r in run.rows for m in r.markers]
        counts["replay_fallbacks"] = names.count(markers.REPLAY_FALLBACK)
        counts["graph_fallbacks"] = names.count(markers.NO_GRAPH)
        counts["poisoned"] = int(run.info.get("status") == "poisoned")
    values = {"round": outcome.round, "op": op, "side": outcome.side, "rc": outcome.rc,
              "elapsed_s": outcome.elapsed_s, "run_dir": outcome.run_dir or "-", **counts}
    append_tsv_row(root / "status.tsv", STATUS_COLUMNS, (values[c] for c in STATUS_COLUMNS))


class RunCounter:
    """`[3/6] add r2 B rc=0 15.2s`, one line per finished run."""

    def __init__(self, total: int, progress: Echo | None):
        self.total, self.done, self.progress = total, 0, progress

    def finished(self, op: str, outcome: RunOutcome) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(f"[{self.done}/{self.total}] {op} r{outcome.round} {outcome.side} "
                          f"rc={outcome.rc} {outcome.elapsed_s:.1f}s")

    def skipped(self, runs: int) -> None:
        self.total -= runs
