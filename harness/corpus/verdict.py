"""A screen's verdict for one op, from the run directories of its two sides.

Decided in this order:

1. NO_ROWS     a side ended without a SUCCESS case (crash, timeout, preflight, every case
               failed or skipped): fix runnability first; a timeout is a time problem.
2. NO_TRITON   rows measured but no IR on a side: nothing went through Triton, so the switch
               cannot matter here.
3. NO_IR_DIFF  identical fingerprints (after scrub): the measured range is this machine's
               noise floor for the op, never the switch's gain.
4. IR_CHANGED  otherwise; the note gives kernels and convert_layout counts A->B, and the
               measured kernels whose registers, spills, shared memory, warps, stages or
               CTAs changed (`k: regs 128->96`, two at most).

Besides, BROKEN_BY_B flags cases B failed that A ran, or never reached because its process
died (a change that breaks shapes must never look like "no change"), and SETUP_IR_CHANGED
notes a change in set-up kernels only.

The verdict comes from the code alone, so the two runs it reads may be untimed (`zlh screen
--timing changed|none`: each case run once, caliber timer `none`); the median delta and the
range then come from a separate timed pair (`timed`), or there is none and the row says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..ab.compare import compare_runs
from ..ab.pairing import broken_by_b
from ..common.errors import UsageError
from ..common.files import read_text
from ..common.tsv import tsv_text as table_text
from ..compile.ir.fingerprint import (SETUP, convert_layout_total, fingerprint,
                                      missing_ir_files)
from ..compile.ir.kernel_meta import changes_note
from ..store.caliber import UNTIMED, Caliber
from ..store.reader import StoredRun, load_run
from ..store.results import FAILED, SUCCESS
from .outcome import CRASH, FAIL, PASS, POISONED, SKIP, TIMEOUT, Outcome

NO_ROWS, NO_TRITON, NO_IR_DIFF, IR_CHANGED = "NO_ROWS", "NO_TRITON", "NO_IR_DIFF", "IR_CHANGED"
VERDICTS = (IR_CHANGED, NO_IR_DIFF, NO_TRITON, NO_ROWS)
BROKEN_BY_B = "BROKEN_BY_B"
DIED = (CRASH, POISONED)        # a side's process died under its cases: not a time problem
SETUP_IR_CHANGED = "SETUP_IR_CHANGED"


@dataclass
class Verdict:
    op: str
    verdict: str
    note: str = ""
    rows_a: int = 0
    rows_b: int = 0
    failed_a: int = 0
    failed_b: int = 0
    kernels_a: int | None = None
    kernels_b: int | None = None
    cvt_a: int | None = None
    cvt_b: int | None = None
    elapsed_a: float | None = None
    elapsed_b: float | None = None
    median_delta_pct: float | None = None
    delta_min_pct: float | None = None
    delta_max_pct: float | None = None
    broken_by_b: list[str] = field(default_factory=list)
    caliber: dict = field(default_factory=dict)
    timed: bool = False          # the delta and range come from a timed pair

    @property
    def broken(self) -> bool:
        return bool(self.broken_by_b)

    def shown_range(self) -> str:
        """The printing rule: no range for NO_ROWS and NO_TRITON; NO_IR_DIFF's range is this
        machine's noise floor; IR_CHANGED shows the range and the median delta."""
        if self.verdict in (NO_ROWS, NO_TRITON):
            return ""
        if not self.timed and self.verdict == NO_IR_DIFF:
            return "not timed: no noise floor"
        if not self.timed:
            return "not timed"
        if self.median_delta_pct is None:
            return ""
        span = f"{_pct(self.delta_min_pct)} ~ {_pct(self.delta_max_pct)}"
        if self.verdict == NO_IR_DIFF:
            return f"noise floor {span}"
        return f"median {_pct(self.median_delta_pct)}, range {span}"


def _load(outcome: Outcome | None) -> StoredRun | None:
    if outcome is None or outcome.run_dir is None:
        return None
    try:
        return load_run(outcome.run_dir)
    except UsageError:
        return None


def decide(op: str, a: Outcome | None, b: Outcome | None, scrub=(),
           stage: str = "ttgir", timed: tuple | None = None) -> Verdict:
    """The verdict from sides `a` and `b`; the delta from them too, unless `timed` gives the
    (A, B) outcomes of a separate timed pair (`zlh screen --timing changed`)."""
    run_a, run_b = _load(a), _load(b)
    v = Verdict(op, NO_ROWS, elapsed_a=_plus(a, timed, 0), elapsed_b=_plus(b, timed, 1),
                caliber=(run_a.info.get("caliber") or {}) if run_a else {})
    for side, run in (("a", run_a), ("b", run_b)):
        if run is not None:
            setattr(v, f"rows_{side}", sum(1 for r in run.rows if r.status == SUCCESS))
            setattr(v, f"failed_{side}", sum(1 for r in run.rows if r.status == FAILED))
    v.broken_by_b = broken_by_b(run_a, run_b, b_died=b is not None and b.status in DIED)
    if not v.rows_a or not v.rows_b:
        v.note = _no_rows_note(a, b, v)
        return _flag(v)
    pair = (run_a, run_b) if timed is None else (_load(timed[0]), _load(timed[1]))
    v.timed = all(r is not None and _timed_rows(r) for r in pair)
    if v.timed:
        _deltas(v, *pair)
        v.caliber = pair[0].info.get("caliber") or v.caliber
    fp_a, fp_b = fingerprint(run_a.path, scrub, stage=stage), fingerprint(run_b.path, scrub,
                                                                          stage=stage)
    for side, run in (("a", run_a), ("b", run_b)):
        setattr(v, f"kernels_{side}", _kernels(run))
        setattr(v, f"cvt_{side}", convert_layout_total(run.path))
    lost = [s for s, run in (("A", run_a), ("B", run_b)) if missing_ir_files(run.path)]
    if lost:
        v.note = (f"side {' and '.join(lost)}: TTGIR files its ttgir/index.tsv lists are "
                  f"missing (a root copied without them?): no verdict from the code")
    elif fp_a is None or fp_b is None:
        v.verdict = NO_TRITON
        missing = " and ".join(s for s, fp in (("A", fp_a), ("B", fp_b)) if fp is None)
        ir_off = any(r.caliber and r.caliber.ir_capture is False for r in (run_a, run_b))
        interpreted = any(r.caliber and r.caliber.backend == "cpu" for r in (run_a, run_b))
        v.note = (f"no {stage} on side {missing}: " +
                  ("IR capture was off (--no-ir)" if ir_off else
                   "Triton's interpreter compiles nothing (cpu backend)" if interpreted else
                   "nothing went through Triton, the switch cannot act here"))
    elif fp_a == fp_b:
        v.verdict = NO_IR_DIFF
        v.note = ("identical generated code: the range is this machine's noise floor"
                  if v.timed else "identical generated code; not timed, so no noise floor")
        setup_a = fingerprint(run_a.path, scrub, part=SETUP)
        setup_b = fingerprint(run_b.path, scrub, part=SETUP)
        if setup_a != setup_b:
            v.note += f"; {SETUP_IR_CHANGED}: only set-up kernels differ"
    else:
        v.verdict = IR_CHANGED
        v.note = (f"kernels {_n(v.kernels_a)}->{_n(v.kernels_b)}, convert_layout "
                  f"{_n(v.cvt_a)}->{_n(v.cvt_b)}") + changes_note(run_a.path, run_b.path)
        if not v.timed:
            v.note += _untimed_note(timed)
    v.note += _cut_short(a, b, v) + (_timers_differ(*pair) if v.timed else "")
    return _flag(v)


def _plus(outcome: Outcome | None, timed, side: int) -> float | None:
    """A side's elapsed seconds, its timed run's added."""
    if outcome is None:
        return None
    extra = timed[side] if timed is not None else None
    return outcome.elapsed_s + (extra.elapsed_s if extra is not None else 0.0)


def _timed_rows(run: StoredRun) -> bool:
    """The run timed its cases and has a SUCCESS row."""
    if run.caliber is not None and run.caliber.timer == UNTIMED:
        return False
    return any(r.status == SUCCESS and r.gems is not None for r in run.rows)


def _untimed_note(timed) -> str:
    """Why an IR_CHANGED row has no delta."""
    if timed is None:
        return "; not timed (screen --timing none, or not timed yet: --resume times it)"
    parts = [f"side {side} {'not run' if o is None else o.status}"
             + (f": {o.reason}" if o is not None and o.reason else "")
             for side, o in (("A", timed[0]), ("B", timed[1]))
             if o is None or not o.rows_success]
    return "; timed pair without rows: " + ("; ".join(parts) or "no timed rows")


def _timers_differ(run_a: StoredRun, run_b: StoredRun) -> str:
    """A side timed with another timer than the other (one fell back to event timing after
    it crashed under graphs): its delta mixes two clocks — say so."""
    timers = [r.caliber.timer if r.caliber else None for r in (run_a, run_b)]
    if None in timers or timers[0] == timers[1]:
        return ""
    return f"; timers differ (A {timers[0]}, B {timers[1]}): the delta mixes two timers"


def _cut_short(a: Outcome, b: Outcome, v: Verdict) -> str:
    """A side that has rows but did not end PASS/FAIL (it timed out, crashed): the verdict
    covers only the cases it reached — say so."""
    parts = [f"side {side} {outcome.status} after {rows} case(s): the verdict covers those"
             for side, outcome, rows in (("A", a, v.rows_a), ("B", b, v.rows_b))
             if outcome is not None and outcome.status not in (PASS, FAIL, SKIP)]
    return "".join(f"; {p}" for p in parts)


def _flag(v: Verdict) -> Verdict:
    if v.broken_by_b:
        shown = ", ".join(v.broken_by_b[:3]) + (" …" if len(v.broken_by_b) > 3 else "")
        v.note = f"{BROKEN_BY_B} {len(v.broken_by_b)} case(s) B failed that A ran ({shown}); " \
                 + v.note
    return v


def _no_rows_note(a: Outcome | None, b: Outcome | None, v: Verdict) -> str:
    parts = []
    for side, outcome, rows in (("A", a, v.rows_a), ("B", b, v.rows_b)):
        if rows:
            continue
        if outcome is None:
            why = ("side A had no rows to replay" if not v.rows_a or a is None else
                   f"side A {a.status}: its run did not complete, so it left no record to replay")
            parts.append(f"side {side} not run ({why})")
        elif outcome.status == TIMEOUT:
            how = "stalled" if outcome.reason.startswith("stalled") else "timed out"
            parts.append(f"side {side} {how}: a time problem, not a verdict on the switch")
        else:
            parts.append(f"side {side} {outcome.status}: {outcome.reason or 'no SUCCESS case'}")
    return "; ".join(parts)


def _deltas(v: Verdict, run_a: StoredRun, run_b: StoredRun) -> None:
    try:
        summary = compare_runs([(run_a, run_b)]).summary
    except Exception:  # noqa: BLE001 - a verdict does not need the deltas
        return
    for key, attr in (("delta_median_pct", "median_delta_pct"),
                      ("delta_min_pct", "delta_min_pct"), ("delta_max_pct", "delta_max_pct")):
        value = summary.get(key)
        setattr(v, attr, value if isinstance(value, float) and math.isfinite(value) else None)


def _kernels(run: StoredRun) -> int | None:
    ir = run.info.get("ir") or {}
    return ir.get("measured_variants")


def _n(value) -> str:
    return "-" if value is None else str(value)


def _pct(value) -> str:
    return "-" if value is None else f"{value:+.2f}%"


TSV_COLUMNS = ("op", "op_file", "dtypes", "rows_a", "rows_b", "failed_a", "failed_b",
               "kernels_a", "kernels_b", "cvt_a", "cvt_b", "elapsed_a", "elapsed_b",
               "median_delta_pct", "timed", "verdict", "note", *Caliber.field_names())


def tsv_row(v: Verdict, op_file: str, dtypes: str) -> dict:
    row = {"op": v.op, "op_file": op_file, "dtypes": dtypes, "rows_a": v.rows_a,
           "rows_b": v.rows_b, "failed_a": v.failed_a, "failed_b": v.failed_b,
           "kernels_a": _n(v.kernels_a), "kernels_b": _n(v.kernels_b), "cvt_a": _n(v.cvt_a),
           "cvt_b": _n(v.cvt_b),
           "elapsed_a": "-" if v.elapsed_a is None else f"{v.elapsed_a:.3f}",
           "elapsed_b": "-" if v.elapsed_b is None else f"{v.elapsed_b:.3f}",
           "median_delta_pct": "-" if v.median_delta_pct is None or
           v.verdict in (NO_ROWS, NO_TRITON) or not v.timed else f"{v.median_delta_pct:.4f}",
           "timed": "yes" if v.timed else "no",
           "verdict": v.verdict, "note": v.note}
    for name in Caliber.field_names():
        value = v.caliber.get(name, "-")
        row[name] = value if not isinstance(value, dict) else \
            ",".join(f"{k}={x}" for k, x in sorted(value.items()))
    return row


def read_tsv(path: Path) -> list[dict]:
    """The rows of a screen table; UsageError naming the file when it cannot be read."""
    try:
        lines = read_text(path).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: screen table cannot be read "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    if not lines:
        return []
    header = lines[0].split("\t")
    if "op" not in header:
        raise UsageError(f"{path} is not a screen table (no op column)")
    rows = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise UsageError(f"{path}: line {number} has {len(cells)} fields, the header "
                             f"{len(header)} (a cut or edited table)")
        row = dict(zip(header, cells))
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in row["op"]):
            raise UsageError(f"{path}: line {number}: the op name holds a control character "
                             f"({row['op']!r:.60})")
        rows.append(row)
    return rows


def old_verdicts(path: Path, warn) -> dict[str, str]:
    """{op: verdict} of the table a rescore replaces; a damaged one is said and read as
    empty (the rescore writes it anew from the run directories)."""
    if not path.exists():
        return {}
    try:
        return {r.get("op", "-"): r.get("verdict", "-") for r in read_tsv(path)}
    except UsageError as exc:
        warn(f"WARNING: {exc.message}; previous verdicts shown as -")
        return {}


def tsv_text(rows: list[dict]) -> str:
    return table_text(TSV_COLUMNS, rows, none="-")
