"""`zlh ab --round-process auto`: each op's rounds as twins, or in turns with a new process
per run (turns-fresh) where the op's record ran held back by the device's power limit.

The two policies cancel different things in a round's delta. Twins (a round's two sides one
after the other, behind the same spacer) land both sides' data alike, so where the data lies
cancels; a drift of the card within the round falls on one side. Turns (both sides at once,
their samples alternating) share the card's power and clock state, so a drift cancels; both
processes hold memory at once, so their data lies apart. Memory-bound and reduction kernels
spread with placement, GEMMs at the power cap with the card's drift (docs/concepts/rounds.md,
tests/device/README.md). Each op's record — made alone first, as round 0 — decides: a case
whose timed function ran held back by the power limit (`telemetry.throttle.held_by_power`)
puts the op's rounds in turns; none, twins. The record is compared in no round, and either
policy alone keeps the rounds' interval honest, so choosing from it biases no test.

What was chosen and why goes to `<op>/round_process.json` (`ab.rounds.CHOICE_FILE`), which
the report shows; a record that failed chooses nothing (the op has no rounds). With
`--round-budget auto` (`budgets`: process -> budget, ab/round_budget.py) the op's rounds also
run at the chosen process's budget, which the choice names (`budget`: its flags).
"""
from __future__ import annotations

from pathlib import Path

from ..ab.round_budget import budget_flags
from ..ab.rounds import CHOICE_FILE, CHOSEN, TURNS_FRESH, TWINS
from ..ab.runs import RunOutcome
from ..ab.sides import ABPlan, Side
from ..common.files import atomic_write_json
from ..store.reader import load_run
from ..store.rundir import safe_name
from ..telemetry.throttle import held_by_power
from .rounds import TurnsFreshRounds, TwinsRounds


def choose_by_record(run_dir: Path | None) -> dict:
    """{process, why, held_by_power} for an op from its record run's rows."""
    rows = load_run(run_dir).rows if run_dir is not None else []
    held = held_by_power(rows)
    if held:
        shown = ", ".join(held[:3]) + (" …" if len(held) > 3 else "")
        return {"process": TURNS_FRESH, "held_by_power": held,
                "why": f"the record ran held back by the power limit on {len(held)} of "
                       f"{len(rows)} case(s) ({shown}): the sides take turns, so that the "
                       f"card's drift falls on both"}
    return {"process": TWINS, "held_by_power": [],
            "why": f"no case of the record ran held back by the power limit ({len(rows)} "
                   f"case(s)): a round's sides one after the other behind one spacer, so "
                   f"that where the data lies cancels"}


class ChosenRounds(TurnsFreshRounds):
    """A `rounds.RoundRunner`: turns-fresh's processes and spares, each op's rounds run as
    twins or in turns as its record chose (`choose`: run directory -> choice; default
    choose_by_record): `in_turns` says which, and the A/B runs a twins round's sides one
    after the other. Like turns-fresh the runs take no device lock (a round in turns times
    both sides at once). `budgets` (process -> budget; None: the options as given): each op's
    rounds at its process's budget (`plan.op_budgets`)."""

    name = CHOSEN
    activate_ahead = TwinsRounds.activate_ahead     # as twins, until a record chose turns
    default_settle_s = 0.0

    def __init__(self, *args, choose=choose_by_record, budgets: dict | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.choose = choose
        self.budgets = budgets
        self.chosen: dict[str, dict] = {}

    def process_of(self, op: str) -> str:
        return (self.chosen.get(op) or {}).get("process", TWINS)

    def in_turns(self, op: str) -> bool:
        """Whether `op`'s rounds run both sides at once (`run_together`), or one side after
        the other (twins)."""
        return self.process_of(op) == TURNS_FRESH

    def run(self, plan: ABPlan, op: str, number: int, side: Side,
            replay_from: Path | None) -> RunOutcome:
        if number == 0:
            self._use(TWINS)              # the record alone; spares start bare meanwhile
        outcome = super().run(plan, op, number, side, replay_from)
        if number == 0 and outcome.problem() is None:
            choice = self.chosen[op] = self.choose(outcome.run_dir)
            if self.budgets is not None:
                plan.op_budgets[op] = self.budgets[choice["process"]]
                choice["budget"] = budget_flags(plan.op_budgets[op])
            atomic_write_json(Path(plan.root) / safe_name(op) / CHOICE_FILE, choice)
            self._use(choice["process"])
        return outcome

    def _use(self, process: str) -> None:
        """Spares as that process's own runner keeps them (whether they make their device
        context ahead, which time between two asks they cover)."""
        policy = TurnsFreshRounds if process == TURNS_FRESH else TwinsRounds
        self.activate_ahead = policy.activate_ahead
        if self.sizer is not None:
            self.sizer.interval = policy.spare_interval
