"""The plan of a screen (screen.json): the ops and their batch plan, the two sides, the scrub
patterns, the timing mode; the names of the files a screen root holds. Read back field by
field, a bad field one UsageError line naming it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..ab.sides import Side, check_env_text
from ..common.fields import Fields
from ..common.files import read_json_object
from ..compile.ir.fingerprint import compile_scrub
from . import files
from .batch_plan import BatchPlan


SCREEN_JSON = "screen.json"
SCREEN_TSV = "screen.tsv"
IR_CHANGED_TXT = "ir_changed.txt"
TIMING_ALL, TIMING_CHANGED, TIMING_NONE = "all", "changed", "none"
TIMING_MODES = (TIMING_ALL, TIMING_CHANGED, TIMING_NONE)
TIMED = ".timed"             # A.timed/, B.timed/: the timed pair of an IR_CHANGED op


@dataclass
class ScreenPlan:
    root: Path
    base: BatchPlan                 # items, devices, options, timeouts (root unused)
    a: Side
    b: Side
    scrub: list[str] = field(default_factory=list)
    timing: str = TIMING_ALL

    def side_plan(self, side: Side, timed: bool = False) -> BatchPlan:
        """Side `side`'s batch: the verdict pass (`A/`, `B/`; untimed unless timing is all),
        or with `timed` the timed pair (`A.timed/`, `B.timed/`). Under `changed` the untimed
        runs keep their Triton cache for the timed run of the same side and op (screen.py)."""
        options = self.base.options
        if not timed and self.timing != TIMING_ALL:
            options = options.replace(timing=False,
                                      keep_compile_cache=self.timing == TIMING_CHANGED)
        return BatchPlan(**{**vars(self.base), "root": self.root / side_folder(side, timed),
                            "python": side.python, "options": options})

    def side_doc(self, side: Side, timed: bool = False) -> dict:
        """The batch.json of side `side` (its timed pair's with `timed`)."""
        return {**self.side_plan(side, timed).to_dict(), "screen_side": side_folder(side, timed)}

    def batches(self) -> list[tuple[Side, bool]]:
        """(side, timed) of every batch root this screen has."""
        return [(s, t) for t in (False, True) if not t or self.timing == TIMING_CHANGED
                for s in (self.a, self.b)]

    def to_dict(self) -> dict:
        return {"schema_version": files.SCHEMA_VERSION, "kind": "screen",
                "batch": self.base.to_dict(), "A": vars(self.a), "B": vars(self.b),
                "scrub": self.scrub, "ir_stage": self.base.options.ir_stage,
                "timing": self.timing}

    @classmethod
    def from_dict(cls, root: Path, doc: dict) -> "ScreenPlan":
        f = Fields(doc, f"{root}/{SCREEN_JSON}")
        base = BatchPlan.from_dict(root, f.object("batch"), where=f"{f.where}: batch")
        scrub = f.strs("scrub", [])
        try:
            compile_scrub(scrub)
        except ValueError as exc:
            raise f.error("scrub", f"valid patterns ({exc})", scrub) from None
        timing = f.str("timing", TIMING_ALL)     # older roots timed everything
        if timing not in TIMING_MODES:
            raise f.error("timing", " or ".join(TIMING_MODES), timing)
        return cls(root=Path(root), base=base, a=side_from(f, "A"), b=side_from(f, "B"),
                   scrub=scrub, timing=timing)


def side_folder(side: Side, timed: bool = False) -> str:
    return side.label + (TIMED if timed else "")


def side_from(f: Fields, label: str) -> Side:
    """Side `label` of a stored plan (screen.json, campaign.json), field by field."""
    doc = f.object(label)
    env = doc.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and (v is None or
                                                                   isinstance(v, str))
                                            for k, v in env.items()):
        raise f.error(f"{label}.env", "an object of NAME: value strings", env)
    for name, value in env.items():
        if not name or "=" in name:
            raise f.error(f"{label}.env", "variable names without '=' (and not empty)", name)
        check_env_text(name, value or "", f"{f.where}: {label}.env")
    s = Fields(doc, f"{f.where}: {label}")
    if s.str("label", label) != label:       # the side's folder under the root is its label
        raise s.error("label", repr(label), doc.get("label"))
    return Side(label=label, env=dict(env), python=s.str("python"),
                description=s.str("description", ""), options=s.object("options", {}))


def read_plan(root: Path) -> ScreenPlan:
    doc = read_json_object(Path(root) / SCREEN_JSON,
                           f"{root} is not a screen root (no {SCREEN_JSON})")
    return ScreenPlan.from_dict(Path(root), doc)
