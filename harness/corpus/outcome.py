"""What became of one op in a corpus run: its status, a one-line reason, and notes.

PASS      at least one case SUCCESS and none FAILED
FAIL      a case FAILED, or the op could not run (bad input for it, no cases)
SKIP      every case skipped (the benchmark's own skip marks, an unsupported dtype)
TIMEOUT   no result within the op timeout (the worker was killed)
CRASH     the process died (signal, abort, segfault)
POISONED  the device was unusable afterwards (the worker was replaced)
"""
from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from ..common import markers
from ..common.fields import Fields, is_number
from ..common.errors import (EXIT_FAILED_CASES, EXIT_OK, EXIT_POISONED, EXIT_PREFLIGHT,
                             UsageError)
from ..launch.launcher import CRASH_RC, TIMEOUT_RC
from ..store.reader import load_run_or_none
from .stall import stall_reason
from ..store.results import FAILED, SKIPPED, SUCCESS

PASS, FAIL, SKIP, TIMEOUT, CRASH, POISONED = ("PASS", "FAIL", "SKIP", "TIMEOUT", "CRASH",
                                               "POISONED")
STATUSES = (PASS, FAIL, SKIP, TIMEOUT, CRASH, POISONED)
# What `--resume ROOT --retry …` may run again (PASS never: it has its rows).
RETRYABLE = (FAIL, TIMEOUT, CRASH, POISONED, SKIP)


def parse_retry(text: str, option: str = "--retry") -> tuple[str, ...]:
    """`FAIL,TIMEOUT,CRASH` (any case) as statuses; anything else one line naming it."""
    statuses = tuple(dict.fromkeys(s.strip().upper() for s in text.split(",")))
    wrong = [s for s in statuses if s not in RETRYABLE]
    if wrong or not statuses:
        raise UsageError(f"{option} expects statuses from {','.join(RETRYABLE)} "
                         f"(comma-separated), got {text[:60]!r}")
    return statuses
# Preflight checks that concern the whole machine, not one op: the batch stops on them
# (`import*`: this Python cannot import the adapter's library; `environment`: a variable
# breaks a library's import).
MACHINE_CHECKS = ("backend", "device", "environment")


GIB = 1 << 30
# Device memory a reused worker may still hold after an op's reset; beyond it the worker is
# replaced, so that no later op runs short of memory an earlier one kept alive.
MEMORY_HELD_LIMIT = GIB


def held_over_limit(held) -> int:
    """`held` (bytes of device memory a worker still held after an op's reset) when it is
    more than a later op may be left without, else 0 (also for no figure at all)."""
    return held if isinstance(held, int) and held > MEMORY_HELD_LIMIT else 0


@dataclass
class Attempt:
    """One try of an op: how its process ended and where its files are."""
    rc: int
    elapsed_s: float
    log: Path
    run_dir: Path | None
    message: str = ""          # the last line the op printed (its one-line error)
    worker_pid: int | None = None
    write_failure: str = ""    # the run could not write its files (disk full, read-only)
    memory_held: int = 0       # device memory (bytes) the worker still held after the reset
    state_changed: tuple = ()  # process switches the op changed (process_state.py)
    stalled_s: float | None = None   # ended by the stall rule after this many idle seconds
    start_s: float = 0.0       # what the op waited for its worker's start (0: it was ready)
    import_s: float = 0.0      # what the job spent importing (a cold worker's first op)


@dataclass
class Outcome:
    status: str
    rc: int
    elapsed_s: float
    reason: str = ""
    run_dir: Path | None = None
    rows_total: int = 0
    rows_success: int = 0
    notes: list[str] = field(default_factory=list)
    attempt: int = 1           # the number of the attempt it came from (counts across resumes)
    rcs: list[int] = field(default_factory=list)   # exit codes of the attempts that led here
    start_s: float = 0.0       # the attempt waited this long for its worker to start
    import_s: float = 0.0      # of its elapsed_s: its worker importing torch and zlh's runner

    def same_as(self, other: "Outcome") -> bool:
        """Two identical outcomes in a row stop the retries."""
        return (self.status, self.rc, self.reason) == (other.status, other.rc, other.reason)

    @property
    def preflight_check(self) -> str | None:
        """The machine-wide preflight check that failed, if that is why the op failed."""
        if self.rc != EXIT_PREFLIGHT or "PREFLIGHT_FAILED check=" not in self.reason:
            return None
        check = self.reason.split("PREFLIGHT_FAILED check=", 1)[1].split()[0]
        return check if check in MACHINE_CHECKS or check.startswith("import") else None

    def to_dict(self) -> dict:
        return {"status": self.status, "rc": self.rc, "elapsed_s": round(self.elapsed_s, 3),
                "reason": self.reason, "run_dir": str(self.run_dir) if self.run_dir else None,
                "rows_total": self.rows_total, "rows_success": self.rows_success,
                "notes": list(self.notes), "attempt": self.attempt,
                "start_s": round(self.start_s, 3), "import_s": round(self.import_s, 3)}

    @classmethod
    def from_dict(cls, data: dict, where: str = ".complete") -> "Outcome":
        f = Fields(data, where)
        status = f.str("status")
        if status not in STATUSES:
            raise f.error("status", " or ".join(STATUSES), status)
        run_dir = f.get("run_dir", None)
        if run_dir is not None and (not isinstance(run_dir, str) or "\0" in run_dir
                                    or len(run_dir.encode("utf-8", "replace")) > PATH_MAX):
            raise f.error("run_dir", "null or a path", run_dir)
        total = f.int("rows_total", 0, low=0)
        return cls(status=status, rc=f.int("rc"), elapsed_s=f.number("elapsed_s", low=0),
                   reason=f.str("reason", ""),
                   run_dir=Path(run_dir) if run_dir else None,
                   rows_total=total, rows_success=f.int("rows_success", 0, low=0, high=total),
                   notes=f.strs("notes", []), attempt=f.int("attempt", 1, low=1),
                   start_s=f.number("start_s", 0.0, low=0),
                   import_s=f.number("import_s", 0.0, low=0))


PATH_MAX = 4096          # the longest path Linux takes


def judge(attempt: Attempt, op_timeout_s: float) -> Outcome:
    """The status of one attempt, from its exit status and its run directory."""
    out = Outcome(FAIL, attempt.rc, attempt.elapsed_s, attempt.message, attempt.run_dir,
                  start_s=attempt.start_s, import_s=attempt.import_s)
    run = load_run_or_none(attempt.run_dir)        # read once: rows, status, reason
    rows = run.rows if run is not None else []
    unfinished = _unfinished(run)
    out.rows_total = len(rows)
    out.rows_success = sum(1 for r in rows if r.status == SUCCESS)
    if attempt.rc == TIMEOUT_RC:
        out.status = TIMEOUT
        out.reason = (f"{stall_reason(attempt.stalled_s)} (the op timeout is "
                      f"{op_timeout_s:g} s): a hang, not a verdict on the op"
                      if attempt.stalled_s else
                      f"no result within the op timeout ({op_timeout_s:g} s): a time problem, "
                      f"not a verdict on the op")
    elif (run is not None and run.info.get("status") == "poisoned") or \
            (attempt.rc == EXIT_POISONED and not left_running(run)):
        # (5 and run.json still `running`: the op's own os._exit(5), a crash, below)
        out.status = POISONED
        out.reason = _marker_reason(rows, (markers.DEVICE_POISONED, markers.CAPTURE_POISONED)) \
            or attempt.message or "the device became unusable"
    elif attempt.rc < 0 or attempt.rc == CRASH_RC or attempt.rc > 128 or \
            attempt.rc not in (EXIT_OK, EXIT_FAILED_CASES, 2, EXIT_PREFLIGHT):
        out.status = CRASH
        out.reason = _crash_reason(attempt)
    elif unfinished:
        out.status = CRASH
        out.reason = f"the run did not finish ({unfinished})"
    elif run is not None and run.lost:       # run.json counts rows its results file lacks
        out.status = CRASH
        out.reason = f"its results were not all written ({run.lost})"
    elif attempt.rc in (EXIT_OK, EXIT_FAILED_CASES) and rows:
        failed = [r for r in rows if r.status == FAILED]
        skipped = [r for r in rows if r.status == SKIPPED]
        if failed:
            out.status = FAIL
            out.reason = f"{len(failed)} of {len(rows)} cases failed: {_row_reason(failed[0])}"
        elif out.rows_success:
            out.status = PASS
            out.reason = ""
            if skipped:
                out.notes.append(f"partial_skip={len(skipped)}")
        else:
            out.status = SKIP
            out.reason = skipped[0].reason if skipped else "no case"
    elif attempt.rc in (EXIT_OK, EXIT_FAILED_CASES):
        out.reason = attempt.message or "the op yielded no case"
    if out.status != PASS and not out.reason:
        out.reason = f"exit status {attempt.rc} and no error line (see {attempt.log.name})"
    _count_markers(out, rows)
    inputs_s = run.info.get("inputs_s") if run is not None else None
    if slow_inputs(inputs_s, attempt.elapsed_s):
        out.notes.append(f"inputs={inputs_s:.0f}s")
    if attempt.memory_held:          # the worker was replaced before the next op
        out.notes.append(f"memory_held={attempt.memory_held / GIB:.1f}GiB")
    if attempt.state_changed:        # so was it here
        out.notes.append(f"process_state={','.join(attempt.state_changed)}")
    return out


def slow_inputs(inputs_s, elapsed_s: float) -> bool:
    """Whether building the op's inputs took most of its time (5 s or more, at least half):
    worth a note, since no kernel of the op is slow then."""
    return is_number(inputs_s) and inputs_s >= 5.0 and inputs_s >= 0.5 * elapsed_s


@dataclass(frozen=True)
class Settled:
    """What an earlier step of the same op found out about running it, for a later step to
    start from instead of finding it out again: the op's own dtypes where the requested ones
    left it nothing (a dtype fallback or rescue), event timing where graph timing crashed.
    A screen's side B and timed pair start where side A settled (and B's timed run where A's
    did), so they do not repeat A's failed first attempts — a graph-timed attempt that
    crashes can take a whole op timeout, holding the device — and a timed pair uses one
    timer on both sides."""
    own_dtypes: bool = False
    timer: str | None = None

    @classmethod
    def of(cls, *outcomes: Outcome | None) -> "Settled":
        notes = {n for outcome in outcomes if outcome is not None for n in outcome.notes}
        return cls(own_dtypes=bool(notes & {"dtype_fallback", "dtype_rescue"}),
                   timer="event" if "timer_fallback=event" in notes else None)

    def note(self) -> str:
        """`settled_by_a=dtypes,timer`: what a later step took over (notes of ops_status.csv)."""
        taken = [name for name, on in (("dtypes", self.own_dtypes), ("timer", self.timer))
                 if on]
        return f"settled_by_a={','.join(taken)}" if taken else ""


def dtype_problem(outcome: Outcome) -> bool:
    """Whether the requested dtypes left the op without a runnable case."""
    text = outcome.reason.lower()
    return outcome.status in (SKIP, FAIL) and outcome.rows_success == 0 and "dtype" in text


def dtype_rescue(outcome: Outcome) -> bool:
    """Whether an op that ran with requested dtypes gets one more try with its own: it
    FAILed without a single successful case (its reason not naming a dtype: that is
    `dtype_problem`). A real failure at the requested dtype fails again in the rescue (its
    cases include that dtype where the op supports it), so the rescue does not hide it."""
    return outcome.status == FAIL and outcome.rows_success == 0 and \
        not outcome.preflight_check


def left_running(run) -> bool:
    """Whether a stored run's run.json still says `running`: its process vanished without
    finalising it (an op's os._exit), so its exit status is the op's, not one of zlh's."""
    return run is not None and run.info.get("status") == "running"


def _unfinished(run) -> str:
    """`status (reason)` of a stored run whose run.json says it did not finish — still
    `running` (its process vanished: os._exit), `interrupted` or `crashed` — or ""."""
    status = run.info.get("status") if run is not None else None
    if status not in ("running", "interrupted", "crashed"):
        return ""
    reason = run.info.get("reason")
    return f"run.json: {status}" + (f", {reason}" if reason else "")


def _row_reason(row) -> str:
    detail = next((markers.parse_marker(m)[1].get("detail") for m in row.markers
                   if markers.marker_name(m) == markers.CASE_FAILED), None)
    where = f"{row.dtype} {row.shape_detail}"
    return f"{where}: {row.reason}" + (f" ({detail})" if detail else "")


def _marker_reason(rows, names) -> str:
    for row in rows:
        for line in row.markers:
            if markers.marker_name(line) in names:
                return line
    return ""


def _crash_reason(attempt: Attempt) -> str:
    rc = attempt.rc
    number = None if rc == CRASH_RC else -rc if rc < 0 else rc - 128 if rc > 128 else None
    if number:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"the process died ({name})" + (f": {attempt.message}" if attempt.message else "")
    if rc == CRASH_RC:
        return "the process ended without a result" + \
            (f": {attempt.message}" if attempt.message else "")
    return f"the process ended without a result (rc={rc})" + \
        (f": {attempt.message}" if attempt.message else "")


def _count_markers(out: Outcome, rows) -> None:
    names = [markers.marker_name(m) for r in rows for m in r.markers]
    for name, note in ((markers.NO_GRAPH, "graph_fallbacks"),
                       (markers.REPLAY_FALLBACK, "replay_fallbacks")):
        if names.count(name):
            out.notes.append(f"{note}={names.count(name)}")
