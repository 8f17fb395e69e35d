"""`zlh calibrate`."""
from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from ..common.errors import UsageError

from ..calibrate.run import CalibratePlan, calibrate as run_calibration
from ..corpus.files import refuse_corpus_root
from .group import main
from .output import complete_ops
from .rounds import budget_given, rounds_options, rounds_plan
from .common import (bench_options, default_ops, echo_err, finite, given_options,
                     handles_errors, keeps_on_interrupt, not_empty, options_from)


@main.command()
@click.argument("ops", nargs=-1, shell_complete=complete_ops)
@rounds_options(2, 3, "A/A rounds (ABBA order); the floor and the detectable change are per "
                      "shape over these rounds. auto: as `zlh ab --rounds auto`.")
@click.option("--plant-pct", type=click.FloatRange(min=0, min_open=True, max=1000), default=None,
              callback=finite, metavar="X",
              help="Self-test: slow side B by a device spin of X% of side A's latency and report "
                   "the shapes found with the right sign.")
@click.option("--detect-pct", type=click.FloatRange(min=0, min_open=True, max=1000),
              default=None, callback=finite, metavar="X",
              help="Print per shape the rounds a fixed --rounds N needs to detect a change of "
                   "X % (80 % power) from its measured spread. Default: --plant-pct, else "
                   "0.3.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=3600.0,
              callback=finite, show_default=True, help="Per-run limit in seconds.")
@click.option("--root", default=None, metavar="DIR", type=click.Path(), callback=not_empty,
              help="Where runs and calibration.json go. Default: runs/calibrate_<timestamp>.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
@bench_options
@click.pass_context
@handles_errors
def calibrate(ctx, ops, plant_pct, detect_pct, timeout_s, root, quiet, **params):
    """This machine's noise floor for OPS: A/A (the same build on both sides) through the
    `zlh ab` machinery, over --rounds; writes ROOT/calibration.json (per shape: |delta| median
    and max, spread, the smallest change detectable at N rounds) for `zlh ab --noise-floor`.
    With --plant-pct X, side B is slowed by a known amount on the device instead, and the
    report counts the shapes detected with the right sign.

    Exit status: 0 calibrated, 1 a run failed, 2 bad input, 3 preflight failed, 4 caliber
    refusal, 130/143/129 interrupted (calibration.json then holds the ops that finished).
    """
    refuse_corpus_root(root, "the calibration's")
    rounds, auto, runner = rounds_plan(params, fixed_default=3)
    options = options_from(budget_given(params, given_options(ctx)))
    ops = list(dict.fromkeys(ops)) or default_ops(options)   # named twice: runs once
    if not ops:
        raise UsageError("name at least one op to calibrate (or --cases MODULE:ATTR, whose "
                         "op is ATTR)")
    plan = CalibratePlan(
        ops=ops, options=options,
        root=Path(root or f"runs/calibrate_{time.strftime('%Y%m%d-%H%M%S')}"),
        rounds=rounds, plant_pct=plant_pct, timeout_s=timeout_s, auto=auto, runner=runner,
        detect_pct=detect_pct)
    _, code = keeps_on_interrupt(
        plan.root, f"zlh ab --rescore {shlex.quote(str(plan.root))}",
        lambda: run_calibration(plan, echo=click.echo, progress=None if quiet else echo_err),
        kept="the floors of the ops that finished (calibration.json, complete: false, when "
             "one did) and the runs of finished rounds", then="reports those rounds")
    sys.exit(code)
