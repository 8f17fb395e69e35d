"""How many rounds an op of an A/B gets, and how a round's runs start.

`--rounds N`: N rounds. `--rounds auto` (`AutoRounds`): the two-stage design of
`measure.sequential` — `min_rounds` pilot rounds, then as many as the widest shape needs for
an interval half-width ≤ `target_pct`, at most `max_rounds`; the report tests every shape with
the pilot's spread (exactly level alpha whatever N the pilot chose), guarded by the t of all its
rounds (at most alpha; never narrower than the rounds show).

Every round runs A and B in ABBA order (round 1 A then B, round 2 B then A, …) so that a drift
over the rounds (the card warming, a clock settling) falls on both sides alike. How a run
starts is a `RoundRunner`: None (the default) starts each in a fresh `zlh bench` process
(`orchestrate.run_side`); a persistent one keeps one worker process per side and runs every
round of that side in it (`harness.corpus.rounds`, chosen by the command line). A runner with
`run_together` (turns) runs a round's two sides at once, their samples in turns on the device;
the record is then made alone first (round 0), so that every round compared ran in turns.
`turns-fresh` does so with a new process for every run, launched ahead of it; `twins` makes the
record alone too, then runs a round's two sides one after the other, each in a new process
launched ahead, both behind the round's spacer (`record_alone`: the runner makes it so).
`auto` chooses per op between twins and turns-fresh from its record
(`harness/corpus/chosen_rounds.py`) and writes what it chose in the op's folder
(`CHOICE_FILE`), which the report reads (`read_choice`).
"""
from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, Sequence

from ..common.errors import UsageError
from ..measure import sequential

FRESH, PERSISTENT, TURNS, TURNS_FRESH, TWINS, CHOSEN = (
    "fresh", "persistent", "turns", "turns-fresh", "twins", "auto")
ROUND_PROCESSES = (FRESH, PERSISTENT, TURNS, TURNS_FRESH, TWINS, CHOSEN)
DESIGN = "two-stage"
CHOICE_FILE = "round_process.json"    # <root>/<op>/: the process `auto` chose for the op


def round_seed(op: str, number: int) -> int:
    """Round `number`'s seed for `op`, both sides': the sizes of the round's spacers (a
    worker's allocation ahead of the inputs, and every later placement's)."""
    return zlib.crc32(f"{op}/{number}".encode())


@dataclass(frozen=True)
class AutoRounds:
    target_pct: float = sequential.TARGET_PCT
    min_rounds: int = sequential.PILOT
    max_rounds: int = sequential.MAX_ROUNDS

    def __post_init__(self):
        if not self.min_rounds >= 2:
            raise UsageError(f"--min-rounds {self.min_rounds}: at least 2 (the pilot rounds "
                             f"estimate each shape's spread)")
        if self.max_rounds < self.min_rounds:
            raise UsageError(f"--max-rounds {self.max_rounds} is below --min-rounds "
                             f"{self.min_rounds}; give a cap of at least the pilot rounds")
        if not self.target_pct > 0:
            raise UsageError(f"--target-pct {self.target_pct}: a half-width above 0 %")

    def planned(self, per_shape_deltas: Sequence[Sequence[float]], alpha: float = 0.05) -> int:
        """The op's rounds, from the pilot rounds' per-shape deltas."""
        return sequential.planned_rounds(per_shape_deltas, self.min_rounds, self.target_pct,
                                         self.max_rounds, alpha)

    def to_dict(self) -> dict:
        return {"design": DESIGN, **asdict(self)}

    @classmethod
    def from_dict(cls, data) -> "AutoRounds | None":
        """From plan.json's `rounds_auto` (None when the A/B ran a fixed number of rounds)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(float(data["target_pct"]), int(data["min_rounds"]),
                       int(data["max_rounds"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"plan.json: rounds_auto is malformed ({exc})") from None


def read_choice(op_dir: Path) -> dict | None:
    """The round process `auto` chose for an op (its folder's CHOICE_FILE: `process`, `why`,
    `held_by_power`, with --round-budget auto `budget`: the rounds' budget flags), or None:
    none was chosen there, or the file is unreadable (a `budget` that is not a list of
    strings is left out)."""
    try:
        choice = json.loads((Path(op_dir) / CHOICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(choice, dict) and isinstance(choice.get("process"), str)):
        return None
    budget = choice.get("budget")
    if budget is not None and not (isinstance(budget, list)
                                   and all(isinstance(flag, str) for flag in budget)):
        choice.pop("budget")
    return choice


def choice_line(op: str, choice: dict) -> str:
    """What `auto` chose for `op`, as said after its record."""
    budget = " at " + " ".join(choice["budget"]) if choice.get("budget") else ""
    return f"{op}: rounds as {choice['process']}{budget}: {choice.get('why', '')}"


def note_choice(report, op_dir: Path) -> None:
    """The op's chosen round process (read_choice), where there is one, in its report's
    summary as `round_process`."""
    choice = read_choice(op_dir) if report is not None else None
    if choice is not None:
        report.summary["round_process"] = choice


def side_order(number: int) -> tuple[str, str]:
    """Which side runs first in round `number`: A B | B A | A B | … (ABBA)."""
    return ("A", "B") if number % 2 else ("B", "A")


class RoundRunner(Protocol):
    """Runs one side of one round of one op and returns its `runs.RunOutcome` (its run under
    ROOT/<op>/r<number>_<side>/, its row in status.tsv). Optional: `run_together(plan, op,
    number, sides, replay_from)`, both sides of a round at once (turns), and `in_turns(op)`,
    whether an op's rounds take it (default: every op's do); `record_alone`,
    whether each op's record is made alone first as round 0 (default: where it has
    `run_together`)."""

    name: str

    def run(self, plan, op: str, number: int, side, replay_from: Path | None):
        ...

    def close(self) -> None:
        ...
