"""`zlh ab`: paired runs with pinned configs, the caliber guard, rounds, and the report.

Every run is a fresh `zlh bench` process (its own Triton cache, its own imports), so the two
sides share nothing but the record: round 1's A records, every other run — B, and both sides
of later rounds — replays that record. Rounds alternate which side runs first.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import compare, fingerprint, markers
from .ab_report import render_terminal
from .atomic import atomic_write_json, atomic_write_text
from .errors import EXIT_CALIBER, EXIT_FAILED_CASES, EXIT_OK, UsageError
from .results import FAILED, SUCCESS
from .rundir import safe_name

ZLH_ROOT = str(Path(__file__).resolve().parent.parent)
STATUS_COLUMNS = ("round", "op", "side", "rc", "elapsed_s", "rows_ok", "rows_failed",
                  "replay_fallbacks", "graph_fallbacks", "poisoned", "run_dir")
NO_IR_DIFF = "SWITCH_NO_IR_DIFF"
TIMEOUT_RC = 124


@dataclass
class Side:
    label: str
    env: dict = field(default_factory=dict)      # overrides; None value unsets
    python: str = sys.executable
    description: str = ""


@dataclass
class ABPlan:
    ops: list[str]
    a: Side
    b: Side
    bench_args: list[str]
    root: Path
    rounds: int = 1
    timeout_s: float = 3600.0
    allow_caliber_mismatch: bool = False
    allow_no_ir_diff: bool = False
    scrub: list[str] = field(default_factory=list)
    alpha: float = 0.05
    switch_name: str = ""              # the variable a --switch flips, for markers

    @property
    def switch(self) -> str:
        return self.switch_name or f"A[{self.a.description}]_B[{self.b.description}]"


@dataclass
class RunOutcome:
    round: int
    side: str
    rc: int
    elapsed_s: float
    run_dir: Path | None
    log: Path | None = None

    def last_words(self) -> str:
        """The last line the run printed (the one-line error of a failed run)."""
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except (OSError, AttributeError):
            return ""
        return lines[-1].strip() if len(lines) > 1 else ""


def parse_assignments(items, what: str) -> dict:
    env = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"{what} expects NAME=VALUE, got {item!r}")
        env[name] = value
    return env


def sides_from_switch(spec: str) -> tuple[Side, Side]:
    """`NAME=a,b` -> side A with NAME=a, side B with NAME=b."""
    name, sep, values = spec.partition("=")
    parts = values.split(",")
    if not sep or not name or len(parts) != 2:
        raise UsageError(f"--switch expects NAME=A_VALUE,B_VALUE, got {spec!r}")
    return (Side("A", {name: parts[0]}, description=f"{name}={parts[0]}"),
            Side("B", {name: parts[1]}, description=f"{name}={parts[1]}"))


def _env_for(side: Side, backend_name: str | None = None) -> dict:
    """The parent's environment with the side's overrides; with a named backend, only that
    backend's visibility variables survive (another vendor's must not leak into the child)."""
    env = dict(os.environ)
    if backend_name:
        import backends
        try:
            env = backends.child_env(backends.get_backend(backend_name), env)
        except backends.UnknownBackend:
            pass                        # the child reports the unknown name itself
    for key, value in side.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ZLH_ROOT, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_side(plan: ABPlan, op: str, number: int, side: Side,
             replay_from: Path | None) -> RunOutcome:
    """One `zlh bench` in a fresh process group; a timeout kills the whole group (rc 124)."""
    out = plan.root / safe_name(op) / f"r{number}_{side.label}"
    out.mkdir(parents=True, exist_ok=True)
    cmd = [side.python, "-m", "harness.cli", "bench", op, *plan.bench_args, "--out", str(out)]
    if replay_from is not None:
        cmd += ["--replay", str(replay_from)]
    started = time.time()
    with open(out / "bench.log", "w", encoding="utf-8") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        backend = (plan.bench_args[plan.bench_args.index("--backend") + 1]
                   if "--backend" in plan.bench_args[:-1] else None)
        proc = subprocess.Popen(cmd, env=_env_for(side, backend), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=plan.timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            rc = TIMEOUT_RC
        except BaseException:          # Ctrl-C or SIGTERM of zlh ab: the run must stop too
            stop_group(proc, grace_s=5.0)
            raise
    runs = sorted(p for p in out.iterdir() if p.is_dir() and (p / "run.json").exists())
    outcome = RunOutcome(number, side.label, rc, round(time.time() - started, 3),
                         runs[-1] if runs else None, out / "bench.log")
    append_status(plan.root, op, outcome)
    return outcome


def stop_group(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """SIGTERM the run's process group (zlh bench then writes run.json, records and IR),
    SIGKILL whatever is left after the grace period."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def append_status(root: Path, op: str, outcome: RunOutcome) -> None:
    counts = {"rows_ok": 0, "rows_failed": 0, "replay_fallbacks": 0, "graph_fallbacks": 0,
              "poisoned": 0}
    if outcome.run_dir is not None and (outcome.run_dir / "results.jsonl").exists():
        run = compare.load_run(outcome.run_dir)
        counts["rows_ok"] = sum(1 for r in run.rows if r.status == SUCCESS)
        counts["rows_failed"] = sum(1 for r in run.rows if r.status == FAILED)
        names = [markers.marker_name(m) for r in run.rows for m in r.markers]
        counts["replay_fallbacks"] = names.count(markers.REPLAY_FALLBACK)
        counts["graph_fallbacks"] = names.count(markers.NO_GRAPH)
        counts["poisoned"] = int(run.info.get("status") == "poisoned")
    path = root / "status.tsv"
    new = not path.exists()
    with open(path, "a", encoding="utf-8") as handle:
        if new:
            handle.write("\t".join(STATUS_COLUMNS) + "\n")
        values = {"round": outcome.round, "op": op, "side": outcome.side, "rc": outcome.rc,
                  "elapsed_s": outcome.elapsed_s, "run_dir": outcome.run_dir or "-", **counts}
        handle.write("\t".join(str(values[c]) for c in STATUS_COLUMNS) + "\n")


def run_ab(plan: ABPlan, echo: Callable[[str], None] = print) -> tuple[list[dict], int]:
    """Both sides for every op, rounds, guard, report. Returns (reports, exit code)."""
    plan.root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(plan.root / "plan.json", {
        "ops": plan.ops, "rounds": plan.rounds, "bench_args": plan.bench_args,
        "A": vars(plan.a), "B": vars(plan.b), "timeout_s": plan.timeout_s})
    reports, code = [], EXIT_OK
    write_reports(plan.root, reports)
    for op in plan.ops:
        report, op_code = _run_op(plan, op, echo)
        code = max(code, op_code)
        if report is not None:
            reports.append(report)
            # rewritten after every op: an interrupted A/B keeps the ops it finished
            write_reports(plan.root, reports)
            echo(render_terminal(report, colour=sys.stdout.isatty()))
    return reports, code


def _run_op(plan: ABPlan, op: str, echo) -> tuple[dict | None, int]:
    outcomes: dict[tuple[int, str], RunOutcome] = {}

    def run(number: int, side: Side, replay_from: Path | None) -> bool:
        outcome = run_side(plan, op, number, side, replay_from)
        outcomes[(number, side.label)] = outcome
        if outcome.rc in (0, EXIT_FAILED_CASES) and outcome.run_dir is not None:
            return True
        echo(f"!!! {op}: round {number} side {side.label} failed (rc={outcome.rc}): "
             f"{outcome.last_words()}; no report for this op")
        return False

    if not run(1, plan.a, None):
        return None, EXIT_FAILED_CASES
    record = outcomes[(1, "A")].run_dir
    if not run(1, plan.b, record):
        return None, EXIT_FAILED_CASES
    run_a, run_b = compare.load_run(record), compare.load_run(outcomes[(1, "B")].run_dir)
    check = compare.check_caliber(run_a, run_b, op)
    if not _guard(check, op, plan.allow_caliber_mismatch, echo):
        return None, EXIT_CALIBER
    verdict = ir_verdict(run_a.path, run_b.path, plan.scrub)
    rounds = plan.rounds
    if verdict == "NO_IR_DIFF":
        echo(markers.marker(NO_IR_DIFF, op=op, switch=plan.switch,
                            detail=f"identical generated code for A[{plan.a.description}] and "
                                   f"B[{plan.b.description}]; further rounds would measure "
                                   f"noise"))
        if not plan.allow_no_ir_diff:
            rounds = 1
    for number in range(2, rounds + 1):
        order = (plan.a, plan.b) if number % 2 else (plan.b, plan.a)
        for side in order:
            if not run(number, side, record):
                return None, EXIT_FAILED_CASES
    pairs = [(compare.load_run(outcomes[(n, "A")].run_dir),
              compare.load_run(outcomes[(n, "B")].run_dir)) for n in range(1, rounds + 1)]
    for number, (later_a, later_b) in enumerate(pairs[1:], start=2):
        for side, later in (("A", later_a), ("B", later_b)):
            late = compare.check_caliber(run_a, later, f"{op} round {number} side {side}")
            late.warnings = []          # round 1 already said them
            if not _guard(late, op, plan.allow_caliber_mismatch, echo):
                return None, EXIT_CALIBER
    report = compare.compare_runs(pairs, plan.alpha)
    report["verdict"] = ({"NO_IR_DIFF": "SWITCH_NO_IR_DIFF: identical generated code; the "
                          "deltas are this machine's noise floor"}.get(verdict, verdict))
    report["caliber_problems"] = check.problems
    report["sides"]["A"]["label"] = plan.a.description or "A"
    report["sides"]["B"]["label"] = plan.b.description or "B"
    code = EXIT_FAILED_CASES if report["output_mismatches"] else EXIT_OK
    return report, code


def _guard(check, op: str, allow: bool, echo) -> bool:
    """Print the guard's findings; False when the report must be refused."""
    for line in check.warnings + check.problems:
        echo(line)
    if check.problems and not allow:
        echo(f"!!! [caliber] {op}: refusing to report; add --allow-caliber-mismatch once sure "
             f"the runs are comparable")
        return False
    return True


def ir_verdict(dir_a: Path, dir_b: Path, scrub) -> str:
    """IR_CHANGED / NO_IR_DIFF / NO_IR (either side compiled nothing we captured)."""
    fa = fingerprint.fingerprint(dir_a, scrub)
    fb = fingerprint.fingerprint(dir_b, scrub)
    if fa is None or fb is None:
        return "NO_IR"
    return "NO_IR_DIFF" if fa == fb else "IR_CHANGED"


def compare_existing(dir_a, dir_b, allow_caliber_mismatch: bool, echo,
                     alpha: float = 0.05, scrub=()) -> tuple[dict | None, int]:
    run_a, run_b = compare.load_run(dir_a), compare.load_run(dir_b)
    if not _guard(compare.check_caliber(run_a, run_b), run_a.op, allow_caliber_mismatch, echo):
        return None, EXIT_CALIBER
    report = compare.compare_runs([(run_a, run_b)], alpha)
    report["caliber_problems"] = compare.check_caliber(run_a, run_b).problems
    report["verdict"] = ir_verdict(run_a.path, run_b.path, list(scrub))
    code = EXIT_FAILED_CASES if report["output_mismatches"] else EXIT_OK
    return report, code


def override_args(base: list[str], given: list[str]) -> list[str]:
    """`base` bench arguments without the options that `given` sets, then `given`."""
    flags = {a for a in given if a.startswith("--")}
    kept, skip = [], False
    for i, arg in enumerate(base):
        if skip:
            skip = False
            continue
        if arg.startswith("--") and arg in flags:
            skip = i + 1 < len(base) and not base[i + 1].startswith("--")
            continue
        kept.append(arg)
    return kept + given


def replay_against(run_a, given_args: list[str], root: Path, timeout_s: float, echo,
                   allow_caliber_mismatch: bool = False, scrub=()) -> tuple[dict | None, int]:
    """`zlh ab --replay RUN_A`: side B now, in a fresh process, replaying A with A's settings."""
    op, a_args = bench_args_from_run(run_a)
    plan = ABPlan(ops=[op], a=Side("A", description=str(run_a)), b=Side("B", description="now"),
                  bench_args=override_args(a_args, given_args), root=root, timeout_s=timeout_s)
    root.mkdir(parents=True, exist_ok=True)
    outcome = run_side(plan, op, 1, plan.b, Path(run_a))
    if outcome.rc not in (0, EXIT_FAILED_CASES) or outcome.run_dir is None:
        echo(f"!!! {op}: side B failed (rc={outcome.rc}): {outcome.last_words()}")
        return None, EXIT_FAILED_CASES
    echo(f"side B: {outcome.run_dir} ({outcome.elapsed_s:.1f} s)")
    return compare_existing(run_a, outcome.run_dir, allow_caliber_mismatch, echo, scrub=scrub)


def bench_args_from_run(run_dir) -> tuple[str, list[str]]:
    """(op, `zlh bench` options) that reproduce a run's caliber, for `zlh ab --replay`."""
    info = compare.load_run(run_dir).info
    cal = info.get("caliber") or {}
    if not cal:
        raise UsageError(f"{run_dir}: run.json has no caliber; cannot reproduce its settings")
    args = ["--adapter", info["adapter"]["adapter"], "--backend", cal["backend"],
            "--level", cal["bench_level"], "--timer", info.get("timer_requested", cal["timer"]),
            "--repeat", str(cal["repeat"]), "--l2", cal["l2_policy"],
            "--warmup-ms", str(cal["warmup_ms"]), "--seed", str(info.get("seed", 0))]
    stop = cal.get("stopping", {})
    for key, flag in (("min_samples", "--min-samples"), ("min_time_ms", "--min-time-ms"),
                      ("max_time_ms", "--max-time-ms"), ("target_rel_err", "--target-rel-err")):
        if key in stop:
            args += [flag, str(stop[key])]
    if info.get("dtypes"):
        args += ["--dtypes", ",".join(info["dtypes"])]
    if info.get("shape_file"):
        args += ["--shapes", info["shape_file"]]
    if info["adapter"].get("flaggems_dir"):
        args += ["--flaggems-dir", info["adapter"]["flaggems_dir"]]
    if cal.get("tuner_cache") == "isolated":
        args.append("--isolate-tuner-cache")
    if cal.get("ir_capture") is False:
        args.append("--no-ir")
    device = info.get("device", {}).get("index")
    if device is not None and cal["backend"] != "cpu":
        args += ["--device", str(device)]
    return info["op"], args


def write_reports(root: Path, reports: list[dict]) -> None:
    from .ab_report import to_csv, to_json
    atomic_write_json(root / "report.json", {"title": f"zlh ab {root.name}",
                                             "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                             **to_json(reports)})
    atomic_write_text(root / "report.csv", to_csv(reports))


def load_report(root) -> dict:
    path = Path(root) / "report.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{root}: no report.json (run `zlh ab` with this root first)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from None
