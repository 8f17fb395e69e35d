"""`BenchOptions`: what one `zlh bench` is asked to do, and its one translation.

The same record crosses every boundary: the CLI builds it from its flags, the Python API
from keywords (`from_flat`), a child process (a fresh `zlh bench` or a corpus worker) gets
it as arguments (`to_argv`, read back by `from_argv`), and a run directory stores it so
that `zlh ab --replay` can run the other side with the same settings (`from_run`). Its
fields, their checks and their flags come from the option table (run/option_table.py):
each option is declared there, once.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..common import spelling
from ..common.errors import UsageError
from ..measure.stopping import Budget, StoppingRule
from ..store.caliber import LEGACY_DEFAULTS
from .placement import REUSED as PLACEMENT_REUSED
from .option_table import (BY_FLAG, BY_NAME, DEFAULT_SEED, FLAT_NAMES, L2_POLICIES, LEVELS,
                           LOCATION_NAMES, MEASURE_NAMES, OPTIONS, SEED_LIMIT, SHARED_NAMES,
                           TIMERS, Option, manifest_option_names, option_rows)

__all__ = ["BenchOptions", "OPTIONS", "Option", "FLAT_NAMES", "LOCATION_NAMES", "SHARED_NAMES",
           "MEASURE_NAMES", "LEVELS", "L2_POLICIES", "TIMERS", "DEFAULT_SEED", "SEED_LIMIT",
           "manifest_option_names", "option_rows"]

_PARTS = {"rule": StoppingRule, "budget": Budget}
_OWN = tuple(o for o in OPTIONS if o.part is None)     # BenchOptions' own fields


def _table_fields(cls):
    """The table's options (but those living in `rule` and `budget`) as the class's first
    fields, typed and defaulted as the table says."""
    own = {o.name: o.annotation() for o in _OWN}
    cls.__annotations__ = {**own, **cls.__annotations__}
    for o in _OWN:
        setattr(cls, o.name, o.default)
    return cls


UNHOOKED_REPLAY = ("--replay pins the configs through the autotune hooks, which "
                   "--no-autotune-hooks switches off: leave out one of them")


def refuse_unhooked(options: "BenchOptions", what: str) -> None:
    """UsageError when `what` (a command whose runs replay others' records) is given
    --no-autotune-hooks: there would be nothing to pin its sides' configs with."""
    if not options.autotune_hooks:
        raise UsageError(f"{what} replays side A's record on side B through the autotune "
                         f"hooks, which --no-autotune-hooks switches off: leave it out")


@dataclass(frozen=True)
@_table_fields
class BenchOptions:
    """adapter, backend, device, dtypes, shapes, level, timer, ... (the option table), plus
    the stopping rule and budget (their option fields are flat keywords of `from_flat`) and
    the command line a run records (`argv`)."""
    rule: StoppingRule = field(default_factory=StoppingRule)
    budget: Budget = field(default_factory=Budget)
    argv: tuple[str, ...] | None = None

    def __post_init__(self):
        """Every own field checked by its table record: a bad value is a UsageError naming
        it. `rule` and `budget` are records that check themselves."""
        for option in _OWN:
            object.__setattr__(self, option.name, option.check(getattr(self, option.name)))
        for name, kind in _PARTS.items():
            if _instance(name, getattr(self, name), kind) is None:
                object.__setattr__(self, name, kind())
        argv = self.argv
        if argv is not None and (isinstance(argv, str) or not isinstance(argv, Sequence)):
            raise UsageError(f"option argv: expected a list of arguments, got {argv!r}")
        object.__setattr__(self, "argv", None if argv is None else tuple(str(a) for a in argv))

    # ---- flat form: API keywords ------------------------------------------------------------
    @classmethod
    def from_flat(cls, **values: Any) -> "BenchOptions":
        """From flat keywords (`min_samples=5`, `dtypes=["float32"]`, ...), each checked for
        type and range; an unknown keyword or a bad value is a UsageError naming it. `rule`
        and `budget` may be given whole (a StoppingRule, a Budget); their fields given as
        keywords win."""
        unknown = sorted(set(values) - set(FLAT_NAMES) - {"argv", *_PARTS})
        if unknown:
            raise UsageError(f"unknown bench option {', '.join(unknown)}; known: "
                             f"{', '.join(FLAT_NAMES)}")
        parts = {name: _instance(name, values.pop(name, None), kind) or kind()
                 for name, kind in _PARTS.items()}
        given = {name: {} for name in _PARTS}
        for name in [k for k in values if k in BY_NAME and BY_NAME[k].part]:
            option = BY_NAME[name]
            given[option.part][name] = option.check(values.pop(name))
        rule, budget = parts["rule"], parts["budget"]
        low = given["rule"].get("min_time_ms", rule.min_time_ms)
        high = given["rule"].get("max_time_ms", rule.max_time_ms)
        if high < low:
            least = spelling.option("min_time_ms")
            raise UsageError(f"{spelling.option('max_time_ms')} {high:g} is below {least} "
                             f"{low:g}; give a {least} at most {high:g}")
        try:
            if given["rule"]:
                least = given["rule"].get("min_samples", rule.min_samples)
                rule = replace(rule, **given["rule"], max_samples=max(rule.max_samples, least))
            if given["budget"]:
                budget = replace(budget, **given["budget"])
        except ValueError as exc:
            raise UsageError(f"stopping rule: {exc}") from None
        return cls(rule=rule, budget=budget, **values)

    def value(self, name: str) -> Any:
        """One option's value by its flat name (also those living in `rule` and `budget`)."""
        part = BY_NAME[name].part
        return getattr(getattr(self, part) if part else self, name)

    def caliber_differences(self, other: "BenchOptions",
                            names: Sequence[str] | None = None) -> list[Option]:
        """The caliber options (those of `names` in their order, default every option in
        table order) whose value here differs from `other`'s."""
        chosen = OPTIONS if names is None else [BY_NAME[n] for n in names if n in BY_NAME]
        return [o for o in chosen
                if o.caliber and self.caliber_value(o.name) != other.caliber_value(o.name)]

    def to_flat(self) -> dict:
        out = {o.name: self.value(o.name) for o in OPTIONS}
        out["argv"] = self.argv
        out["dtypes"] = list(self.dtypes) if self.dtypes is not None else None
        return out

    def to_dict(self) -> dict:
        """Every option, flat, with paths made absolute, without argv (batch.json, an A/B
        root's sides.json, a campaign plan)."""
        out = self.absolute().to_flat()
        out.pop("argv")
        return out

    def run_record(self) -> dict:
        """run.json's `options`: those the caliber does not record (it is where a run's
        caliber values are read: `from_run`)."""
        out = self.to_dict()
        for option in OPTIONS:
            if option.caliber:
                del out[option.name]
        return out

    def budget_record(self) -> dict:
        """run.json's `budget`: the timing core's budgets that are no option (estimate
        calls, unroll and capture limits, ...; an API caller may set them through a Budget)."""
        return {k: v for k, v in self.budget.to_dict().items() if k not in BY_NAME}

    def caliber_values(self) -> dict:
        """The caliber fields these options give (bench_level, repeat, l2_policy, warmup_ms,
        stopping, ir_capture, ir_stage, seed); `stopping` is the whole rule."""
        out: dict = {}
        for option in OPTIONS:
            if option.caliber:
                key, _, sub = option.caliber.partition(".")
                out[key] = getattr(self, option.part).to_dict() if sub else \
                    self.caliber_value(option.name)
        return out

    def caliber_value(self, name: str) -> Any:
        """An option's value as the caliber records it: with one placement nothing is moved,
        so the placement memory reads `reused` whatever was asked; with level placements
        off no case is probed, so their floor reads 0."""
        if name == "placement_memory" and self.placements == 1:
            return PLACEMENT_REUSED
        if name == "level_min_us" and not self.level_placements:
            return 0.0
        return self.value(name)

    # ---- arguments for a child `zlh bench` (or a corpus worker) -----------------------------
    def to_argv(self) -> list[str]:
        """`zlh bench` arguments giving these options: every option that differs from its
        default, in table order."""
        args: list[str] = []
        for option in OPTIONS:
            value = self.value(option.name)
            if value == option.default:
                continue
            if option.kind in ("flag", "negated"):
                args.append(option.flag)
            else:
                args += [option.flag, option.text(value)]
        return args

    @classmethod
    def from_argv(cls, args: Sequence[str], **extra) -> "BenchOptions":
        """What `to_argv` wrote, read back (a corpus worker's jobs carry the arguments a fresh
        `zlh bench` would get), plus `extra` keywords (argv)."""
        values: dict = {}
        items = iter(args)
        for arg in items:
            option = BY_FLAG.get(arg)
            if option is None:
                raise UsageError(f"bench arguments: unknown option {arg!r}")
            if option.kind in ("flag", "negated"):
                values[option.name] = option.kind == "flag"
                continue
            text = next(items, None)
            if text is None:
                raise UsageError(f"bench arguments: {arg} needs a value")
            values[option.name] = option.parse(text)
        return cls.from_flat(**values, **extra)

    # ---- from a stored run ------------------------------------------------------------------
    @classmethod
    def from_run(cls, info: Mapping[str, Any], run_dir: str = "run") -> "BenchOptions":
        """The options a run was made with (run.json's `options`, and its caliber for the
        values the caliber records; older run.json files have them in both), device pinned
        to the one it used, location options cleared (the caller sets out and replay)."""
        stored = info.get("options")
        if not isinstance(stored, dict):
            raise UsageError(f"{run_dir}: run.json records no options (written by an older "
                             f"zlh?); cannot reproduce its settings")
        caliber = info.get("caliber") if isinstance(info.get("caliber"), dict) else {}
        values = {k: v for k, v in stored.items() if k in FLAT_NAMES and k not in LOCATION_NAMES}
        # a run reproduced to replay it must hook the tuners: an unhooked run records nothing,
        # which the replay check then says in its own words (not as a flag never typed)
        values.pop("autotune_hooks", None)
        values.pop("timing", None)      # an untimed run (--no-timing) is reproduced timed
        for option in OPTIONS:
            if option.caliber and option.name not in values:
                key, _, sub = option.caliber.partition(".")
                # a field older runs lack: the value every one of them had (--inputs upstream)
                held = caliber.get(key, None if sub else LEGACY_DEFAULTS.get(key))
                if sub:
                    held = held.get(sub) if isinstance(held, dict) else None
                if held is not None:
                    values[option.name] = held
        options = cls.from_flat(**values)
        device = (info.get("device") or {}).get("index")
        if options.device is None and isinstance(device, int) and caliber.get("backend") != "cpu":
            options = replace(options, device=device)
        return options

    def replace(self, **changes) -> "BenchOptions":
        return replace(self, **changes)

    def with_flat(self, **changes) -> "BenchOptions":
        """These options with `changes` given by flat name (those living in `rule` and
        `budget` too), each checked as `from_flat` checks it; the rule's and budget's fields
        that are no option are kept."""
        return BenchOptions.from_flat(**{**self.to_flat(), "rule": self.rule,
                                         "budget": self.budget, **changes})

    def absolute(self) -> "BenchOptions":
        """These options with every path (out, replay, shapes, checkouts) made absolute now:
        a run keeps no relative path past its start, so an op that changes the working
        directory cannot move where the rest of its run is read or written."""
        changes = {o.name: os.path.abspath(str(self.value(o.name))) for o in OPTIONS
                   if o.path and self.value(o.name)}
        return replace(self, **changes) if changes else self

    def shard(self) -> tuple[int, int]:
        """(k, N) of `case_shard`; (0, 1) when the run measures every case."""
        if not self.case_shard:
            return 0, 1
        k, _, n = self.case_shard.partition("/")
        return int(k), int(n)


def _instance(name: str, value, kind: type):
    """`rule` / `budget`: an instance of its class, or None (the caller's default)."""
    if value is not None and not isinstance(value, kind):
        raise UsageError(f"option {name}: expected a harness.{kind.__name__}, got "
                         f"{type(value).__name__} (or give its fields as keywords, e.g. "
                         f"min_samples=5)")
    return value

