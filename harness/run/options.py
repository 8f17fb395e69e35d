"""`BenchOptions`: what one `zlh bench` is asked to do, and its one translation.

The same record crosses every boundary: the CLI builds it from its flags, the Python API
from keywords (`from_flat`), a child process gets it back as arguments (`to_argv`), and a
run directory stores it (`to_dict`) so that `zlh ab --replay` can run the other side with
the same settings (`from_run`). Each option is named once, in `OPTIONS`.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

from ..common.errors import UsageError
from ..common.limits import MAX_REPEAT, MAX_RETRY_THROTTLED
from ..measure.stopping import StoppingRule
from ..compile.ir.variants import IR_STAGES
from ..measure.timers import TIMER_NAMES, Budget

LEVELS = ("core", "comprehensive")
L2_POLICIES = ("warm", "flush")
TIMERS = ("auto", *TIMER_NAMES)
DEFAULT_SEED = 0
SEED_LIMIT = 2 ** 32          # numpy's seed range: 0 .. 2**32 - 1


@dataclass(frozen=True)
class Option:
    """One bench option: its flat name (API keyword, run.json key), its command-line flag,
    and how it is written: `value`, `list` (comma-separated), `flag` (present when true) or
    `negated` (present when false, e.g. --no-check for check=False)."""
    name: str
    flag: str
    kind: str = "value"


OPTIONS = (
    Option("adapter", "--adapter"), Option("backend", "--backend"),
    Option("device", "--device"), Option("dtypes", "--dtypes", "list"),
    Option("shapes", "--shapes"), Option("level", "--level"), Option("timer", "--timer"),
    Option("repeat", "--repeat"), Option("l2", "--l2"), Option("warmup_ms", "--warmup-ms"),
    Option("min_samples", "--min-samples"), Option("min_time_ms", "--min-time-ms"),
    Option("max_time_ms", "--max-time-ms"), Option("target_rel_err", "--target-rel-err"),
    Option("seed", "--seed"), Option("check", "--no-check", "negated"),
    Option("flaggems_dir", "--flaggems-dir"),
    Option("isolate_tuner_cache", "--isolate-tuner-cache", "flag"),
    Option("ir", "--no-ir", "negated"), Option("ir_stage", "--ir-stage"),
    Option("out", "--out"), Option("replay", "--replay"),
    Option("keep_cache", "--keep-cache", "flag"), Option("cases", "--cases"),
    Option("case_shard", "--case-shard"),
    Option("telemetry_interval", "--telemetry-interval"),
    Option("retry_throttled", "--retry-throttled"), Option("plant_pct", "--plant-pct"),
)
_RULE_FIELDS = ("min_samples", "min_time_ms", "max_time_ms", "target_rel_err")
_BUDGET_FIELDS = ("warmup_ms",)
FLAT_NAMES = tuple(o.name for o in OPTIONS)
# Options that say where a run goes, what it replays, what watches it or what it plants —
# not how it measures; a run reproduced from its run.json gets them from its caller.
LOCATION_NAMES = ("out", "replay", "keep_cache", "telemetry_interval", "plant_pct")


@dataclass(frozen=True)
class BenchOptions:
    adapter: str | None = None          # None: the adapter a named checkout implies, else builtin
    backend: str | None = None          # None: detected
    device: int | None = None           # logical index; None: first visible device
    dtypes: tuple[str, ...] | None = None  # None: the op's defaults
    shapes: str | None = None           # shape file; None: the adapter's defaults
    level: str = "core"
    timer: str = "auto"
    repeat: int = 1
    l2: str = "warm"
    out: str = "runs"
    seed: int = DEFAULT_SEED
    check: bool = True                  # compare the function under test with the baseline
    rule: StoppingRule = field(default_factory=StoppingRule)
    budget: Budget = field(default_factory=Budget)
    flaggems_dir: str | None = None     # FlagGems checkout (else the adapter's environment)
    replay: str | None = None           # record run (or a root holding <op>_* record runs)
    isolate_tuner_cache: bool = False   # private library tuner cache for this invocation
    keep_cache: bool = False            # keep the private Triton (and tuner) caches
    ir: bool = True                     # capture the IR of the variants measured cases launch
    ir_stage: str = "ttgir"             # the stage the fingerprint covers (ttgir is always kept)
    cases: str | None = None            # user cases, `module:attr` (implies the user adapter)
    case_shard: str | None = None       # "k/N": only every N-th case from the k-th (sweeps)
    telemetry_interval: float = 5.0     # seconds between telemetry.tsv samples; 0: off
    retry_throttled: int = 0            # measure a throttled case again, up to N times
    plant_pct: float | None = None      # calibrate: device spin sized as % of --replay's latency
    argv: tuple[str, ...] | None = None

    def __post_init__(self):
        """Every field type- and range-checked: a bad value is a UsageError naming it."""
        for f in fields(self):
            if f.name in ("rule", "budget"):
                continue
            object.__setattr__(self, f.name, _check(f.name, getattr(self, f.name)))
        for name, value in (("warmup_ms", self.budget.warmup_ms),
                            *((k, getattr(self.rule, k)) for k in _RULE_FIELDS)):
            _check(name, value)

    # ---- flat form: API keywords, run.json ----------------------------------------------
    @classmethod
    def from_flat(cls, **values: Any) -> "BenchOptions":
        """From flat keywords (`min_samples=5`, `dtypes=["float32"]`, ...), each checked for
        type and range; an unknown keyword or a bad value is a UsageError naming it."""
        unknown = sorted(set(values) - set(FLAT_NAMES) - {"argv", "rule", "budget"})
        if unknown:
            raise UsageError(f"unknown bench option {', '.join(unknown)}; known: "
                             f"{', '.join(FLAT_NAMES)}")
        checked = {k: (_check(k, v) if k in _RULE_FIELDS + _BUDGET_FIELDS else v)
                   for k, v in values.items() if k not in ("rule", "budget")}
        rule = _instance("rule", values.get("rule"), StoppingRule)
        budget = _instance("budget", values.get("budget"), Budget)
        rule_kw = {k: checked.pop(k) for k in _RULE_FIELDS if k in checked}
        budget_kw = {k: checked.pop(k) for k in _BUDGET_FIELDS if k in checked}
        low = rule_kw.get("min_time_ms", rule.min_time_ms)
        high = rule_kw.get("max_time_ms", rule.max_time_ms)
        if high < low:
            raise UsageError(f"--max-time-ms {high:g} is below --min-time-ms {low:g}; "
                             f"give a --min-time-ms at most {high:g}")
        try:
            if rule_kw:
                rule = replace(rule, **rule_kw,
                               max_samples=max(rule.max_samples,
                                               rule_kw.get("min_samples", rule.min_samples)))
            if budget_kw:
                budget = replace(budget, **budget_kw)
        except ValueError as exc:
            raise UsageError(f"stopping rule: {exc}") from None
        return cls(rule=rule, budget=budget, **checked)

    def to_flat(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("rule", "budget")}
        out.update({k: getattr(self.rule, k) for k in _RULE_FIELDS})
        out.update({k: getattr(self.budget, k) for k in _BUDGET_FIELDS})
        out["dtypes"] = list(self.dtypes) if self.dtypes is not None else None
        return out

    def to_dict(self) -> dict:
        """For run.json: the flat options with paths made absolute, without argv."""
        out = self.to_flat()
        out.pop("argv", None)
        for key in ("shapes", "flaggems_dir", "out", "replay"):
            if out.get(key):
                out[key] = os.path.abspath(str(out[key]))
        return out

    # ---- arguments for a child `zlh bench` ------------------------------------------------
    def to_argv(self) -> list[str]:
        """`zlh bench` arguments giving these options: every option that differs from its
        default, in OPTIONS order."""
        mine, default = self.to_flat(), BenchOptions().to_flat()
        args: list[str] = []
        for option in OPTIONS:
            value = mine[option.name]
            if value == default[option.name]:
                continue
            if option.kind == "flag":
                args += [option.flag] if value else []
            elif option.kind == "negated":
                args += [option.flag] if not value else []
            elif option.kind == "list":
                args += [option.flag, ",".join(value)]
            else:
                args += [option.flag, _text(value)]
        return args

    # ---- from a stored run -----------------------------------------------------------------
    @classmethod
    def from_run(cls, info: Mapping[str, Any], run_dir: str = "run") -> "BenchOptions":
        """The options a run was made with (run.json's `options`), device pinned to the one
        it used, location options cleared (the caller sets out and replay)."""
        stored = info.get("options")
        if not isinstance(stored, dict):
            raise UsageError(f"{run_dir}: run.json records no options (written by an older "
                             f"zlh?); cannot reproduce its settings")
        values = {k: v for k, v in stored.items() if k in FLAT_NAMES and k not in LOCATION_NAMES}
        options = cls.from_flat(**values)
        device = (info.get("device") or {}).get("index")
        caliber = info.get("caliber") or {}
        if options.device is None and isinstance(device, int) and caliber.get("backend") != "cpu":
            options = replace(options, device=device)
        return options

    def replace(self, **changes) -> "BenchOptions":
        return replace(self, **changes)

    def shard(self) -> tuple[int, int]:
        """(k, N) of `case_shard`; (0, 1) when the run measures every case."""
        if not self.case_shard:
            return 0, 1
        k, _, n = self.case_shard.partition("/")
        return int(k), int(n)


def _instance(name: str, value, kind: type):
    """`rule` / `budget`: an instance of its class, or None for the default."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise UsageError(f"option {name}: expected a harness.{kind.__name__}, got "
                         f"{type(value).__name__} (or give its fields as keywords, e.g. "
                         f"min_samples=5)")
    return value


def _dtype_tuple(value) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or \
            not all(isinstance(v, str) for v in value):
        raise UsageError(f"dtypes must be a list of dtype names (e.g. ['float16']), "
                         f"got {value!r}")
    names = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
    if not names:
        raise UsageError("dtypes is empty; leave it out for the op's defaults")
    return names


_TYPES = {
    "adapter": str, "backend": str, "shapes": str, "flaggems_dir": str, "replay": str,
    "out": str, "cases": str, "case_shard": str, "level": str, "timer": str, "l2": str, "ir_stage": str,
    "device": int, "repeat": int, "seed": int, "min_samples": int,
    "warmup_ms": float, "min_time_ms": float, "max_time_ms": float, "target_rel_err": float,
    "check": bool, "isolate_tuner_cache": bool, "keep_cache": bool, "ir": bool,
    "telemetry_interval": float, "retry_throttled": int, "plant_pct": float,
}
_CHOICES = {"level": LEVELS, "timer": TIMERS, "l2": L2_POLICIES, "ir_stage": IR_STAGES}
_MINIMUM = {"device": 0, "repeat": 1, "seed": 0, "min_samples": 1, "warmup_ms": 0.0,
            "min_time_ms": 0.0, "max_time_ms": 0.0, "target_rel_err": 0.0,
            "telemetry_interval": 0.0, "retry_throttled": 0, "plant_pct": 0.0}
_MAXIMUM = {"telemetry_interval": 3600.0, "plant_pct": 1000.0,      # as the command line's
            "repeat": MAX_REPEAT, "retry_throttled": MAX_RETRY_THROTTLED}
_OPTIONAL = {"adapter", "backend", "shapes", "flaggems_dir", "replay", "device", "dtypes", "argv",
             "case_shard", "cases", "plant_pct"}


def _check(name: str, value: Any) -> Any:
    """One flat option, type- and range-checked (bools are not numbers here)."""
    if name == "dtypes":
        return None if value is None else _dtype_tuple(value)
    if name == "argv":
        if value is not None and (isinstance(value, str) or not isinstance(value, Sequence)):
            raise UsageError(f"option argv: expected a list of arguments, got {value!r}")
        return None if value is None else tuple(str(a) for a in value)
    if name == "flaggems_dir" and value == "":
        value = None                    # an empty checkout variable means unset, as in a shell
    if value is None and name in _OPTIONAL:
        return value
    kind = _TYPES[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise UsageError(f"option {name}: expected {kind.__name__}, got {value!r}")
    if kind is str and not value.strip():
        raise UsageError(f"option {name}: an empty value; leave it out for the default")
    if kind is str and "\x00" in value:          # no path, name or module holds one
        raise UsageError(f"option {name}: {value!r} holds a NUL byte")
    if kind is float and not math.isfinite(value):
        raise UsageError(f"option {name}: {value!r} is not a finite number")
    if name in _MINIMUM and value < _MINIMUM[name]:
        raise UsageError(f"option {name}: {value!r} is below its minimum {_MINIMUM[name]}")
    if name in _MAXIMUM and value > _MAXIMUM[name]:
        raise UsageError(f"option {name}: {value!r} is above its maximum {_MAXIMUM[name]:g}")
    if name == "case_shard" and not _valid_shard(value):
        raise UsageError(f"option case_shard: expected k/N with 0 <= k < N, got {value!r}")
    if name == "seed" and value >= SEED_LIMIT:
        raise UsageError(f"option seed: {value} is out of range (0 .. {SEED_LIMIT - 1})")
    if name in _CHOICES and value not in _CHOICES[name]:
        raise UsageError(f"option {name}: unknown value {value!r}; known: "
                         f"{', '.join(_CHOICES[name])}")
    return value


def _valid_shard(text: str) -> bool:
    k, sep, n = text.partition("/")
    return bool(sep) and (k + n).isascii() and k.isdigit() and n.isdigit() and \
        0 <= int(k) < int(n)


def _text(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)
