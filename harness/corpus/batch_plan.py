"""The plan of a batch (batch.json): its ops, devices, bench options, timeouts, retries, the
environment switches it started under, its shard or merge record; read back field by field,
a bad field one UsageError line naming it."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..common import spelling
from ..common.errors import UsageError
from ..common.fields import Fields
from ..run.options import BenchOptions
from . import files
from .check import MAX_RETRIES
from .executor import executor_fields
from .standby import DEFAULT_OVERLAP_WIDTH, MAX_OVERLAP_WIDTH
from .selection import Item
from .sharding import device_for
from .stall import DEFAULT_STALL_S


@dataclass
class BatchPlan:
    root: Path
    items: list[Item]
    devices: list[int]
    options: BenchOptions                  # every op's bench options (out set per op)
    op_timeout_s: float = 1800.0
    stall_timeout_s: float = DEFAULT_STALL_S    # 0: off (the op timeout alone)
    fresh_process: bool = False
    retries: int = 2
    python: str = sys.executable
    argv: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    inventory: dict = field(default_factory=dict)      # op -> {"repo", "file"}
    replay_root: Path | None = None     # a recorded batch: each op replays its record there
    # The environment switches the batch started under (environment_switches); None: an
    # older root that recorded none (its resume is not checked).
    env: dict | None = None
    env_change: dict | None = None      # a resume allowed under other switches (not stored)
    # `--shard K/N`: {k, n, selection, digest} (sharding.Shard.record); a root `zlh merge`
    # made: {n, digest, shards, ...} (merge.py). Kept as they are through a resume.
    shard: dict | None = None
    merged: dict | None = None
    overlap: bool = False               # several ops at once per lane, one on the device
    overlap_width: int = DEFAULT_OVERLAP_WIDTH   # how many, with overlap
    executor: str = "local"             # who runs the ops (executor.py): local, ray
    ray_address: str | None = None      # --ray-address of the ray executor (None: auto)

    def executor_options(self) -> dict:
        """The options of make_executor for this plan's executor."""
        if self.executor == "ray":
            return {"fresh_process": self.fresh_process, "address": self.ray_address,
                    "backend": self.options.backend}
        return {"fresh_process": self.fresh_process, "overlap": self.overlap,
                "overlap_width": self.overlap_width}

    def to_dict(self) -> dict:
        return {"ops": [{"op": i.op, "dtypes": list(i.dtypes) if i.dtypes else None,
                         "device": device_for(i.op, self.devices)} for i in self.items],
                "devices": self.devices, "options": self.options.to_dict(),
                "op_timeout_s": self.op_timeout_s, "stall_timeout_s": self.stall_timeout_s,
                "fresh_process": self.fresh_process,
                "retries": self.retries, "python": self.python, "command": self.argv,
                "left_out": [{"op": o, "why": w} for o, w in self.left_out],
                "inventory": self.inventory,
                "replay_root": str(self.replay_root) if self.replay_root else None,
                "env": self.env, "overlap": self.overlap,
                "overlap_width": self.overlap_width, "executor": self.executor,
                "ray_address": self.ray_address,
                **({"shard": self.shard} if self.shard else {}),
                **({"merged": self.merged} if self.merged else {})}

    @classmethod
    def from_dict(cls, root: Path, doc: dict, where: str | None = None) -> "BatchPlan":
        """The plan batch.json holds; a field of the wrong type (an edited or damaged file)
        is one UsageError line naming the field and what it should hold."""
        f = Fields(doc, where or f"{root}/{files.BATCH_JSON}")
        f.objects("ops")
        items = [_item(f.at("ops", n)) for n in range(len(doc["ops"]))]
        left_out = f.objects("left_out", [])
        lf = [Fields(d, f"{f.where}: left_out[{n}]") for n, d in enumerate(left_out)]
        inventory, replay = f.object("inventory", {}), doc.get("replay_root")
        if not all(isinstance(v, dict) for v in inventory.values()):
            raise f.error("inventory", "an object of op: {repo, file}", inventory)
        retries = f.int("retries", low=0)
        if retries > MAX_RETRIES:
            raise f.error("retries", f"an integer from 0 to {MAX_RETRIES}", retries)
        env = doc.get("env")
        if env is not None and not (isinstance(env, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise f.error("env", "null or an object of NAME: value strings", env)
        kind, address = executor_fields(f)
        return cls(root=Path(root), items=items, devices=device_list(f, "devices"),
                   options=options_field(f, "options"),
                   op_timeout_s=f.number("op_timeout_s", low=1),
                   stall_timeout_s=f.number("stall_timeout_s", DEFAULT_STALL_S, low=0),
                   fresh_process=f.bool("fresh_process"), retries=retries,
                   python=f.str("python", "") or sys.executable, argv=f.strs("command"),
                   left_out=[(d.str("op"), d.str("why")) for d in lf], inventory=inventory,
                   replay_root=Path(f.str("replay_root", empty=False)) if replay is not None
                   else None, env=env, shard=f.object("shard", {}) or None,
                   merged=f.object("merged", {}) or None, overlap=f.bool("overlap", False),
                   overlap_width=f.int("overlap_width", DEFAULT_OVERLAP_WIDTH, low=2,
                                       high=MAX_OVERLAP_WIDTH),
                   executor=kind, ray_address=address)


def device_list(f: Fields, name: str) -> list[int]:
    """A stored list of devices: non-empty, distinct, non-negative indices."""
    devices = f.get(name)
    if not isinstance(devices, list) or not devices or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in devices) \
            or len(set(devices)) != len(devices):
        raise f.error(name, "a non-empty list of distinct device indices", devices)
    return list(devices)


def options_field(f: Fields, name: str) -> BenchOptions:
    """Stored bench options (without `out`); a bad one names the file and the field."""
    stored = f.object(name)
    try:
        with spelling.as_keywords():         # the file's keys are the keywords
            return BenchOptions.from_flat(**{k: v for k, v in stored.items() if k != "out"})
    except UsageError as exc:
        raise UsageError(f"{f.where}: field {name}: {exc.message}") from None


def _item(f: Fields) -> Item:
    dtypes = f.get("dtypes", None)
    if dtypes is not None and not (isinstance(dtypes, list) and dtypes and
                                   all(isinstance(d, str) and d for d in dtypes)):
        raise f.error("dtypes", "null or a non-empty list of dtype names", dtypes)
    return Item(f.str("op", empty=False), tuple(dtypes) if dtypes else None)
