"""The two sides of an A/B comparison and the plan that runs them."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..run.child_env import child_environment
from ..common.errors import UsageError
from ..run.options import BenchOptions
from .compile_reuse import SideCaches
from .round_budget import AS_GIVEN, AUTO as AUTO_BUDGET
from .rounds import round_seed
from .runs import STOP_RC



@dataclass
class Side:
    label: str
    env: dict = field(default_factory=dict)      # overrides; None value unsets
    python: str = sys.executable
    description: str = ""
    options: dict = field(default_factory=dict)   # flat bench options for this side only


@dataclass
class ABPlan:
    ops: list[str]
    a: Side
    b: Side
    options: BenchOptions                  # every run's bench options (out/replay set per run)
    root: Path
    rounds: int = 1
    timeout_s: float = 3600.0
    allow_caliber_mismatch: bool = False
    allow_no_ir_diff: bool = False
    scrub: list[str] = field(default_factory=list)
    alpha: float = 0.05
    switch_name: str = ""              # the variable a --switch flips, for markers
    noise_floor: object = None         # calibrate.noise.NoiseFloor: label deltas within it
    auto: object = None                # rounds.AutoRounds: --rounds auto (rounds = its cap)
    runner: object = None              # rounds.RoundRunner; None: a fresh process per run
    caches: SideCaches = field(default_factory=SideCaches)   # each side compiles an op once
    draw_placements: bool = True       # False: runs keep options.placement_seed (a replay)
    op_budgets: dict = field(default_factory=dict)   # op -> the budget its rounds run at
                                                     # (--round-budget auto: round_budget.py)

    @property
    def switch(self) -> str:
        return self.switch_name or f"A[{self.a.description}]_B[{self.b.description}]"

    def run_options(self, out: Path, replay_from: Path | None, side: Side) -> BenchOptions:
        """One run's bench options: its directory, the record it replays, the side's own
        options. The root's telemetry watches every run (the runs sample none), and the
        baseline is not timed: a verdict compares the function under test across sides."""
        return self.options.replace(out=str(out),
                                    replay=str(replay_from) if replay_from is not None else None,
                                    telemetry_interval=0.0, baseline_timing=False,
                                    **side.options)

    def round_options(self, op: str, number: int, out: Path, replay_from: Path | None,
                      side: Side) -> BenchOptions:
        """Round `number`'s run options: as `run_options`, loading the side's kept compile
        cache of the op (or keeping this run's: compile_reuse.py; `ran` after the run), the
        later placements' spacers drawn from the round's seed — the same on both sides, each
        round others, so that where a placement's data lands varies over the rounds (and
        widens their interval) instead of repeating in every round. Not with
        `draw_placements` off: `zlh ab --replay RUN_A` gives side B the spacers A had. An
        op given a budget of its own (`op_budgets`, set once its record chose) runs at it."""
        options = self.run_options(out, replay_from, side)
        if op in self.op_budgets:
            options = options.with_flat(**self.op_budgets[op])
        if self.draw_placements:
            options = options.replace(placement_seed=round_seed(op, number))
        return self.caches.options(op, side.label, options)

    def ran(self, op: str, side: Side, out: Path) -> None:
        self.caches.ran(op, side.label, out)

    def to_dict(self) -> dict:
        return {"ops": self.ops, "rounds": self.rounds, "options": self.options.to_dict(),
                "bench_args": self.options.to_argv(), "A": vars(self.a), "B": vars(self.b),
                "timeout_s": self.timeout_s, "scrub": self.scrub,
                "rounds_auto": self.auto.to_dict() if self.auto is not None else None,
                "stop_rc": STOP_RC, **runner_fields(self.runner)}


def runner_fields(runner) -> dict:
    """How a plan's rounds ran, as plan.json and calibration.json record it: the round
    process, where a worker ran them its settle gap and round spacer (None for fresh), and
    whether each op's budget followed its chosen process (`round_budget`: as-given, auto)."""
    return {"round_process": getattr(runner, "name", "fresh"),
            "settle_s": getattr(runner, "settle_s", None),
            "round_spacer_bytes": getattr(runner, "shift_max_bytes", None),
            "round_budget": AUTO_BUDGET if getattr(runner, "budgets", None) else AS_GIVEN}


def parse_assignments(items, what: str) -> dict:
    """NAME=VALUE items as a mapping; a name given twice (the first would be lost), a blank
    name and a NUL byte (no environment can hold one) are refused."""
    env = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{what} expects NAME=VALUE, got {item!r}")
        check_env_text(name, value, what)
        if name in env and env[name] != value:
            raise UsageError(f"{what}: {name} is given twice ({name}={env[name]} and "
                             f"{item}); give it once")
        env[name] = value
    return env


ENV_MAX_BYTES = 131071     # Linux's MAX_ARG_STRLEN less the NUL: one NAME=VALUE string


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_text(name: str, value: str, what: str) -> None:
    if "\0" in name or "\0" in value:
        raise UsageError(f"{what}: {name!r}: an environment variable cannot hold a NUL byte")
    if not ENV_NAME.fullmatch(name):          # a typo: no program reads such a variable
        raise UsageError(f"{what}: {name[:40]!r} is not an environment variable name "
                         f"(letters, digits and _, not starting with a digit)")
    size = len(f"{name}={value}".encode("utf-8", "surrogateescape"))
    if size > ENV_MAX_BYTES:              # the side's process could not even be started
        raise UsageError(f"{what}: {name[:40]!r}: NAME=VALUE is {size} bytes; a process takes "
                         f"at most {ENV_MAX_BYTES} per variable")


def sides_from_switch(spec: str) -> tuple[Side, Side]:
    """`NAME=a,b` -> side A with NAME=a, side B with NAME=b."""
    name, sep, values = spec.partition("=")
    parts = values.split(",")
    if not sep or not name.strip() or len(parts) != 2:
        raise UsageError(f"--switch expects NAME=A_VALUE,B_VALUE, got {spec!r}")
    check_env_text(name, values, "--switch")
    return (Side("A", {name: parts[0]}, description=f"{name}={parts[0]}"),
            Side("B", {name: parts[1]}, description=f"{name}={parts[1]}"))


def sides_from_env(env_a, env_b) -> tuple[Side, Side]:
    ea, eb = parse_assignments(env_a, "--env-a"), parse_assignments(env_b, "--env-b")
    return (Side("A", ea, description=" ".join(f"{k}={v}" for k, v in ea.items())),
            Side("B", eb, description=" ".join(f"{k}={v}" for k, v in eb.items())))


def env_for(side: Side, backend_name: str | None = None) -> dict:
    """The parent's environment with the side's overrides; with a named backend, only that
    backend's visibility variables survive (another vendor's must not leak into the child)."""
    return child_environment(backend_name, overrides=side.env)
