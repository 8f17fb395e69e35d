"""`zlh screen`: one cheap pair per op, a verdict per op, `screen.tsv`.

Per op, on one device, one after the other: side A records, side B replays A's record. Each
side is an ordinary batch root (`A/`, `B/`: reused workers per side and device, isolation,
timeouts, retries, `.complete` markers), so a killed screen resumes like a batch. The verdict
comes from the two run directories (verdict.py) and is recomputed, never run again, by
`--rescore` (new scrub patterns, fixed rules).

Files under the screen root: screen.json (plan, sides, options, scrub, IR stage),
screen.tsv (a row per op, rewritten atomically as ops finish), ir_changed.txt, A/ and B/.
"""
from __future__ import annotations

import contextlib
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..ab.sides import Side, check_env_text
from ..common.errors import PreflightError, UsageError
from ..common.fields import Fields
from ..common.files import (atomic_write_json, atomic_write_text, check_output_file,
                            read_json_object)
from ..common.log import Echo
from ..compile.ir.fingerprint import compile_scrub
from . import files
from .batch import Batch, BatchPlan
from .lanes import lane_for, watch_devices
from .environment import record_env_change
from .executor import make_executor
from .outcome import Outcome
from .selection import Item
from .sharding import device_for
from .threads import run_lanes
from .verdict import (IR_CHANGED, NO_IR_DIFF, NO_ROWS, NO_TRITON, VERDICTS, Verdict, decide,
                      read_tsv, tsv_row, tsv_text)

SCREEN_JSON = "screen.json"
SCREEN_TSV = "screen.tsv"
IR_CHANGED_TXT = "ir_changed.txt"


@dataclass
class ScreenPlan:
    root: Path
    base: BatchPlan                 # items, devices, options, timeouts (root unused)
    a: Side
    b: Side
    scrub: list[str] = field(default_factory=list)

    def side_plan(self, side: Side) -> BatchPlan:
        plan = BatchPlan(**{**vars(self.base), "root": self.root / side.label,
                            "python": side.python})
        return plan

    def to_dict(self) -> dict:
        return {"schema_version": files.SCHEMA_VERSION, "kind": "screen",
                "batch": self.base.to_dict(), "A": vars(self.a), "B": vars(self.b),
                "scrub": self.scrub, "ir_stage": self.base.options.ir_stage}

    @classmethod
    def from_dict(cls, root: Path, doc: dict) -> "ScreenPlan":
        f = Fields(doc, f"{root}/{SCREEN_JSON}")
        base = BatchPlan.from_dict(root, f.object("batch"), where=f"{f.where}: batch")
        scrub = f.strs("scrub", [])
        try:
            compile_scrub(scrub)
        except ValueError as exc:
            raise f.error("scrub", f"valid patterns ({exc})", scrub) from None
        return cls(root=Path(root), base=base, a=side_from(f, "A"), b=side_from(f, "B"),
                   scrub=scrub)


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


class Screen:
    def __init__(self, plan: ScreenPlan, echo: Echo, progress: Echo | None, resume: bool,
                 retry: tuple[str, ...] = ()):
        self.plan, self.echo, self.progress = plan, echo, progress
        quiet = (lambda _: None)
        executor = make_executor(plan.base.executor, **plan.base.executor_options())
        self.sides = {s.label: Batch(plan.side_plan(s), quiet, None, resume,
                                     executor=executor, retry=retry) for s in (plan.a, plan.b)}
        for side in self.sides.values():
            side.resume_command = f"zlh screen --resume {plan.root}"
        self.verdicts: dict[str, Verdict] = {}
        self.lock = threading.Lock()
        self.started = time.time()

    def run(self) -> dict[str, Verdict]:
        with watch_devices(self.plan.root, self.plan.base):
            return self._run()

    def _run(self) -> dict[str, Verdict]:
        side_a, side_b = self.sides["A"], self.sides["B"]
        side_a.carry_over()
        side_b.carry_over()
        for item in self.plan.base.items:       # A runs again (--retry): B replays its new record
            if item.op not in side_a.outcomes:
                side_b.forget(item.op)
        for item in self.plan.base.items:           # both sides finished before: verdict only
            if item.op in side_a.outcomes and item.op in side_b.outcomes:
                self._verdict(item, side_a.outcomes[item.op], side_b.outcomes[item.op])
        todo = [i for i in self.plan.base.items if i.op not in self.verdicts]
        devices = self.plan.base.devices
        run_lanes([(f"screen-{d}", self._lane,
                    (d, [i for i in todo if device_for(i.op, devices) == d])) for d in devices],
                  lambda: [b.stop.set() for b in self.sides.values()])
        preflight = side_a.preflight or side_b.preflight
        if preflight:
            raise PreflightError("screen", preflight)
        return self.verdicts

    def _lane(self, device: int, items: list[Item]) -> None:
        lanes, runners = {}, {}
        with contextlib.ExitStack() as stack:
            for side in (self.plan.a, self.plan.b):
                batch = self.sides[side.label]
                lanes[side.label] = lane_for(batch.plan, device, side.env)
                runners[side.label] = stack.enter_context(
                    batch.open_lane(lanes[side.label], device))
            for item in items:
                if any(b.stop.is_set() for b in self.sides.values()):
                    break
                if not self._pair(item, device, lanes, runners):
                    break

    def _pair(self, item: Item, device: int, lanes, runners) -> bool:
        """A records, then B replays A's record; False when a machine-wide preflight failure
        stops the screen."""
        side_a, side_b = self.sides["A"], self.sides["B"]
        a = side_a.outcomes.get(item.op)
        if a is None:
            a = side_a.run_item(item, lanes["A"], runners["A"])
            if a is None:
                for batch in self.sides.values():
                    batch.stop.set()
                return False
            side_a.record(item.op, a, device)
        b = None
        if a.run_dir is not None and a.rows_success:
            b = side_b.run_item(item, lanes["B"], runners["B"], replay=a.run_dir)
            if b is None:
                return False
            side_b.record(item.op, b, device)
        self._verdict(item, a, b)
        return True

    def _verdict(self, item: Item, a: Outcome, b: Outcome | None) -> None:
        verdict = decide(item.op, a, b, self.plan.scrub, self.plan.base.options.ir_stage)
        with self.lock:
            self.verdicts[item.op] = verdict
            write_table(self.plan, self.verdicts)
            self._line(verdict)

    def _line(self, v: Verdict) -> None:
        total = len(self.plan.base.items)
        times = "/".join("-" if t is None else f"{t:.1f}s" for t in (v.elapsed_a, v.elapsed_b))
        shown = v.shown_range()
        self.echo(f"[{len(self.verdicts):>{len(str(total))}}/{total}] {v.verdict:<10} {times:>13} "
                  f"{v.op}" + (f"  {shown}" if shown else "") + (f"  ({v.note})" if v.note else ""))


def write_table(plan: ScreenPlan, verdicts: dict[str, Verdict]) -> None:
    rows = []
    for v in verdicts.values():          # in the order ops finished
        item = next((i for i in plan.base.items if i.op == v.op), None)
        where = plan.base.inventory.get(v.op, {})
        dtypes = ",".join(item.dtypes) if item and item.dtypes else \
            ",".join(plan.base.options.dtypes or ()) or "-"
        rows.append(tsv_row(v, where.get("file", "-"), dtypes))
    atomic_write_text(plan.root / SCREEN_TSV, tsv_text(rows))


def summary_lines(plan: ScreenPlan, verdicts: dict[str, Verdict], wall_s: float,
                  rounds_command: str) -> list[str]:
    counts = {name: sum(1 for v in verdicts.values() if v.verdict == name) for name in VERDICTS}
    lines = [f"screen: {len(verdicts)} ops in {wall_s:.0f} s: " +
             ", ".join(f"{k} {n}" for k, n in counts.items() if n)]
    broken = [v for v in verdicts.values() if v.broken]
    if broken:
        lines.append(f"!!! BROKEN_BY_B: {len(broken)} op(s) where B failed cases A ran: " +
                     ", ".join(v.op for v in broken))
    changed = sorted((v for v in verdicts.values() if v.verdict == IR_CHANGED),
                     key=lambda v: -abs(v.median_delta_pct or 0.0))
    if changed:
        lines.append("IR_CHANGED, by |median delta|:")
        lines += [f"  {v.op:<30} {v.shown_range():<40} {v.note}" for v in changed]
        lines.append(f"rounds on exactly these: {rounds_command}")
    return lines


def write_ir_changed(plan: ScreenPlan, verdicts: dict[str, Verdict]) -> Path:
    path = plan.root / IR_CHANGED_TXT
    ops = [v.op for v in sorted(verdicts.values(), key=lambda v: -abs(v.median_delta_pct or 0))
           if v.verdict == IR_CHANGED]
    atomic_write_text(path, "".join(f"{op}\n" for op in ops))
    return path


def write_plan(plan: ScreenPlan) -> None:
    plan.root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(plan.root / SCREEN_JSON, plan.to_dict())


def record_screen_env_change(plan: ScreenPlan, now: dict) -> None:
    """screen.json (and each side's batch.json) of a resume allowed under other environment
    switches: the new values, and the change (when, from, to) appended to `env_changes`."""
    change = {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "from": plan.base.env, "to": now}
    path = plan.root / SCREEN_JSON
    doc = read_json_object(path, f"{plan.root} is not a screen root (no {SCREEN_JSON})")
    doc["batch"] = {**doc.get("batch", {}), "env": now}
    doc["env_changes"] = [*(doc.get("env_changes") or []), change]
    atomic_write_json(path, doc)
    plan.base.env = now
    for side in (plan.a, plan.b):
        if (plan.root / side.label / files.BATCH_JSON).is_file():
            record_env_change(plan.root / side.label, change)


def record_screen_executor(plan: ScreenPlan) -> None:
    """screen.json of a resume that named another executor: the next resume keeps it."""
    path = plan.root / SCREEN_JSON
    doc = read_json_object(path, f"{plan.root} is not a screen root (no {SCREEN_JSON})")
    doc["batch"] = {**doc.get("batch", {}), "executor": plan.base.executor,
                    "ray_address": plan.base.ray_address}
    atomic_write_json(path, doc)


def write_side_plan(plan: ScreenPlan, side: Side) -> None:
    """A side's batch.json, derived from the screen plan."""
    (plan.root / side.label).mkdir(parents=True, exist_ok=True)
    files.write_batch_json(plan.root / side.label, {**plan.side_plan(side).to_dict(),
                                                     "screen_side": side.label})


def check_resume_files(plan: ScreenPlan) -> None:
    """What a resumed screen writes, checked before anything runs: each side's folder, its
    batch.json (written again when lost) and tables, and the screen's own tables. A file
    where a side's folder belongs, or a folder where a table belongs, is one line now (exit
    2), not a failed write (exit 1) after the ops ran."""
    for side in (plan.a, plan.b):
        folder = plan.root / side.label
        files.check_folder_place(folder, f"side {side.label}'s batch belongs there; move it "
                                         f"away, then zlh screen --resume {plan.root}")
        check_output_file(folder / files.BATCH_JSON, f"side {side.label} plan")
        files.check_tables(folder, [item.op for item in plan.base.items])
    for name in (SCREEN_TSV, IR_CHANGED_TXT):
        check_output_file(plan.root / name, "screen file")


def mend_side_plans(plan: ScreenPlan, echo: Echo) -> None:
    """A side's batch.json that is missing or unreadable (its side directory deleted, the
    file damaged) is written again from screen.json; the finished ops the side still holds
    are kept."""
    for side in (plan.a, plan.b):
        try:
            files.read_batch_json(plan.root / side.label)
        except UsageError as exc:
            echo(f"zlh screen: {side.label}/{files.BATCH_JSON} written again from "
                 f"{plan.root}/{SCREEN_JSON} ({exc})")
            write_side_plan(plan, side)


def rescore(root: Path, extra_scrub: list[str], echo: Echo,
            warn: Echo | None = None) -> dict[str, Verdict]:
    """Every verdict again from the stored run directories, with the plan's scrub plus
    `extra_scrub`; the previous table is kept as screen.tsv.before-rescore. An op without a
    finished side A, or whose run directory is gone or damaged, is said on `warn`."""
    warn = warn or echo
    plan = read_plan(root)
    plan.scrub = list(dict.fromkeys([*plan.scrub, *extra_scrub]))
    for name in (SCREEN_TSV, SCREEN_TSV + ".before-rescore", IR_CHANGED_TXT):
        check_output_file(root / name, "screen file")
    old = _old_verdicts(root / SCREEN_TSV, warn)
    verdicts, unfinished = {}, []
    for item in plan.base.items:
        a = files.read_complete(root / "A", item.op)
        b = files.read_complete(root / "B", item.op)
        if a is None:
            unfinished.append(item.op)
            continue
        for label, side in (("A", a), ("B", b)):
            problem = side and files.run_problem(item.op, side[0])
            if problem:
                warn(f"WARNING: {files.op_dir(root / label, item.op) / files.COMPLETE} "
                     f"names run {side[0].run_dir}, which {problem}; the verdict is decided "
                     f"without it (zlh screen --resume {root} runs it again)")
        verdicts[item.op] = decide(item.op, a[0], b[0] if b else None, plan.scrub,
                                   plan.base.options.ir_stage)
    if not verdicts:
        raise UsageError(f"{root}: no op has a finished side A (A/<op>/{files.COMPLETE}); "
                         f"nothing to rescore (zlh screen --resume {root} runs them)")
    if unfinished:
        warn(f"WARNING: {len(unfinished)} op(s) without a finished side A keep no row: "
             f"{', '.join(unfinished)} (zlh screen --resume {root} runs them)")
    if (root / SCREEN_TSV).is_file():
        shutil.copyfile(root / SCREEN_TSV, root / (SCREEN_TSV + ".before-rescore"))
    write_table(plan, verdicts)
    write_plan(plan)
    write_ir_changed(plan, verdicts)
    for op, v in verdicts.items():
        if old.get(op) != v.verdict:
            echo(f"{op} {old.get(op, '-')} -> {v.verdict}")
    counts = {name: sum(1 for v in verdicts.values() if v.verdict == name) for name in VERDICTS}
    echo("rescored: " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
    return verdicts


def _old_verdicts(path: Path, warn: Echo) -> dict[str, str]:
    """{op: verdict} of the table a rescore replaces; a damaged one is said and read as
    empty (the rescore writes it anew from the run directories)."""
    if not path.exists():
        return {}
    try:
        return {r.get("op", "-"): r.get("verdict", "-") for r in read_tsv(path)}
    except UsageError as exc:
        warn(f"WARNING: {exc.message}; previous verdicts shown as -")
        return {}


__all__ = ["ScreenPlan", "Screen", "read_plan", "write_plan", "rescore", "summary_lines",
           "write_ir_changed", "NO_ROWS", "NO_TRITON", "NO_IR_DIFF", "IR_CHANGED"]
