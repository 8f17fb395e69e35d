"""`zlh ab`: paired runs with pinned configs, the caliber guard, rounds, and the report.

Every run is a fresh `zlh bench` process (its own Triton cache, its own imports) or a job in its
side's persistent worker (a `rounds.RoundRunner`), so the two sides share nothing but the record:
round 1's A records (round 0's, made alone, where the runner says so: turns, which runs a round's
two sides at once, and twins), every other run replays that record. Rounds alternate which side
runs first. The verdicts are decided over every shape of the A/B (family.py)."""
from __future__ import annotations

import collections
import contextlib
import subprocess
import time
from pathlib import Path

from .. import telemetry
from ..common import markers, style
from ..common.errors import EXIT_CALIBER, EXIT_FAILED_CASES, EXIT_OK, UsageError
from ..common.files import atomic_write_json, check_output_dir, check_path_text
from ..common.log import Echo
from ..compile.ir import fingerprint
from ..common.lock import held_fds, holding
from ..launch import launcher
from ..measure import sequential
from ..run.options import BenchOptions
from ..store.reader import REPLAY_PARTIAL_ENV, StoredRun, load_run
from ..store.rundir import safe_name
from .compare import compare_runs
from .family import Family
from .guard import CaliberCheck, check_caliber, guard, later_rounds_pass, reference_run
from .pairing import broken_by_b
from .preflight import (ROOT_IN_USE, check_new_root, check_plan, check_replay,
                        check_replay_caliber, check_replay_shapes)
from .render import render_terminal
from .report import ABReport, write_reports
from .rounds import choice_line, read_choice, side_order
from .runs import (RunCounter, RunOutcome, append_status, ended_by, outcome_of,
                   recorded_rc)
from .sides import ABPlan, Side, env_for

NO_IR_DIFF = "SWITCH_NO_IR_DIFF"
BROKEN_BY_B = "BROKEN_BY_B"
# A run past the timeout gets SIGTERM (zlh bench then writes run.json, records and IR), and
# SIGKILL after this long.
GRACE_S = 15.0


def run_side(plan: ABPlan, op: str, number: int, side: Side,
             replay_from: Path | None) -> RunOutcome:
    """One `zlh bench` in a fresh process group; a timeout kills the whole group (rc 124)."""
    out = plan.root / safe_name(op) / f"r{number}_{side.label}"
    out.mkdir(parents=True, exist_ok=True)
    options = plan.round_options(op, number, out, replay_from, side)
    cmd = [side.python, "-m", "harness", "bench", op, *options.to_argv()]
    started = time.time()
    with open(out / "bench.log", "w", encoding="utf-8") as log:
        launcher.write_command(log, cmd)
        # the root's lock goes with the run: the root stays held until the run has ended
        child = launcher.start(cmd, env_for(side, plan.options.backend), stdout=log,
                               stderr=subprocess.STDOUT, pass_fds=held_fds())
        try:
            rc = child.finish(plan.timeout_s, grace_s=GRACE_S, log=log)
        except BaseException as exc:   # Ctrl-C or SIGTERM of zlh ab: the run was stopped too
            with contextlib.suppress(Exception):     # status.tsv still gets its row
                append_status(plan.root, op, outcome_of(out, number, side.label,
                                                        ended_by(exc), started))
            raise
    plan.ran(op, side, out)          # (a stop of zlh ab was raised above)
    outcome = outcome_of(out, number, side.label, recorded_rc(rc), started)
    append_status(plan.root, op, outcome)
    return outcome


def run_ab(plan: ABPlan, echo: Echo = print,
           progress: Echo | None = None) -> tuple[list[ABReport], int]:
    """Every input checked, then both sides for every op, rounds, guard, report, the root
    held throughout (common/lock.py). Returns (reports, exit code)."""
    with ab_root(plan, "ab"):
        return run_rounds(plan, echo, progress)


@contextlib.contextmanager
def ab_root(plan: ABPlan, verb: str):
    """Every input checked, then the root made, held by this command (`verb`) for the block
    and checked again under the lock (no other A/B began there meanwhile), its plan.json
    written. A second command on the root is one line naming this one (exit 2)."""
    check_plan(plan)
    made = not plan.root.exists()
    check_output_dir(plan.root, "--root", create=True)
    with holding(plan.root, verb, ROOT_IN_USE, made):
        check_new_root(plan.root)
        atomic_write_json(plan.root / "plan.json", plan.to_dict())
        yield


def held_root(root: Path, verb: str = "ab"):
    """A root made now (when missing) and held for the block: `zlh ab --replay` and
    `zlh ab RUN_A RUN_B --root`."""
    made = not Path(root).exists()
    check_output_dir(root, "--root", create=True)
    return holding(root, verb, ROOT_IN_USE, made)


def run_rounds(plan: ABPlan, echo: Echo = print,
               progress: Echo | None = None) -> tuple[list[ABReport], int]:
    """Both sides for every op, rounds, guard, report, in a root made and held (ab_root)."""
    family, code = Family(plan.alpha), EXIT_OK      # its reports, decided over every shape
    done: list[str] = []                             # the ops whose rounds ended
    write_reports(plan.root, family.reports, done=done)
    records = len(plan.ops) if record_alone(plan.runner) else 0    # round 0: the records
    counter = RunCounter(len(plan.ops) * 2 * plan.rounds + records, progress)
    with _watch(plan), _closing(plan.runner):     # telemetry.tsv beside status.tsv
        for op in plan.ops:
            try:
                report, op_code = OpAB(plan, op, echo, counter).run()
            finally:
                plan.caches.drop(op)
            code = max(code, op_code)
            done.append(op)
            if report is not None:
                family.add(report)
            # rewritten after every op: an interrupted A/B keeps the ops it finished
            write_reports(plan.root, family.reports, done=done)
            if report is not None:
                echo(render_terminal(report, colour=style.colour()))
    for line in family.withdrawn():
        echo(f"WARNING {line}")
    return family.reports, code


def together(runner, op: str | None = None):
    """The runner's `run_together` (both sides of a round at once, in turns), or None: it has
    none, or its `in_turns(op)` says `op`'s sides run one after the other."""
    both = getattr(runner, "run_together", None)
    in_turns = getattr(runner, "in_turns", None)
    if both is None or op is None or in_turns is None:
        return both
    return both if in_turns(op) else None


def record_alone(runner) -> bool:
    """Whether the runner makes each op's record alone first, as round 0 (turns, twins), so
    that every round compared replays it on both sides; a runner that does not say, where it
    runs a round's two sides at once."""
    said = getattr(runner, "record_alone", None)
    return together(runner) is not None if said is None else bool(said)


@contextlib.contextmanager
def _closing(runner):
    """A persistent runner's workers stop when the A/B ends, however it ends."""
    try:
        yield
    finally:
        if runner is not None:
            runner.close()


def _watch(plan: ABPlan):
    return telemetry.watch_for(plan.root, plan.options.backend, plan.options.device,
                               plan.options.telemetry_interval)


class OpAB:
    """One op's rounds: round 1 (A records, B replays), guard, IR check, later rounds."""

    def __init__(self, plan: ABPlan, op: str, echo: Echo, counter: RunCounter):
        self.plan, self.op, self.echo, self.counter = plan, op, echo, counter
        self.outcomes: dict[tuple[int, str], RunOutcome] = {}

    def run(self) -> tuple[ABReport | None, int]:
        plan, op = self.plan, self.op
        alone = record_alone(self.plan.runner)
        record_round = 0 if alone else 1        # (turns, twins) the record made alone first
        if not self._run(record_round, plan.a, None):
            return None, self.outcomes[(record_round, "A")].exit_code()
        record = self.outcomes[(record_round, "A")].run_dir
        choice = read_choice(plan.root / safe_name(op))     # (--round-process auto)
        if choice is not None:
            self.echo(choice_line(op, choice))
        failed = self._round(1, record) if alone else (
            None if self._run(1, plan.b, record) else self.outcomes[(1, "B")])
        if failed is not None:
            return None, failed.exit_code()
        own_budget = alone and op in plan.op_budgets       # (--round-budget auto)
        run_a = reference_run(record, self.outcomes[(1, "A")].run_dir, own_budget, op,
                              plan.allow_caliber_mismatch, self.echo)
        run_b = load_run(self.outcomes[(1, "B")].run_dir)
        check = check_caliber(run_a, run_b, op) if run_a is not None else None
        if check is None or not guard(check, op, plan.allow_caliber_mismatch, self.echo):
            return None, EXIT_CALIBER
        verdict = ir_verdict(self.outcomes[(1, "A")].run_dir, run_b.path, plan.scrub)
        rounds, number = self._rounds_after(verdict), 2
        while number <= rounds:
            failed = self._round(number, record)
            if failed is not None:    # its runs stay on disk; the op has no report
                return None, failed.exit_code()
            if plan.auto is not None and number == plan.auto.min_rounds:
                rounds = self._planned(number, rounds)
            number += 1
        pairs = [(load_run(self.outcomes[(n, "A")].run_dir),
                  load_run(self.outcomes[(n, "B")].run_dir)) for n in range(1, rounds + 1)]
        if not later_rounds_pass(run_a, pairs, op, plan.allow_caliber_mismatch, self.echo,
                                 2 if own_budget or not alone else 1,
                                 "round 1's A" if own_budget else "the record"):
            return None, EXIT_CALIBER
        report, code = build_report(pairs, plan.alpha, verdict, check,
                                    (plan.a.description, plan.b.description),
                                    plan.noise_floor, self.echo, plan.auto)
        if report is not None and choice is not None:
            report.summary["round_process"] = choice
        return report, code

    def _round(self, number: int, record: Path) -> RunOutcome | None:
        """Both sides of round `number` in ABBA order (at once, where the runner takes
        turns), replaying `record`; the first failed outcome, or None."""
        sides = tuple(self.plan.a if label == "A" else self.plan.b
                      for label in side_order(number))
        both = together(self.plan.runner, self.op)
        if both is None:
            for side in sides:
                if not self._run(number, side, record):
                    return self.outcomes[(number, side.label)]
            return None
        outcomes = both(self.plan, self.op, number, sides, record)
        failed = [outcome for outcome in outcomes if not self._took(outcome)]
        return failed[0] if failed else None

    def _planned(self, pilot: int, cap: int) -> int:
        """--rounds auto, after the pilot rounds: the op's rounds (two-stage design), said in
        one line; the runs it will not need leave the progress count."""
        pairs = [(load_run(self.outcomes[(n, "A")].run_dir),
                  load_run(self.outcomes[(n, "B")].run_dir)) for n in range(1, pilot + 1)]
        rows = compare_runs(pairs, self.plan.alpha).rows
        deltas = [(r.rounds or {}).get("deltas_pct") or [] for r in rows]
        rounds = min(cap, self.plan.auto.planned(deltas, self.plan.alpha))
        widest = max((sequential.rounds_needed(sequential.pilot_sd_pct(d, pilot), pilot,
                                               self.plan.auto.target_pct, self.plan.alpha)
                      for d in deltas), default=pilot)
        self.echo(f"{self.op}: rounds auto: {rounds} rounds after a pilot of {pilot} (the "
                  f"widest of {len(rows)} shapes needs {widest} for a half-width <= "
                  f"{self.plan.auto.target_pct:g} %" + (f"; capped at {cap}" if widest > cap
                                                         else "") + ")")
        self.counter.skipped(2 * (cap - rounds))
        return rounds

    def _run(self, number: int, side: Side, replay_from: Path | None) -> bool:
        runner = self.plan.runner
        return self._took(runner.run(self.plan, self.op, number, side, replay_from)
                          if runner is not None else run_side(self.plan, self.op, number, side,
                                                              replay_from))

    def _took(self, outcome: RunOutcome) -> bool:
        """A run's outcome kept and counted; False (said) when it failed."""
        number, label = outcome.round, outcome.side
        self.outcomes[(number, label)] = outcome
        self.counter.finished(self.op, outcome)
        lost = outcome.turns_lost()
        if lost:
            self.echo(f"WARNING {self.op}: round {number} side {label}: samples taken alone "
                      f"from where the turns with the other side broke ({lost})")
        problem = outcome.problem()
        if problem is None:
            return True
        self.echo(f"!!! {self.op}: round {number} side {label} failed ({problem}): "
                  f"{outcome.last_words() or 'no output'}; no report for this op")
        return False

    def _rounds_after(self, verdict: str) -> int:
        plan = self.plan
        if verdict != "NO_IR_DIFF":
            return plan.rounds
        self.echo(markers.marker(NO_IR_DIFF, op=self.op, switch=plan.switch,
                                 detail=f"identical generated code for A[{plan.a.description}] "
                                        f"and B[{plan.b.description}]; further rounds would "
                                        f"measure noise"))
        if plan.allow_no_ir_diff:
            return plan.rounds
        self.counter.skipped(2 * (plan.rounds - 1))
        return 1


def build_report(pairs: list[tuple[StoredRun, StoredRun]], alpha: float, verdict: str,
                 check: CaliberCheck, labels: tuple[str, str], noise_floor, echo: Echo,
                 auto=None) -> tuple[ABReport | None, int]:
    """One op's report from its rounds' (A, B) runs, round 1 first (also `zlh ab --rescore`):
    the IR verdict, the guard's problems, the sides' labels, the noise floor's labels,
    BROKEN_BY_B; no report when nothing paired. `auto`: the AutoRounds the rounds ran under
    (their two-stage test)."""
    report = compare_runs(pairs, alpha, auto)
    report.verdict = ({"NO_IR_DIFF": "SWITCH_NO_IR_DIFF: identical generated code; the "
                       "deltas are this machine's noise floor"}.get(verdict, verdict))
    report.caliber_problems = check.problems
    report.sides["A"]["label"] = labels[0] or "A"
    report.sides["B"]["label"] = labels[1] or "B"
    if noise_floor is not None:
        noise_floor.label(report)
    report.broken_by_b = sorted({case for a, b in pairs for case in broken_by_b(a, b)})
    code = outcome_code(report, pairs[0][0], pairs[0][1], echo)
    return (report if report.rows else None), code    # nothing paired: no report


def outcome_code(report: ABReport, run_a: StoredRun, run_b: StoredRun, echo: Echo) -> int:
    """1 when nothing paired (nothing compared is not a result), when B failed cases A ran
    (BROKEN_BY_B) or when outputs differ; else 0."""
    if report.broken_by_b:
        shown = ", ".join(report.broken_by_b[:5]) + (" …" if len(report.broken_by_b) > 5 else "")
        echo(f"!!! {BROKEN_BY_B} op={report.op}: B failed {len(report.broken_by_b)} case(s) A "
             f"ran: {shown}")
    if not report.rows:
        echo(f"!!! {report.op}: no case paired between A and B "
             f"({why_unpaired(report, run_a, run_b)}); nothing was compared")
        return EXIT_FAILED_CASES
    if report.output_mismatches:
        echo(f"!!! {report.op}: outputs differ between A and B in "
             f"{len(report.output_mismatches)} case(s) (OUTPUT_MISMATCH in the report)")
        return EXIT_FAILED_CASES
    return EXIT_FAILED_CASES if report.broken_by_b else EXIT_OK


def why_unpaired(report: ABReport, run_a: StoredRun, run_b: StoredRun) -> str:
    empty = [side for side, run in (("A", run_a), ("B", run_b)) if not run.rows]
    if empty:
        return f"side {' and '.join(empty)} has no result row"
    reasons = collections.Counter(u["reason"] for u in report.unpaired)
    return "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(3)) or "none"


def ir_verdict(dir_a: Path, dir_b: Path, scrub) -> str:
    """IR_CHANGED / NO_IR_DIFF / NO_IR (either side compiled nothing we captured)."""
    fa = fingerprint.fingerprint(dir_a, scrub)
    fb = fingerprint.fingerprint(dir_b, scrub)
    if fa is None or fb is None:
        return "NO_IR"
    return "NO_IR_DIFF" if fa == fb else "IR_CHANGED"


def compare_existing(dir_a, dir_b, allow_caliber_mismatch: bool, echo: Echo,
                     alpha: float = 0.05, scrub=(),
                     allow_partial: bool = False) -> tuple[ABReport | None, int]:
    for side, path in (("RUN_A", dir_a), ("RUN_B", dir_b)):
        check_path_text(path, side)
    if Path(dir_a).resolve() == Path(dir_b).resolve():
        raise UsageError(f"{dir_a} and {dir_b} are the same run directory; compare two runs")
    run_a, run_b = load_run(dir_a), load_run(dir_b)
    check = check_caliber(run_a, run_b)
    if not guard(check, run_a.op, allow_caliber_mismatch, echo, allow_partial):
        return None, EXIT_CALIBER
    report = compare_runs([(run_a, run_b)], alpha)
    report.caliber_problems = check.problems
    report.verdict = ir_verdict(run_a.path, run_b.path, list(scrub))
    report.broken_by_b = broken_by_b(run_a, run_b)
    return report, outcome_code(report, run_a, run_b, echo)


def replay_against(run_a, given: dict, root: Path, timeout_s: float, echo: Echo,
                   allow_caliber_mismatch: bool = False, scrub=(),
                   allow_partial: bool = False,
                   noise_floor=None) -> tuple[ABReport | None, int]:
    """`zlh ab --replay RUN_A`: side B now, in a fresh process, replaying A with A's settings
    (`given`: flat bench options named on the command line, which replace A's). Everything
    is checked before the process starts; the root is held until its report is written
    (labelled with `noise_floor`, a calibrate.noise.NoiseFloor, when given)."""
    stored = load_run(run_a)
    base = BenchOptions.from_run(stored.info, str(run_a))
    options = BenchOptions.from_flat(**{**base.to_flat(), **given})
    if not allow_caliber_mismatch:
        check_replay_caliber(run_a, base, options, given)
    op = stored.info.get("op")
    if not isinstance(op, str):
        raise UsageError(f"{run_a}: run.json names no op")
    partial = {REPLAY_PARTIAL_ENV: "1"} if allow_partial else {}   # side B's bench allows it
    # side B's later placements behind the spacers A's were behind (from_run leaves them out)
    options = options.replace(placement_seed=(stored.info.get("options") or {}).get(
        "placement_seed"))
    plan = ABPlan(ops=[op], a=Side("A", description=str(run_a)),
                  b=Side("B", description="now", env=partial), options=options, root=root,
                  timeout_s=timeout_s, noise_floor=noise_floor, draw_placements=False)
    check_replay(stored, options, root, allow_partial, plan.b)
    if not allow_caliber_mismatch:
        check_replay_shapes(run_a, options)
    with held_root(root):
        check_new_root(root)                # under the lock: no other A/B began there
        with _watch(plan):
            try:
                outcome = run_side(plan, op, 1, plan.b, Path(run_a))
            finally:
                plan.caches.drop(op)         # one run: nothing loads what it kept
        problem = outcome.problem()
        if problem is not None:
            echo(f"!!! {op}: side B failed ({problem}): {outcome.last_words() or 'no output'}")
            return None, outcome.exit_code()
        echo(f"side B: {outcome.run_dir} ({outcome.elapsed_s:.1f} s)")
        report, code = compare_existing(run_a, outcome.run_dir, allow_caliber_mismatch, echo,
                                        scrub=scrub, allow_partial=allow_partial)
        if report is not None:
            if noise_floor is not None:
                noise_floor.label(report)
            write_reports(root, [report])
        return report, code
