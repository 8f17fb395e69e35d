"""`harness.bench_cases` and `harness.compare`: your own cases into ordinary run
directories, and two runs (or rounds of them) into the typed A/B report.

`bench_cases` goes through the same runner as `zlh bench` (the user adapter supplies the
cases), so its run directory has the caliber, results, IR capture and autotune record or
replay of any other run, and `zlh show`, `zlh ab`, `zlh report` read it unchanged.
`compare` is what `zlh ab RUN_A RUN_B` does: the caliber guard first, then pairing and
statistics (`harness.ab.compare.compare_runs`), then the IR verdict.
"""
from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any, Callable, Sequence

from adapters.user import UserAdapter, default_op

from ..ab.compare import compare_runs
from ..ab.guard import check_caliber
from ..ab.orchestrate import ir_verdict
from ..ab.preflight import check_scrub
from ..ab.report import ABReport, write_reports
from ..common.errors import CaliberError, UsageError
from ..common.files import check_output_dir, check_path_text
from ..run.options import BenchOptions
from ..run.runner import RunResult, run_bench
from ..store.reader import AB_ROOT_FILES, COMPLETE, StoredRun, load_run, refuse_run_dir

DEFAULT_OP = "cases"


def bench_cases(cases: Any, *, op: str | None = None, echo: Callable[[str], None] | None = None,
                progress: Callable[[str], None] | None = None, **options) -> RunResult:
    """Run user cases into `<out>/<op>_<timestamp>/`.

    `cases`: a `harness.Case`, a list of them, a function returning them, a dict
    `{op: cases}` (then `op` picks one), or a `"module:attr"` string naming any of those —
    a string is stored in run.json, so `zlh ab --replay` can run the other side from the
    command line. `op` defaults to the attribute's name, else "cases". Other keywords are
    `zlh bench`'s options (`out`, `replay`, `backend`, `min_samples`, ...). Prints nothing
    unless asked (`echo=print`: header, markers and table; `progress=print`: a line per
    case)."""
    if options.get("adapter") not in (None, "user"):
        raise UsageError(f"bench_cases runs user cases; adapter={options['adapter']!r} does "
                         f"not apply")
    if "cases" in options:
        raise UsageError("give the cases as bench_cases' first argument, not cases=")
    adapter = None
    if isinstance(cases, str):
        op = op or default_op(cases)
        options["cases"] = cases
    else:
        adapter = UserAdapter(source=cases)
        op = op or DEFAULT_OP
        options["adapter"] = "user"
    if not isinstance(op, str) or not op.strip():
        raise UsageError(f"op must be a non-empty name, got {op!r}")
    options.setdefault("argv", ["harness.bench_cases", op])
    return run_bench([op], BenchOptions.from_flat(**options), echo=echo, progress=progress,
                     adapter=adapter)[0]


def compare(run_a, run_b, *, allow_caliber_mismatch: bool = False, alpha: float = 0.05,
            scrub: Sequence[str] = (), root=None,
            echo: Callable[[str], None] | None = None,
            allow_partial: bool = False) -> ABReport:
    """The A/B report of side A against side B, as `zlh ab RUN_A RUN_B` makes it.

    `run_a` / `run_b`: a run directory (path), a `RunResult`, or equal-length lists of them
    (one per round: round 1's caliber is checked against every later run). A caliber
    mismatch raises `CaliberError` (exit code 4) unless `allow_caliber_mismatch`, which
    lists the problems in `report.caliber_problems`; so does a run that did not complete
    (interrupted, crashed, rows lost, …) unless `allow_partial`, which compares the cases it
    measured. Warnings and problems go to `echo`. With `root`, report.json and report.csv
    are written there (`zlh report ROOT` reads them). Every argument is checked before a run
    is read or a file written."""
    scrub = _compare_arguments(allow_caliber_mismatch, alpha, scrub, root)
    if not isinstance(allow_partial, bool):
        raise UsageError(f"allow_partial must be True or False, got {allow_partial!r}")
    if echo is not None and not callable(echo):
        raise UsageError(f"echo must be a function taking one line (e.g. print) or None, "
                         f"got {type(echo).__name__}")
    sides_a, sides_b = _runs(run_a, "run_a"), _runs(run_b, "run_b")
    if len(sides_a) != len(sides_b):
        raise UsageError(f"run_a has {len(sides_a)} rounds, run_b {len(sides_b)}; give one "
                         f"run per round on each side")
    for a, b in zip(sides_a, sides_b):
        if a.resolve() == b.resolve():
            raise UsageError(f"{a} and {b} are the same run directory; compare two runs")
    pairs = [(load_run(a), load_run(b)) for a, b in zip(sides_a, sides_b)]
    first_a = pairs[0][0]
    check = check_caliber(*pairs[0])
    problems, partial = list(check.problems), list(check.partial)
    for number, (later_a, later_b) in enumerate(pairs[1:], start=2):
        for side, later in (("A", later_a), ("B", later_b)):
            late = check_caliber(first_a, later, f"{first_a.op} round {number} side {side}",
                                 names=("the record", "this run"))
            problems += late.problems
            # the record's own line (first, when it did not complete) was said in round 1
            partial += late.partial[1:] if first_a.status != COMPLETE else late.partial
    # a side that did not complete (or lost rows) is compared only when allowed, and said
    lines = list(check.warnings) + [f"WARNING {line}" for line in partial]
    for line in lines + problems:
        if echo is not None:
            echo(line)
    if problems and not allow_caliber_mismatch:
        raise CaliberError(f"{first_a.op}: runs not comparable: "
                           f"{'; '.join(_bare(p) for p in problems)} (allow_caliber_mismatch"
                           f"=True reports anyway)")
    if partial and not allow_partial:
        raise CaliberError(f"{'; '.join(p.removeprefix('[status] ') for p in partial)} "
                           f"(allow_partial=True compares the cases it measured)")
    report = compare_runs(pairs, alpha)
    report.caliber_problems = problems
    report.verdict = ir_verdict(first_a.path, pairs[0][1].path, list(scrub))
    if root is not None:
        write_reports(check_output_dir(root, "root", create=True), [report])
    return report


def _compare_arguments(allow, alpha, scrub, root) -> list[str]:
    """`compare`'s keywords, type-checked; the scrub patterns as a list."""
    if not isinstance(allow, bool):
        raise UsageError(f"allow_caliber_mismatch must be True or False, got {allow!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise UsageError(f"alpha must be a number between 0 and 1, got {alpha!r}")
    if not isinstance(scrub, (list, tuple)) or not all(isinstance(p, str) for p in scrub):
        raise UsageError(f"scrub must be a list of regular expressions, got {scrub!r}")
    check_scrub(list(scrub))
    if root is not None:
        if not isinstance(root, (str, PathLike)):
            raise UsageError(f"root must be a directory path, got {type(root).__name__}")
        check_output_dir(root, "root")
        refuse_run_dir(root, "root")
        found = [name for name in AB_ROOT_FILES if (Path(root) / name).exists()]
        if found:                              # its report would be replaced without a word
            raise UsageError(f"root {root} already holds an A/B ({', '.join(found)}); give a "
                             f"new root")
    return list(scrub)


def _runs(value, what: str) -> list[Path]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise UsageError(f"{what} is empty; give a run directory or a RunResult")
    paths = []
    for item in items:
        if isinstance(item, RunResult):
            paths.append(Path(item.run_dir))
        elif isinstance(item, StoredRun):
            paths.append(item.path)
        elif isinstance(item, (str, Path)):
            check_path_text(item, what)
            paths.append(Path(item))
        else:
            raise UsageError(f"{what}: expected a run directory or a RunResult, got "
                             f"{type(item).__name__}")
    return paths


def _bare(problem: str) -> str:
    """`!!! [caliber] op: timer differs ...` -> `timer differs ...`."""
    text = problem.removeprefix("!!! [caliber] ")
    return text.split(": ", 1)[1] if ": " in text else text
