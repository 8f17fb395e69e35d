"""The roots of a command's shards (`zlh batch|screen --shard K/N`), read and checked before
`zlh merge` joins them.

A shard root holds its own ops and, in `shard` of its plan (batch.json; screen.json's
`batch`), its K and N, the whole selection and its digest. Shards join when they come from
one command: the same kind, N, selection, bench options, sides, timing mode, environment
switches and caliber. K, --out, the devices a task saw and how its ops were run (RUN_FIELDS:
the executor, overlap, the stall timeout — another machine, another executor) may differ.
Each is a one-line refusal: a caliber that differs exits 4 (as every comparison of two
calibers does), anything else 2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import backends

from ..common.errors import CaliberError, UsageError
from ..common.files import read_json_object
from ..store.caliber import Caliber
from . import files
from .screen_plan import SCREEN_JSON, SCREEN_TSV, TIMED, TIMING_ALL, TIMING_CHANGED
from .sharding import Shard
from .verdict import read_tsv

# What every shard of one command shares, field by field of its batch plan.
PLAN_FIELDS = (("zlh_version", "zlh version"), ("options", "bench options"),
               ("op_timeout_s", "--op-timeout"), ("retries", "--retries"),
               ("fresh_process", "--fresh-process"), ("python", "interpreter"),
               ("replay_root", "--replay root"), ("left_out", "ops left out"))
SCREEN_FIELDS = (("A", "side A"), ("B", "side B"), ("scrub", "--scrub patterns"),
                 ("ir_stage", "IR stage"), ("timing", "--timing mode"))
IGNORED_OPTIONS = ("out",)           # where runs would go: each shard's own root
# How a shard's ops were run, not what was measured: may differ between shards (the merged
# plan keeps the first shard's value, `merged.shards` each shard's, `merged.differing` names
# those that differ).
RUN_FIELDS = ("executor", "ray_address", "overlap", "overlap_width", "stall_timeout_s")


@dataclass
class ShardRoot:
    root: Path
    kind: str                        # "batch" or "screen"
    doc: dict                        # batch.json, or screen.json
    shard: Shard
    selection: list[dict]
    digest: str
    finished: set[str] = field(default_factory=set)

    @property
    def batch(self) -> dict:
        """Its batch plan: batch.json, or screen.json's `batch`."""
        return self.doc["batch"] if self.kind == "screen" else self.doc

    @property
    def name(self) -> str:
        return f"shard {self.shard} ({self.root})"

    @property
    def sides(self) -> tuple[str, ...]:
        """The batch roots under it, relative: the root itself, or a screen's A and B (and
        A.timed, B.timed: the timed pairs of `--timing changed`)."""
        if self.kind != "screen":
            return ("",)
        timed = ("A" + TIMED, "B" + TIMED) if self.doc.get("timing") == TIMING_CHANGED else ()
        return ("A", "B", *timed)

    def ops(self) -> list[str]:
        return [entry["op"] for entry in self.batch.get("ops", [])]


def read_shard(path: str | Path) -> ShardRoot:
    """A shard root, or one UsageError line saying what the folder is instead."""
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"{path}: no such shard root (a folder `zlh batch --out` or `zlh "
                         f"screen --root` made with --shard K/N)")
    if (root / SCREEN_JSON).is_file():
        kind, doc = "screen", read_json_object(root / SCREEN_JSON, "")
        batch = doc.get("batch")
    else:
        kind, doc = "batch", files.read_batch_json(root)
        batch = doc
        if doc.get("screen_side"):
            raise UsageError(f"{root} is side {doc['screen_side']} of a screen; merge the "
                             f"screens' roots (the folders that hold screen.json)")
    if not isinstance(batch, dict) or not isinstance(batch.get("ops"), list):
        raise UsageError(f"{root}/{SCREEN_JSON} holds no batch plan (a damaged file)")
    if batch.get("merged"):
        raise UsageError(f"{root} was made by zlh merge; give the shards' own roots")
    record = batch.get("shard")
    if not record:
        raise UsageError(f"{root} is a {kind} root made without --shard K/N: it holds its "
                         f"whole selection already, there is nothing to merge it with")
    try:
        shard = Shard(int(record["k"]), int(record["n"]))
        selection = [{"op": str(e["op"]), "dtypes": e.get("dtypes")}
                     for e in record["selection"]]
        digest = str(record["digest"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise UsageError(f"{root}: the plan's shard record is damaged (expected k, n, "
                         f"selection, digest)") from None
    if not 1 <= shard.k <= shard.n:
        raise UsageError(f"{root}: the plan names shard {shard}, which cannot be")
    found = ShardRoot(root, kind, doc, shard, selection, digest)
    found.finished = finished_ops(found)
    return found


def finished_ops(shard: ShardRoot) -> set[str]:
    """The shard's finished ops: a batch op with its `.complete` (checked readable); a screen
    op with its row in screen.tsv (its verdict)."""
    if shard.kind == "batch":
        return {op for op in shard.ops() if files.read_complete(shard.root, op) is not None}
    table = shard.root / SCREEN_TSV
    rows = read_tsv(table) if table.is_file() else []
    mine = set(shard.ops())
    done = {row["op"] for row in rows if row["op"] in mine}
    for op in done:                       # a damaged side is named here, in the shard
        for side in shard.sides:
            files.read_complete(shard.root / side, op)
    return done


def check_shards(shards: list[ShardRoot], partial: bool) -> list[int]:
    """UsageError (or CaliberError) for shards that do not join; the numbers of the shards
    missing (refused unless `partial`), and the unfinished ops of those given (refused
    unless `partial`)."""
    first = shards[0]
    seen: dict[int, ShardRoot] = {}
    for s in shards:
        _same_command(first, s)
        if s.shard.k in seen:
            raise UsageError(f"shards overlap: {seen[s.shard.k].name} and {s.name} are both "
                             f"shard {s.shard}; give each shard once")
        seen[s.shard.k] = s
    check_calibers(shards)
    missing = [k for k in range(1, first.shard.n + 1) if k not in seen]
    if missing and not partial:
        shown = ", ".join(f"{k}/{first.shard.n}" for k in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        raise UsageError(f"shard {shown}{more} missing: give every shard's root (or "
                         f"--partial to merge those given)")
    for s in shards:
        left = [op for op in s.ops() if op not in s.finished]
        if left and not partial:
            raise UsageError(f"{s.name} has {len(left)} unfinished op(s) (first: {left[0]}): "
                             f"zlh {s.kind} --resume {s.root}, then merge again (or "
                             f"--partial to merge what finished)")
    return missing


def _same_command(first: ShardRoot, s: ShardRoot) -> None:
    """The shards of one merge come from one command: only K, the root, the devices and
    how the ops were run (RUN_FIELDS, not compared) differ."""
    if s.kind != first.kind:
        raise UsageError(f"{s.name} is a {s.kind} root, {first.name} a {first.kind} root; "
                         f"merge the shards of one command")
    if s.shard.n != first.shard.n:
        raise UsageError(f"{s.name} is one of {s.shard.n} shards, {first.name} one of "
                         f"{first.shard.n}; merge the shards of one command")
    if s.digest != first.digest or s.selection != first.selection:
        what = (f"plans {s.digest} and {first.digest}" if s.digest != first.digest else
                "the same plan digest, but their shard.selection files differ: one was "
                "edited")
        raise UsageError(f"{s.name} and {first.name} are shards of different selections "
                         f"({what}); merge the shards of one command")
    fields = [(key, what, first.batch, s.batch) for key, what in PLAN_FIELDS]
    if s.kind == "screen":
        fields += [(key, what, first.doc, s.doc) for key, what in SCREEN_FIELDS]
    for key, what, a, b in fields:
        detail = difference(_plain(key, b.get(key)), _plain(key, a.get(key)))
        if detail:
            raise UsageError(f"{s.name} was started with other {what} than {first.name} "
                             f"({detail} there); the shards of one merge come from one command "
                             f"(only --shard and --out differ)")
    detail = difference(switches(s.batch), switches(first.batch))
    if detail:
        raise UsageError(f"{s.name} ran under other environment switches than {first.name} "
                         f"({detail} there); its ops are measured another way: run it again under "
                         f"the same switches")
    ops = {e["op"] for e in first.selection}
    inventories = [{op: where for op, where in (x.batch.get("inventory") or {}).items()
                    if op in ops} for x in (first, s)]
    detail = difference(*reversed(inventories))
    if detail:
        raise UsageError(f"{s.name} read its ops from another corpus than {first.name} "
                         f"({detail} there); run every shard on the same checkout")


def _plain(key: str, value):
    if key == "timing":
        return value or TIMING_ALL           # older screens timed everything
    if key == "options" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in IGNORED_OPTIONS}
    return value


def switches(batch: dict) -> dict:
    """The environment switches a shard recorded, less the visibility variables (a job
    array's scheduler gives each task its own devices)."""
    visibility = {k for b in backends.all_backends() for k in b.visibility_keys}
    return {k: v for k, v in (batch.get("env") or {}).items() if k not in visibility}


def difference(a, b) -> str:
    """'' when equal, else the first difference (`KEY: A vs B` for objects)."""
    if a == b:
        return ""
    if isinstance(a, dict) and isinstance(b, dict):
        key = sorted(k for k in set(a) | set(b) if a.get(k, "<unset>") != b.get(k, "<unset>"))
        if key:
            return f"{key[0]}: {_short(a.get(key[0], '<unset>'))} vs " \
                   f"{_short(b.get(key[0], '<unset>'))}"
    return f"{_short(a)} vs {_short(b)}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_calibers(shards: list[ShardRoot]) -> None:
    """CaliberError (exit 4) when two shards' first runs (per side) differ in a caliber field
    other than the timer (an op's own fallback, kept per row) and the card."""
    for side in shards[0].sides:
        known = [(s, caliber_of(s, side)) for s in shards]
        known = [(s, c) for s, c in known if c is not None]
        for s, caliber in known[1:]:
            ref, ref_caliber = known[0]
            diffs = ref_caliber.differences(caliber, ignore=("timer",))
            if diffs:
                d = diffs[0]
                where = f" (side {side})" if side else ""
                raise CaliberError(f"{s.name} was measured at another caliber than "
                                   f"{ref.name}{where} ({d.field}: {_short(d.b)} vs "
                                   f"{_short(d.a)} there); the shards of one "
                                   f"merge run on one kind of device with one set of options")


def caliber_of(shard: ShardRoot, side: str) -> Caliber | None:
    doc = shard.doc if not side else _side_doc(shard, side)
    stored = doc.get("caliber") if doc else None
    if not stored:
        return None
    try:
        return Caliber.from_dict(stored)
    except UsageError as exc:
        raise UsageError(f"{shard.root / side / files.BATCH_JSON}: field caliber: "
                         f"{exc.message}") from None


def _side_doc(shard: ShardRoot, side: str) -> dict | None:
    path = shard.root / side / files.BATCH_JSON
    return files.read_batch_json(shard.root / side) if path.is_file() else None
