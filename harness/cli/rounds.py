"""The rounds options of `zlh ab` and `zlh calibrate`: `--rounds N|auto`, `--target-pct`,
`--min-rounds`, `--max-rounds` (the two-stage design, harness/measure/sequential.py) and
`--round-process fresh|persistent|turns|turns-fresh|twins|auto` with its `--settle-ms`,
`--round-spacer-mb` and `--round-budget` (harness/ab/rounds.py, harness/corpus/rounds.py,
harness/ab/round_budget.py)."""
from __future__ import annotations

import click

from ..ab.round_budget import (AS_GIVEN, AUTO as AUTO_BUDGET, BUDGETS, RECORD_BUDGET,
                               ROUND_BUDGETS, budget_flags, refuse_given_budget)
from ..ab.rounds import (CHOSEN, FRESH, PERSISTENT, ROUND_PROCESSES, TURNS, TURNS_FRESH,
                         TWINS, AutoRounds)
from ..common import errors
from ..common.limits import MAX_ROUNDS
from ..corpus.chosen_rounds import ChosenRounds
from ..corpus.rounds import (SETTLE_S, SHIFT_MAX_BYTES, PersistentRounds, TurnsFreshRounds,
                             TurnsRounds, TwinsRounds)
from ..measure import sequential
from .common import finite

AUTO = "auto"
AUTO_NAMES = ("target_pct", "min_rounds", "max_rounds")
WORKER_NAMES = ("settle_ms", "round_spacer_mb")   # only where a worker runs the rounds
NAMES = ("rounds", *AUTO_NAMES, "round_process", *WORKER_NAMES, "round_budget")
MAX_SPACER_MB = 4096
BY_WORKERS = "persistent, turns, turns-fresh, twins or auto"   # the round processes of workers
MAX_SETTLE_MS = 600_000      # ten minutes of idle before a round: more is a mistyped value


class Rounds(click.ParamType):
    """A whole number of rounds in [low, MAX_ROUNDS], or `auto`."""

    name = "rounds"

    def __init__(self, low: int):
        self.low = low

    def convert(self, value, param, ctx):
        if value is None or value == AUTO or isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text == AUTO:
            return AUTO
        try:
            number = int(text)
        except ValueError:
            self.fail(f"{value!r} is neither a whole number nor auto", param, ctx)
        if not self.low <= number <= MAX_ROUNDS:
            self.fail(f"{number} is not in the range {self.low}<=x<={MAX_ROUNDS} (or auto)",
                      param, ctx)
        return number


ROUND_BUDGET_OPTION = click.option(
    "--round-budget", type=click.Choice(ROUND_BUDGETS), default=AS_GIVEN, show_default=True,
    help=f"With --round-process auto: as-given: every run at the budget options given (or "
         f"their defaults); auto: each op's record at {' '.join(budget_flags(RECORD_BUDGET))}, "
         f"and its rounds at the budget of the process chosen for it — twins as the record, "
         f"turns-fresh (GEMMs at the power limit) at "
         f"{' '.join(budget_flags(BUDGETS[TURNS_FRESH]))}, four placements that average "
         f"where a run's data lie. The budget options are then refused.")


def rounds_options(low: int, default, help_text: str):
    """The rounds options, `--rounds` taking N ≥ low or auto (default `default`)."""
    options = [
        click.option("--rounds", type=Rounds(low), default=default, metavar="N|auto",
                     show_default=default is not None, help=help_text),
        click.option("--target-pct", type=click.FloatRange(min=0, min_open=True),
                     default=None, callback=finite, metavar="X",
                     help=f"With --rounds auto: the interval half-width (%) every shape must "
                          f"reach. Default {sequential.TARGET_PCT:g} (a 0.3 % change is then "
                          f"found about 97 times in 100)."),
        click.option("--min-rounds", type=click.IntRange(min=2, max=MAX_ROUNDS), default=None,
                     help=f"With --rounds auto: the pilot rounds that estimate each shape's "
                          f"spread (the test's degrees of freedom + 1). Default "
                          f"{sequential.PILOT}."),
        click.option("--max-rounds", type=click.IntRange(min=2, max=MAX_ROUNDS), default=None,
                     help=f"With --rounds auto: the most rounds an op gets. Default "
                          f"{sequential.MAX_ROUNDS}."),
        click.option("--round-process", type=click.Choice(ROUND_PROCESSES), default=FRESH,
                     show_default=True,
                     help="fresh: every run a new `zlh bench` process; persistent: one "
                          "worker process per side runs all its rounds, each re-randomised "
                          "(new addresses, graphs, allocator cache, a settle gap); turns: "
                          "persistent workers, and a round's two sides run at once taking "
                          "their samples in turns on the device (the record made alone "
                          "first, as round 0); turns-fresh: turns, every run in a new "
                          "process launched ahead while the run before it measures; twins: "
                          "every run in a new process launched ahead, the record made alone "
                          "first, then a round's two sides one after the other behind the "
                          "same spacer, so that where their data lies cancels in the "
                          "round's delta; auto: per op, turns-fresh where its record ran "
                          "held back by the power limit (a GEMM at the cap), else twins."),
        click.option("--settle-ms", type=click.FloatRange(min=0, max=MAX_SETTLE_MS), default=None,
                     callback=finite, metavar="MS",
                     help=f"With --round-process {BY_WORKERS}: the "
                          f"idle gap before each run (turns, turns-fresh: before each round, "
                          f"its two runs at once), the device quiet as between two process "
                          f"starts. Default {SETTLE_S * 1000:g} (turns-fresh, twins, auto: 0, "
                          f"each run a new process)."),
        click.option("--round-spacer-mb", type=click.FloatRange(min=0, max=MAX_SPACER_MB),
                     default=None, callback=finite, metavar="MB",
                     help=f"With --round-process {BY_WORKERS}: the "
                          f"largest random-size allocation (MiB) held before a round builds its "
                          f"inputs (the round's seed draws its size, the same for both "
                          f"sides), so that each round's buffers lie elsewhere and the "
                          f"rounds' interval covers where they lie. 0: none — every run "
                          f"allocates alike, the rounds see one placement of the data, and "
                          f"a side that allocates otherwise (a new workspace, another "
                          f"order) moves its data, which then reads as a change. Default "
                          f"{SHIFT_MAX_BYTES >> 20}."),
        ROUND_BUDGET_OPTION,
    ]

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn
    return decorate


def rounds_plan(params: dict, fixed_default: int = 1):
    """(rounds — for auto its cap —, AutoRounds or None, the round runner or None) from the
    options; an auto-only option without --rounds auto is one line, exit 2."""
    given = [name for name in AUTO_NAMES if params.get(name) is not None]
    if params.get("rounds") == AUTO:
        auto = AutoRounds(**{name: params[name] for name in given})
        rounds = auto.max_rounds
    else:
        if given:
            flags = ", ".join("--" + n.replace("_", "-") for n in given)
            raise errors.UsageError(f"{flags} only with --rounds auto (a fixed --rounds N "
                                    f"runs N rounds)")
        auto, rounds = None, params.get("rounds") or fixed_default
    settle_ms, spacer_mb = params.get("settle_ms"), params.get("round_spacer_mb")
    process = params.get("round_process")
    budgeted = params.get("round_budget", AS_GIVEN) == AUTO_BUDGET
    if budgeted and process != CHOSEN:
        raise errors.UsageError(f"--round-budget auto only with --round-process auto (the "
                                f"budget follows the process chosen per op), not "
                                f"{process or FRESH}")
    runner_class = {PERSISTENT: PersistentRounds, TURNS: TurnsRounds,
                    TURNS_FRESH: TurnsFreshRounds,
                    TWINS: TwinsRounds, CHOSEN: ChosenRounds}.get(process)
    if runner_class is None:
        given = [name for name in WORKER_NAMES if params.get(name) is not None]
        if given:
            raise errors.UsageError(f"--{given[0].replace('_', '-')} only with "
                                    f"--round-process {BY_WORKERS} (a fresh process per "
                                    f"run is run as it is)")
        return rounds, auto, None
    return rounds, auto, runner_class(
        settle_s=None if settle_ms is None else settle_ms / 1000,
        shift_max_bytes=SHIFT_MAX_BYTES if spacer_mb is None else int(spacer_mb * (1 << 20)),
        **({"budgets": BUDGETS} if budgeted else {}))


def budget_given(params: dict, given: dict) -> dict:
    """The bench options as given, with `--round-budget auto` the record's budget set (its
    rounds' budgets follow per op); a budget option named beside auto is one line, exit 2."""
    if params.get("round_budget", AS_GIVEN) != AUTO_BUDGET:
        return given
    refuse_given_budget(given)
    return {**given, **RECORD_BUDGET}
