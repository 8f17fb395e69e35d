"""`--round-budget auto`: each op's timing budget chosen with its round process.

`--round-process auto` runs an op's rounds as twins, or in turns with a new process per run
where its record ran held back by the power limit (harness/corpus/chosen_rounds.py). The two
kinds of op are served best by different budgets (tests/device/README.md, thirty-second to
thirty-eighth sets):

- ops whose rounds run as twins — memory-bound, reduction, pointwise, small BLAS — at one
  placement of 40/80 ms windows (`TWINS_BUDGET`): on an H100 four placements cost them 1.1 to
  1.7 times the wall and found no more; a case of theirs of at least 20 µs
  (`--level-min-us`) whose level is drawn per placement (run/level.py; layer_norm
  20×6×65536 on both cards) on up to LEVEL_MOST short level placements
  (`--level-placements`), which one placement cannot average;
- GEMMs at the power cap, in turns, at four placements of 10/20 ms windows (`TURNS_BUDGET`),
  which average where a run's data lie inside each run at about one placement's cost; on an
  H100 this narrowed mm's, addmm's and bmm's rounds 1.1 to 3.2 times. No level placements:
  their four placements already average where the data lie, and a short window under the
  power cap would time where the clock dithers (on an H200 an addmm record at this budget
  with level placements on flagged no case, forty-fourth set).

With `auto`, the record of every op is made at the twins budget (it pins configs and chooses
the process; it is compared in no round), and each op's rounds take the budget of the process
chosen for it. Both sides of an op's rounds run at one budget, and the caliber guard holds
every round to round 1's A, and the record to round 1's A in everything but the budget
(`BUDGET_CALIBER`; ab/guard.py `reference_run`). Budget options given with `auto` are refused:
the choice would overrule them.
"""
from __future__ import annotations

from ..common.errors import UsageError
from ..measure.stopping import StoppingRule
from ..run.option_table import BY_NAME
from .rounds import TURNS_FRESH, TWINS

AS_GIVEN, AUTO = "as-given", "auto"
LEVEL_MOST = 64      # twins: a case whose level is drawn per placement, on up to 64 of them
ROUND_BUDGETS = (AS_GIVEN, AUTO)

# The six options a budget sets, each given outright so that one budget never inherits
# another's value.
TWINS_BUDGET = {"placements": 1, "warmup_ms": 20.0, "min_samples": StoppingRule.min_samples,
                "min_time_ms": 40.0, "max_time_ms": 80.0, "level_placements": LEVEL_MOST}
TURNS_BUDGET = {"placements": 4, "warmup_ms": 10.0, "min_samples": 10,
                "min_time_ms": 10.0, "max_time_ms": 20.0, "level_placements": 0}
BUDGETS = {TWINS: TWINS_BUDGET, TURNS_FRESH: TURNS_BUDGET}
RECORD_BUDGET = TWINS_BUDGET
BUDGET_NAMES = tuple(TWINS_BUDGET)
# the caliber fields a budget moves: the record is held to its op's rounds in all but these
BUDGET_CALIBER = ("warmup_ms", "stopping", "placements", "placement_memory", "level_placements",
                  "level_min_us")      # (the floor reads 0 where level placements are off)


def budget_flags(budget: dict) -> list[str]:
    """The budget as `zlh bench` arguments, e.g. ['--placements', '4', '--warmup-ms', '10']."""
    flags: list[str] = []
    for name in BUDGET_NAMES:
        option = BY_NAME[name]
        value = budget[name]
        flags += [option.flag, f"{value:g}" if isinstance(value, float) else option.text(value)]
    return flags


def refuse_given_budget(given: dict) -> None:
    """One line, exit 2, where a budget option was named beside `--round-budget auto`."""
    named = [name for name in BUDGET_NAMES if name in given]
    if named:
        flags = ", ".join(BY_NAME[name].flag for name in named)
        raise UsageError(f"{flags} with --round-budget auto: auto sets each op's budget from "
                         f"its round process; drop {flags} (from the command line or a "
                         f"recipe's bench_args), or drop --round-budget auto to give the "
                         f"budget yourself")
