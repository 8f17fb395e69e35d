"""`zlh bench`."""
from __future__ import annotations

import math
import statistics
import sys

import click

from ..common import log
from ..common.errors import Terminated, UsageError, interrupt_exit_code
from ..common.files import to_json
from ..common.schema import stamp
from ..run.options import BenchOptions
from ..run.result import RunResult
from ..run.runner import run_bench
from ..store import rundir
from ..store.reader import load_run_or_none
from .group import main
from .common import (bench_options, check_ir_options, default_ops, echo_err, echo_out,
                     handles_errors, run_options)
from .output import complete_ops
from ..run.sweep import bench_with_sweep
from .devices import check_devices, parse_devices, visible_devices


@main.command()
@click.argument("ops", nargs=-1, shell_complete=complete_ops)
@bench_options
@run_options
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object instead of tables: each run's directory, status, "
                   "caliber and rows (raw samples are in results.jsonl); warnings stay on "
                   "stderr.")
@click.option("--parallel-sweep", type=click.IntRange(min=2), default=None, metavar="N",
              help="Record runs: sweep autotune configs on N devices (cases dealt "
                   "round-robin), merge the records, measure on one device replaying them.")
@click.option("--sweep-devices", default=None, metavar="0,1,…",
              help="Devices for --parallel-sweep. Default: the first N visible.")
@handles_errors
def bench(ops, quiet, as_json, parallel_sweep, sweep_devices, **params):
    """Time OPS (function under test vs torch baseline), one run directory per op.

    FlagGems op names: `softmax` (test_softmax), `perf_sort:sort` (function:file),
    `name@file`, a node `benchmark/test_x.py::test_y`, or `vllm:NAME` for FlagGems-vllm.
    With --cases MODULE:ATTR, OPS name the ops of your cases (default: ATTR).

    Exit status: 0 all cases ok, 1 some case failed (or the run failed: disk full), 2 bad
    input, 3 preflight failed, 4 --replay names a record run that did not complete, 5 the
    device became unusable (the run stopped; what was measured is kept), 130/143/129
    interrupted (SIGINT/SIGTERM/SIGHUP: the terminal closed). An op whose code calls
    sys.exit(N) exits 1 (run.json: crashed), never N.
    """
    check_ir_options(params)
    options = BenchOptions.from_flat(**params, argv=["zlh"] + sys.argv[1:])
    ops = list(ops) or default_ops(options)
    progress = None if quiet else log.progress
    echo = warnings_only if as_json else echo_out
    if sweep_devices is not None and not parallel_sweep:
        raise UsageError("--sweep-devices needs --parallel-sweep N (it names the devices of "
                         "the sweep)")
    if parallel_sweep and options.replay:
        raise UsageError("--parallel-sweep sweeps the autotune configs of a record run; a "
                         "--replay run forces the recorded ones and sweeps nothing: drop one "
                         "of them")
    made = len(rundir.MADE)              # the run directories made before this command
    try:
        if parallel_sweep:
            devices = (parse_devices(sweep_devices, "--sweep-devices")
                       or visible_devices(options.backend))
            if options.backend != "cpu" and len(devices) >= 2:
                devices = check_devices(options.backend, devices,   # real devices must exist
                                        "--sweep-devices")
            results = bench_with_sweep(ops, options, parallel_sweep, devices, echo, progress)
        else:
            results = run_bench(ops, options, echo=echo, progress=progress)
    except (KeyboardInterrupt, Terminated) as exc:
        if as_json:          # stdout still holds the JSON: of what was measured
            echo_out(to_json(stamp({
                "runs": [r.to_dict() for r in map(stored_result, rundir.made_since(made))
                         if r is not None],
                "exit_code": interrupt_exit_code(exc), "interrupted": True}), indent=None))
        raise
    code = max((r.exit_code for r in results), default=0)
    if not as_json:
        for line in closing_lines(results):
            echo_out(line)
    if as_json:
        echo_out(to_json(stamp({"runs": [r.to_dict() for r in results], "exit_code": code}),
                         indent=None))
    sys.exit(code)


def warnings_only(text: str) -> None:
    """With --json, stdout holds the JSON alone: warnings and refusals still reach stderr."""
    if text.startswith(("WARNING", "!!!")):
        echo_err(text)


def closing_lines(results) -> list[str]:
    """After every op's table: one line per op (cases ok of all, the speedup's geomean and
    range, the run directory) and what to do next with these runs."""
    if not results:
        return []
    lines = ["summary (speedup = base ms / test ms; > 1: the function under test is faster):"]
    width = max(len(r.op) for r in results)
    for r in results:
        speedups = [row.speedup for row in r.rows if row.speedup]
        spread = (f"speedup geomean {_g(math.exp(statistics.fmean(map(math.log, speedups))))}"
                  f" ({_g(min(speedups))}~{_g(max(speedups))})" if speedups else "no speedup")
        lines.append(f"  {r.op:<{width}}  {len(r.ok())}/{len(r.rows)} ok  {spread}  "
                     f"{r.status}  {r.run_dir}")
    first = results[0].run_dir
    lines.append(f"next: zlh show {first} prints a run again; after a compiler or switch "
                 f"change, zlh ab --replay {first} runs it again with the same tuned "
                 f"configs and compares")
    return lines


def _g(value: float) -> str:
    return format(value, ".3f") if value >= 0.01 else format(value, ".2g")


def stored_result(path) -> RunResult | None:
    """A run directory this command made, read back as the result a finished run returns
    (its status as run.json says: `interrupted` for the one a signal cut short); None when it
    cannot be read (the interrupt is what gets reported)."""
    run = load_run_or_none(path)
    if run is None:
        return None
    return RunResult(run.op, run.path, run.rows, run.caliber, run.status,
                     run.info.get("compiler"))
