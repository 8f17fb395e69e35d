"""`zlh merge`: one batch or screen root from the roots of its shards (`--shard K/N`).

The merged root is an ordinary root of its kind, laid out as the unsharded command would
have written it: every finished op's folder (its `.complete`, attempt logs and run
directories) under the same relative path, batch.json (screen.json, and A/ and B/ for a
screen) planning the whole selection, ops_status.csv and summary.csv rebuilt from the ops'
`.complete` the way a batch writes them, screen.tsv and ir_changed.txt from the shards' rows.
`merged` in the plan names the shards (with how each ran its ops: RUN_FIELDS, which may
differ; the plan keeps the first shard's, `differing` names those that differ), those missing
and the ops unfinished (`--partial`).

Files are hard links to the shards' files (a copy where the file system cannot link: another
device): nothing is duplicated on disk, the merged root stands alone (moving it, or deleting
a shard root, loses nothing) and its relative paths hold. zlh never writes a finished file in
place (temp + rename), so a link never sees a shard's later change.

The root is built beside `--out` and renamed into place: a reader sees the previous merge or
this one, never half of one. `--out` is a new or empty folder, or a root an earlier merge of
the same selection made — replaced when it holds no shard that is not given again.
"""
from __future__ import annotations

import contextlib
import copy
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import RunFailedError, UsageError, write_failure
from ..common.files import (atomic_write_json, atomic_write_text, check_output_dir,
                            read_json_object)
from ..common.lock import holding, only_lock
from . import files
from .batch import BatchPlan
from .screen_plan import IR_CHANGED_TXT, SCREEN_JSON, SCREEN_TSV, TIMED, ScreenPlan
from .shard_roots import RUN_FIELDS, ShardRoot, check_shards, read_shard
from .sharding import device_for
from .verdict import IR_CHANGED, read_tsv, tsv_text

TELEMETRY = "telemetry"             # the shards' telemetry.tsv, as shard<K>of<N>.tsv


@dataclass
class MergeResult:
    root: Path
    kind: str
    n: int
    given: list[int]
    missing: list[int]
    ops: int                                     # the whole selection
    finished: int
    unfinished: int
    counts: Counter = field(default_factory=Counter)     # status (batch) or verdict (screen)
    files: Counter = field(default_factory=Counter)      # linked / copied


def merge_roots(paths, out: str | Path, partial: bool = False, argv=()) -> MergeResult:
    """Check the shard roots at `paths`, build the merged root beside `out`, rename it into
    place. UsageError / CaliberError (one line) for shards that do not join."""
    if not paths:
        raise UsageError("zlh merge: give the shards' roots (ROOT...) and --out")
    shards = sorted((read_shard(p) for p in paths), key=lambda s: s.shard.k)
    missing = check_shards(shards, partial)
    out = Path(out)
    _check_out(out, shards)
    staging = out.parent / f".{out.name}.merging-{os.getpid()}"
    with _held(out):
        try:
            staging.mkdir(parents=True)
            result = _build(shards, staging, missing, list(argv))
            _swap(staging, out)
        except OSError as exc:
            reason = write_failure(exc)
            raise RunFailedError(f"{out}: the merged root cannot be written ({reason}); "
                                 f"{out} is as it was", reason) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    result.root = out
    return result


def _build(shards: list[ShardRoot], target: Path, missing: list[int], argv) -> MergeResult:
    first = shards[0]
    order = [entry["op"] for entry in first.selection]
    owner = {op: s for s in shards for op in s.shard.ops(order)}
    finished = [op for op in order if op in owner and op in owner[op].finished]
    unfinished = [op for op in order if op in owner and op not in owner[op].finished]
    result = MergeResult(target, first.kind, first.shard.n, [s.shard.k for s in shards],
                         missing, len(order), len(finished), len(unfinished))
    record = {"kind": first.kind, "n": first.shard.n, "digest": first.digest,
              "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "shards": [{"k": s.shard.k, "root": str(s.root.resolve()), "ops": len(s.ops()),
                          "finished": len(s.finished & set(s.ops())),
                          "env_changes": s.batch.get("env_changes") or [],
                          **{key: s.batch.get(key) for key in RUN_FIELDS}} for s in shards],
              "differing": [key for key in RUN_FIELDS
                            if len({repr(s.batch.get(key)) for s in shards}) > 1],
              "missing": missing, "unfinished": unfinished}
    for side in first.sides:
        statuses = _merge_side(shards, side, target / side, owner, finished, record, argv,
                               result.files)
        if first.kind == "batch":
            result.counts = statuses
    if first.kind == "screen":
        result.counts = _merge_screen(shards, target, owner, finished, record, argv)
    for s in shards:                   # what each shard's devices did while it ran
        tsv = s.root / "telemetry.tsv"
        if tsv.is_file():
            (target / TELEMETRY).mkdir(exist_ok=True)
            _link(tsv, target / TELEMETRY / f"shard{s.shard.k}of{s.shard.n}.tsv", result.files)
    return result


def _merge_side(shards, side: str, dest: Path, owner, finished, record, argv,
                counts: Counter) -> Counter:
    """One batch root (a batch, or a screen's side) from the shards' op folders: the
    folders linked, batch.json planning the whole selection, the tables rebuilt. The
    statuses of its ops."""
    dest.mkdir(parents=True, exist_ok=True)
    for op in finished:
        source = files.op_dir(owner[op].root / side, op)
        if (source / files.COMPLETE).is_file():         # a screen's B runs only after rows
            shutil.copytree(source, files.op_dir(dest, op), symlinks=True,
                            copy_function=lambda a, b: _link(a, b, counts))
    doc = _plan_doc(shards, side, owner, record, argv)
    files.write_batch_json(dest, doc)
    plan = BatchPlan.from_dict(dest, files.read_batch_json(dest))
    backend = (doc.get("caliber") or {}).get("backend") or plan.options.backend or "-"
    status_rows, summary_rows, statuses = [], [], Counter()
    for op in finished:
        done = files.read_complete(dest, op)
        if done is None:
            continue
        outcome, device = done
        timer, rows = files.op_summary_rows(op, outcome, backend, device)
        status_rows.append(files.status_row(dest, op, outcome, plan.inventory.get(op, {}),
                                            backend, device, timer))
        summary_rows += rows
        statuses[outcome.status] += 1
    files.write_tables(dest, status_rows, files.summary_lines(summary_rows))
    return statuses


def _plan_doc(shards: list[ShardRoot], side: str, owner, record: dict, argv) -> dict:
    """The batch plan of the merged root (side: of that side): the first shard's, planning
    the whole selection, with the caliber of the first shard that has one."""
    first = shards[0]
    docs = [_side_doc(s, side) for s in shards]
    doc = copy.deepcopy(docs[0])
    for key in ("schema_version", "shard", "env_changes", "caliber"):
        doc.pop(key, None)
    planned = {e["op"]: e.get("device") for d in docs for e in d.get("ops", [])}
    devices = first.batch.get("devices") or [0]
    doc["ops"] = [{"op": e["op"], "dtypes": e.get("dtypes"),
                   "device": planned.get(e["op"], device_for(e["op"], devices))}
                  for e in first.selection]
    caliber = next((d["caliber"] for d in docs if d.get("caliber")), None)
    if caliber:
        doc["caliber"] = caliber
    return {**doc, "command": argv or doc.get("command", []), "merged": record}


def _side_doc(shard: ShardRoot, side: str) -> dict:
    """A shard's batch plan for `side`: batch.json of the side (else derived from
    screen.json, as a resumed screen writes it again: a side's options, timed or not)."""
    if not side:
        return shard.batch
    path = shard.root / side / files.BATCH_JSON
    if path.is_file():
        return files.read_batch_json(shard.root / side)
    plan = ScreenPlan.from_dict(shard.root, shard.doc)
    label = side.removesuffix(TIMED)
    return plan.side_doc(plan.a if label == "A" else plan.b, side != label)


def _merge_screen(shards, target: Path, owner, finished, record, argv) -> Counter:
    """screen.json, screen.tsv and ir_changed.txt of a merged screen; its verdicts."""
    rows = {}
    for s in shards:
        table = s.root / SCREEN_TSV
        for row in read_tsv(table) if table.is_file() else []:
            if owner.get(row["op"]) is s:
                rows[row["op"]] = row
    kept = [rows[op] for op in finished if op in rows]
    atomic_write_text(target / SCREEN_TSV, tsv_text(kept))
    changed = sorted((r for r in kept if r.get("verdict") == IR_CHANGED),
                     key=lambda r: -abs(_number(r.get("median_delta_pct"))))
    atomic_write_text(target / IR_CHANGED_TXT, "".join(f"{r['op']}\n" for r in changed))
    doc = copy.deepcopy(shards[0].doc)
    doc.pop("env_changes", None)
    doc["batch"] = _plan_doc(shards, "", owner, record, argv)
    atomic_write_json(target / SCREEN_JSON, doc)
    ScreenPlan.from_dict(target, read_json_object(target / SCREEN_JSON, ""))
    return Counter(r.get("verdict", "-") for r in kept)


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _link(source, target, counts: Counter) -> None:
    """`target` a hard link to `source`; a copy where the file system refuses a link."""
    try:
        os.link(source, target)
        counts["linked"] += 1
    except OSError:
        shutil.copy2(source, target)
        counts["copied"] += 1


def _check_out(out: Path, shards: list[ShardRoot]) -> None:
    """`--out`: not a shard root, inside one or around one; new, empty, or the root of an
    earlier merge of this selection that holds no shard missing from those given."""
    check_output_dir(out, "--out")
    here = out.resolve()
    for s in shards:
        there = s.root.resolve()
        if here == there or there in here.parents or here in there.parents:
            raise UsageError(f"--out {out} is {s.root} or lies in or around it; the merged "
                             f"root goes into a folder of its own")
    if not out.exists() or only_lock(out) or not any(out.iterdir()):
        return
    old = _merged_record(out)
    first = shards[0]
    if old is None:
        raise UsageError(f"--out {out} exists and is not a root zlh merge made; give a new "
                         f"(or empty) folder")
    if old.get("digest") != first.digest or old.get("kind") != first.kind:
        raise UsageError(f"--out {out} is the merge of another selection; give a new --out")
    given = {s.shard.k for s in shards}
    lost = [e.get("k") for e in old.get("shards", []) if e.get("k") not in given]
    if lost:
        raise UsageError(f"--out {out} holds shard {lost[0]}/{first.shard.n}, which is not "
                         f"among the roots given: merging again without it would drop its "
                         f"ops; give its root too (or another --out)")


def _merged_record(root: Path) -> dict | None:
    for name, part in ((SCREEN_JSON, "batch"), (files.BATCH_JSON, None)):
        if (root / name).is_file():
            with contextlib.suppress(UsageError):
                doc = read_json_object(root / name, "")
                doc = doc.get(part) if part else doc
                merged = doc.get("merged") if isinstance(doc, dict) else None
                return merged if isinstance(merged, dict) else None
    return None


@contextlib.contextmanager
def _held(out: Path):
    """An existing --out is held while it is replaced (a rescore, a second merge wait)."""
    if out.is_dir():
        with holding(out, "merge", then="then merge again"):
            yield
    else:
        yield


def _swap(staging: Path, out: Path) -> None:
    """The built root renamed into place; an earlier merge set aside first, then removed."""
    if not out.exists():
        os.rename(staging, out)
        return
    aside = out.parent / f".{out.name}.replaced-{os.getpid()}"
    os.rename(out, aside)
    os.rename(staging, out)
    shutil.rmtree(aside, ignore_errors=True)
