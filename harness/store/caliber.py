"""The caliber (口径): everything that changes what a number means.

Two runs are comparable only when their calibers match. A `Caliber` is built once per run
from the plan, and once more at the end with the timer actually used (a graph run whose
every case fell back is an event-timed run); it is never edited in place. Versions are not
part of it: they may legitimately differ between the two sides of an A/B comparison.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping

from ..common.errors import UsageError, quoted
from ..common.fields import Fields

MISSING = "<missing>"
# Fields added later, with the value every run written before them had.
# (Runs before `inputs` built every input as the library's code does: "upstream".)
LEGACY_DEFAULTS = {"ir_stage": "ttgir", "tuning_space": {}, "card": "", "inputs": "upstream",
                   "placements": 1, "placement_memory": "reused", "level_placements": 0,
                   "level_min_us": 0.0}
# The caliber's timer of a run that timed nothing (`--no-timing`): its rows carry no latency,
# and it never compares with a timed run.
UNTIMED = "none"
# Recorded, never refused: the guard warns when they differ (store/../ab/guard.py).
WARN_ONLY = ("card",)
# Fields whose values are names from a fixed set (the option table's choices).
CHOICES = {"inputs": ("device", "upstream"), "placement_memory": ("reused", "new")}


@dataclass(frozen=True)
class Caliber:
    backend: str
    device: str
    timer: str                       # the timer actually used (graph / event / host)
    bench_level: str
    shape_mode: str                  # "default", "upstream" or "file:<sha256 prefix>"
    tuner_cache: str                 # "none", "isolated" or "shared(<where>)"
    repeat: int
    l2_policy: str
    warmup_ms: float
    stopping: Mapping[str, Any] = field(default_factory=dict)
    autotune_mode: str = "record"    # record / replay / uncontrolled
    ir_capture: bool = True
    ir_stage: str = "ttgir"          # the IR stage fingerprints cover
    seed: int = 0                    # inputs are built from it; another seed, other inputs
    tuning_space: Mapping[str, str] = field(default_factory=dict)  # adapter switches that are on
    card: str = ""                   # which card (UUID or physical index): a warning only
    inputs: str = "device"           # how inputs are made (--inputs): other values, other inputs
    placements: int = 1              # placements of the inputs per case (--placements)
    placement_memory: str = "reused"  # where a new placement's inputs may lie
    level_placements: int = 0        # --level-placements: at most this many, where drawn
    level_min_us: float = 0.0        # --level-min-us: cases probed from here on (0: off)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["stopping"] = dict(self.stopping)
        out["tuning_space"] = dict(self.tuning_space)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any],
                  fallback: Mapping[str, Any] | None = None) -> "Caliber":
        """A stored caliber; a field the writer did not know comes from `fallback` (what an
        older run.json recorded elsewhere, e.g. its top-level `seed`), else from the value
        every run before it had, else is `<missing>` (so it differs from any real value
        instead of passing silently)."""
        for what, value in (("", data), (" fallback", fallback or {})):
            if not isinstance(value, Mapping):
                raise UsageError(f"Caliber:{what} expected an object, got {quoted(value, 60)}")
        fallback = fallback or {}
        given = {name: data.get(name, fallback.get(name)) for name in cls.field_names()
                 if name in data or name in fallback}
        check_caliber(Fields(given, "Caliber"))
        return cls(**{name: given.get(name, LEGACY_DEFAULTS.get(name, MISSING))
                      for name in cls.field_names()})

    def with_timer(self, timer: str) -> "Caliber":
        return replace(self, timer=timer)

    def differences(self, other: "Caliber", ignore: tuple[str, ...] = ()) -> list["Difference"]:
        """Every field (but `ignore` and the warn-only ones) whose value differs, in field
        order."""
        return [Difference(name, getattr(self, name), getattr(other, name))
                for name in self.field_names()
                if name not in (*ignore, *WARN_ONLY)
                and _plain(getattr(self, name)) != _plain(getattr(other, name))]


def check_caliber(f: Fields) -> None:
    """A stored caliber's fields, where present (older runs lack some), of the types and
    ranges zlh writes: a damaged one is bad input (exit 2), not a caliber that merely
    differs. `f`'s error names the field."""
    kinds = {"repeat": lambda name: f.int(name, low=1), "seed": f.int,
             "placements": lambda name: f.int(name, low=1),
             "level_placements": lambda name: f.int(name, low=0),
             "level_min_us": lambda name: f.number(name, low=0),
             "warmup_ms": lambda name: f.number(name, low=0), "stopping": f.object,
             "ir_capture": f.bool, "tuning_space": f.object}
    for name in Caliber.field_names():
        if f.doc.get(name) is not None:
            kinds.get(name, f.str)(name)
            if name in CHOICES and f.doc[name] not in CHOICES[name]:
                raise f.error(name, " or ".join(CHOICES[name]), f.doc[name])


@dataclass(frozen=True)
class Difference:
    field: str
    a: Any
    b: Any

    def describe(self) -> str:
        return f"{self.field} differs: A={_short(self.a)}, B={_short(self.b)}"


def _plain(value):
    return dict(value) if isinstance(value, Mapping) else value


def _short(value) -> str:
    return json.dumps(dict(value), sort_keys=True) if isinstance(value, Mapping) else str(value)
