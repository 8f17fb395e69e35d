"""The caliber guard: may two runs be compared at all?

Every caliber field must match, except autotune_mode (record vs replay is the point); both
sides recording is refused, a missing identity is refused, sides pinned to different records
are refused, and so are runs of different ops, and a compiler build that changed between
runs of one interpreter (store/compiler.py). A side that recorded on a shared tuner cache
gets a warning, and so do different interpreters running one compiler build. A run that did
not complete (running, abandoned, interrupted, crashed, failed, poisoned) is listed under
`partial`: refused unless --allow-partial. `guard` prints a check's findings and says whether
the report may go on; `later_rounds_pass` checks every later round against the run the
rounds are held to (`reference_run`: the record, or round 1's A where the rounds run at a
budget of their own, the record then held to it in all but the budget).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..common.log import Echo
from ..compile.autotune import records_digest
from ..store.compiler import compiler_findings
from ..store.reader import COMPLETE, StoredRun, load_run, status_detail
from .round_budget import BUDGET_CALIBER


@dataclass
class CaliberCheck:
    problems: list[str] = field(default_factory=list)   # refusals
    warnings: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)    # sides that did not complete

    @property
    def ok(self) -> bool:
        return not self.problems


def check_caliber(a: StoredRun, b: StoredRun, label: str | None = None,
                  names: tuple[str, str] = ("side A", "side B"),
                  ignore: tuple[str, ...] = ()) -> CaliberCheck:
    """What refuses, warns about or marks partial a comparison of `a` with `b`; `names`: how
    the two runs are called in its lines (a later round checks a run of either side against
    the record); `ignore`: caliber fields not compared (besides autotune_mode)."""
    label = label or a.op
    check = CaliberCheck()
    for side, run in zip(names, (a, b)):
        if run.status != COMPLETE:
            reason = status_detail(run)
            check.partial.append(f"[status] {label}: {side} did not complete (status "
                                 f"{run.status}{', ' + reason if reason else ''}): {run.path}")
    cal_a, cal_b = a.caliber, b.caliber
    for side, run, cal in zip(names, (a, b), (cal_a, cal_b)):
        if cal is None:
            check.problems.append(f"!!! [caliber] {label}: {side} has no identity "
                                  f"({run.path}/run.json has no caliber)")
    if check.problems:
        return check
    for difference in cal_a.differences(cal_b, ignore=("autotune_mode", *ignore)):
        hint = (" (the library's tuning-space switches: the sides tuned over different "
                "config spaces)" if difference.field == "tuning_space" else "")
        check.problems.append(f"!!! [caliber] {label}: {difference.describe()}{hint}")
    if cal_a.card and cal_b.card and cal_a.card != cal_b.card:
        check.warnings.append(f"WARNING [caliber] {label}: the sides ran on different cards "
                              f"of one model (A={cal_a.card}, B={cal_b.card}): card-to-card "
                              f"spread is part of the difference")
    if (cal_a.autotune_mode, cal_b.autotune_mode) == ("record", "record"):
        check.problems.append(f"!!! [caliber] {label}: autotune_mode: both sides record — "
                              f"configs are not pinned; measure B again replaying A's "
                              f"configs, where B's compiler or switch is in effect: "
                              f"zlh ab --replay {shlex.quote(str(a.path))}")
    for side, cal in (("A", cal_a), ("B", cal_b)):
        if cal.autotune_mode == "record" and str(cal.tuner_cache).startswith("shared"):
            check.warnings.append(f"WARNING [caliber] {label}: side {side} recorded on a shared "
                                  f"tuner cache {cal.tuner_cache}")
    source_a, source_b = replay_source(a), replay_source(b)
    if not _same_record(source_a, source_b):
        check.problems.append(f"!!! [caliber] {label}: configs not pinned to the same record: "
                              f"A uses {_describe(source_a)}, B uses {_describe(source_b)}")
    problems, warnings = compiler_findings(label, a.info, b.info)
    check.problems += problems
    check.warnings += warnings
    if a.op != b.op:
        check.problems.append(f"!!! [caliber] {label}: op differs: A={a.op}, B={b.op}")
    return check


def replay_source(run: StoredRun) -> tuple[str | None, str]:
    """(digest of its records file, run id) of the record whose configs a run used — itself
    when it recorded. The digest lets runs copied or moved elsewhere still pair; the run id
    (the record directory's name) stands in where a digest cannot be had."""
    if run.autotune_mode == "replay":
        source = Path(run.info.get("autotune_replay_from") or run.path)
        digest = run.info.get("autotune_replay_records_sha256") or records_digest(source)
    else:
        source, digest = run.path, records_digest(run.path)
    return digest, source.resolve().name


def _same_record(source_a: tuple[str | None, str], source_b: tuple[str | None, str]) -> bool:
    (digest_a, id_a), (digest_b, id_b) = source_a, source_b
    return digest_a == digest_b if digest_a and digest_b else id_a == id_b


def _describe(source: tuple[str | None, str]) -> str:
    digest, run_id = source
    return f"{run_id} (records {digest[:12]})" if digest else run_id


def reference_run(record: Path, first_a: Path, own_budget: bool, op: str, allow: bool,
                  echo: Echo) -> StoredRun | None:
    """The run every round is held to, loaded: the record; where the op's rounds run at a
    budget of their own (--round-budget auto), round 1's A, the record held to it in
    everything but the budget (BUDGET_CALIBER). None where the guard refuses."""
    if not own_budget:
        return load_run(record)
    first = load_run(first_a)
    check = check_caliber(load_run(record), first, op, names=("the record", "round 1's A"),
                          ignore=BUDGET_CALIBER)
    return first if guard(check, op, allow, echo) else None


def later_rounds_pass(run_a: StoredRun, pairs: list[tuple[StoredRun, StoredRun]], op: str,
                      allow: bool, echo: Echo, from_round: int = 2,
                      reference: str = "the record") -> bool:
    """Every run of rounds `from_round`, … checked against `run_a` (the record: round 1's A,
    or round 0's where it was made alone; round 1's A where the rounds run at a budget of
    their own, and in `zlh ab --rescore`), called `reference` in its lines; False at the
    first one the guard refuses."""
    for number, (later_a, later_b) in enumerate(pairs[from_round - 1:], start=from_round):
        for side, later in (("A", later_a), ("B", later_b)):
            late = check_caliber(run_a, later, f"{op} round {number} side {side}",
                                 names=(reference, "this run"))
            late.warnings = []          # round 1 already said them
            if not guard(late, op, allow, echo):
                return False
    return True


def guard(check: CaliberCheck, op: str, allow: bool, echo: Echo,
          allow_partial: bool = False) -> bool:
    """Print the guard's findings; False when the report must be refused."""
    for line in check.warnings + check.problems:
        echo(line)
    for line in check.partial:
        echo(("WARNING " if allow_partial else "!!! ") + line)
    remedies = []
    if check.problems and not allow:
        remedies.append("--allow-caliber-mismatch once sure the runs are comparable")
    if check.partial and not allow_partial:
        remedies.append("--allow-partial to compare the cases an unfinished run measured")
    if remedies:
        echo(f"!!! [caliber] {op}: refusing to report; add {' or '.join(remedies)}")
        return False
    return True
