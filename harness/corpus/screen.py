"""`zlh screen`: one cheap pair per op, a verdict per op, `screen.tsv`.

Per op, on one device, one after the other: side A records, side B replays A's record. Each
side is an ordinary batch root (`A/`, `B/`: reused workers per side and device, isolation,
timeouts, retries, `.complete` markers), so a killed screen resumes like a batch. The verdict
comes from the two run directories (verdict.py) and is recomputed, never run again, by
`--rescore` (new scrub patterns, fixed rules).

`timing` says what is timed: `all` (both sides time every case: a delta, or a noise floor,
for every op), `changed` (A and B run each case once, untimed; the code decides the verdict;
only an IR_CHANGED op is then timed, A and B each replaying A's record, into `A.timed/` and
`B.timed/`; with overlap, after the device's untimed pairs, one op at a time), `none`
(verdicts only). Under `changed` a timed run loads its kernels from the
Triton cache the untimed run of its side and op kept, instead of compiling them again while
it holds the device alone; the kept caches go once the op's pair is done.

Files under the screen root: screen.json (plan, sides, options, scrub, IR stage, timing),
screen.tsv (a row per op, rewritten atomically as ops finish), ir_changed.txt, A/ and B/
(and A.timed/, B.timed/).
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from ..ab.sides import Side
from ..common.errors import PreflightError, UsageError
from ..common.files import (atomic_write_json, atomic_write_text, check_output_file,
                            keep_first, read_json_object)
from ..common.log import Echo
from ..compile.caches import KEPT_PREFIX, remove_kept
from . import files
from ..store.reader import read_info
from .batch import Batch
from .lanes import lane_for, watch_devices
from .environment import record_env_change
from .executor import make_executor
from .outcome import Outcome, Settled
from .selection import Item
from .sharding import device_for
from .standby import in_order
from .threads import run_lanes
from .verdict import (IR_CHANGED, NO_IR_DIFF, NO_ROWS, NO_TRITON, VERDICTS, Verdict, decide,
                      old_verdicts, tsv_row, tsv_text)

from .screen_plan import (IR_CHANGED_TXT, SCREEN_JSON, SCREEN_TSV, TIMED,  # noqa: F401
                          TIMING_ALL, TIMING_CHANGED, TIMING_MODES, TIMING_NONE, ScreenPlan,
                          read_plan, side_folder, side_from)


class Screen:
    def __init__(self, plan: ScreenPlan, echo: Echo, progress: Echo | None, resume: bool,
                 retry: tuple[str, ...] = ()):
        self.plan, self.echo, self.progress = plan, echo, progress
        quiet = (lambda _: None)
        executor = make_executor(plan.base.executor, **plan.base.executor_options())
        self.sides = {side_folder(s, t): Batch(plan.side_plan(s, t), quiet, None, resume,
                                               executor=executor, retry=retry)
                      for s, t in plan.batches()}
        for side in self.sides.values():
            side.resume_command = f"zlh screen --resume {plan.root}"
        self.verdicts: dict[str, Verdict] = {}
        self.lock = threading.Lock()
        self.started = time.time()

    def run(self) -> dict[str, Verdict]:
        with watch_devices(self.plan.root, self.plan.base):
            return self._run()

    def _run(self) -> dict[str, Verdict]:
        for side in self.sides.values():
            side.carry_over()
        order = list(self.sides)             # A, B (, A.timed, B.timed): the order they run
        for item in self.plan.base.items:    # a step that runs again (--retry): the later ones
            missing = [n for n, label in enumerate(order)    # too (B replays A's new record,
                       if item.op not in self.sides[label].outcomes]    # a new pair is timed)
            for label in order[missing[0] + 1:] if missing else ():
                self.sides[label].forget(item.op)
        for item in self.plan.base.items:      # every step finished before: verdict only
            done = self._finished(item.op)
            if done is not None:
                self._verdict(item, *done)
                self._drop_kept(item.op)       # a screen ended before it removed them
        todo = [i for i in self.plan.base.items if i.op not in self.verdicts]
        devices = self.plan.base.devices
        run_lanes([(f"screen-{d}", self._lane,
                    (d, [i for i in todo if device_for(i.op, devices) == d])) for d in devices],
                  lambda: [b.stop.set() for b in self.sides.values()])
        preflight = next((s.preflight for s in self.sides.values() if s.preflight), None)
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
            stop = threading.Event()        # either side's stop, or a preflight failure

            def one(item: Item, later: list | None = None) -> bool:
                if any(b.stop.is_set() for b in self.sides.values()):
                    return False
                try:
                    return self._pair(item, device, lanes, runners, later)
                finally:                # timed, not to be timed, failed or stopped: done
                    if later is None or item not in later:
                        self._drop_kept(item.op)
            slots = min(r.slots_for(self.sides[label].plan.options.timing)
                        for label, r in runners.items())
            if slots <= 1:                  # no overlap, or every run times (--timing all)
                in_order(items, 1, one, stop)
                return
            # with overlap: the next pairs' A while this pair's B runs; the pairs to be timed
            # wait until the untimed ones are done, then run one at a time (a run that times
            # runs alone: timed in the stream, each would first wait for its neighbours to end)
            later: list[Item] = []
            in_order(items, slots, lambda item: one(item, later), stop)
            in_order(list(later), 1, one, stop)

    def _finished(self, op: str) -> tuple | None:
        """(a, b, timed) when every step of `op` finished before (a resume), else None."""
        a, b = self.sides["A"].outcomes.get(op), self.sides["B"].outcomes.get(op)
        if a is None or b is None:
            return None
        if not self._wants_timing(op, a, b):
            return a, b, None
        timed = tuple(self.sides[label + TIMED].outcomes.get(op) for label in "AB")
        return (a, b, timed) if None not in timed else None

    def _wants_timing(self, op: str, a: Outcome, b: Outcome | None) -> bool:
        """--timing changed, and the untimed pair's code differs: time it."""
        return self.plan.timing == TIMING_CHANGED and b is not None and decide(
            op, a, b, self.plan.scrub, self.plan.base.options.ir_stage).verdict == IR_CHANGED

    def _pair(self, item: Item, device: int, lanes, runners, later: list | None = None) -> bool:
        """A records, then B replays A's record (then, for an IR_CHANGED op under --timing
        changed, the timed pair, or with `later` given the op put there to be timed after);
        False when a machine-wide preflight failure stops the screen."""
        side_a, side_b = self.sides["A"], self.sides["B"]
        a = side_a.outcomes.get(item.op)
        if a is None:
            a = side_a.run_item(item, lanes["A"], runners["A"])
            if a is None:
                for batch in self.sides.values():
                    batch.stop.set()
                return False
            side_a.record(item.op, a, device)
        b = side_b.outcomes.get(item.op)
        if b is None and b_is_due(a):
            b = side_b.run_item(item, lanes["B"], runners["B"], replay=a.run_dir,
                                settled=Settled.of(a))
            if b is None:
                return False
            side_b.record(item.op, b, device)
        timed = [] if self._wants_timing(item.op, a, b) else None
        if timed is not None and later is not None:
            later.append(item)
            return True
        for label, untimed in zip("AB", (a, b)) if timed is not None else ():
            batch = self.sides[label + TIMED]        # each replays A's record, as B did
            done = batch.outcomes.get(item.op)
            if done is None:       # from where A settled (B's timed run: A's timed run too)
                done = batch.run_item(item, lanes[label], runners[label], replay=a.run_dir,
                                      compile_cache=kept_cache(untimed),
                                      settled=Settled.of(a, *timed))
                if done is None:
                    return False
                batch.record(item.op, done, device)
            timed.append(done)
        self._verdict(item, a, b, timed)
        return True

    def _drop_kept(self, op: str) -> None:
        """The Triton caches the untimed runs of `op` kept (every attempt's), removed."""
        if self.plan.timing == TIMING_CHANGED:
            for label in "AB":
                remove_kept(files.op_dir(self.sides[label].plan.root, op))

    def _verdict(self, item: Item, a: Outcome, b: Outcome | None, timed=None) -> None:
        verdict = decide(item.op, a, b, self.plan.scrub, self.plan.base.options.ir_stage,
                         tuple(timed) if timed is not None else None)
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


def b_is_due(a: Outcome) -> bool:
    """Whether side B runs after this outcome of side A: A left rows and a complete record."""
    return a.run_dir is not None and bool(a.rows_success) and replayable(a.run_dir)


def replayable(run_dir: Path) -> bool:
    """Side A's run completed (B replays only a complete record: a run cut short by its
    timeout or a crash has rows but no record; B is then not run, and the note says why)."""
    try:
        return read_info(run_dir).get("status") == "complete"
    except UsageError:
        return False


def kept_cache(untimed: Outcome) -> str | None:
    """The Triton cache an untimed run kept (named in its run.json's caches, beside its run
    directory: found there in a root moved since), for the timed run of the same side and op
    to load from; None where it kept none (a run that did not start, a root older than kept
    caches). One that is gone since, the timed run finds gone: it compiles into its own.
    Only a kept cache carries KEPT_PREFIX in its name (harness/run/plan.py)."""
    try:
        info = read_info(untimed.run_dir) if untimed.run_dir is not None else {}
    except UsageError:
        return None
    caches = info.get("caches")
    if not isinstance(caches, dict) or not isinstance(caches.get("env"), dict):
        return None
    found = caches["env"].get("TRITON_CACHE_DIR")
    if not isinstance(found, str) or not Path(found).name.startswith(KEPT_PREFIX):
        return None
    return str(untimed.run_dir.parent / Path(found).name)


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
    if plan.timing != TIMING_ALL:
        lines.append(f"--timing {plan.timing}: {sum(v.timed for v in verdicts.values())} op(s) "
                     f"timed; the other rows carry no range (NO_IR_DIFF: no noise floor)")
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
    for side, timed in plan.batches():
        if (plan.root / side_folder(side, timed) / files.BATCH_JSON).is_file():
            record_env_change(plan.root / side_folder(side, timed), change)


def record_screen_run_fields(plan: ScreenPlan) -> None:
    """screen.json of a resume that named another executor or switched overlap: the next
    resume keeps them; the rest of the file (its env_changes, ...) stays as it is."""
    path = plan.root / SCREEN_JSON
    doc = read_json_object(path, f"{plan.root} is not a screen root (no {SCREEN_JSON})")
    doc["batch"] = {**doc.get("batch", {}), "executor": plan.base.executor,
                    "ray_address": plan.base.ray_address, "overlap": plan.base.overlap,
                    "overlap_width": plan.base.overlap_width}
    atomic_write_json(path, doc)


def write_side_plan(plan: ScreenPlan, side: Side, timed: bool = False) -> None:
    """A side's batch.json (its timed pair's with `timed`), derived from the screen plan."""
    folder = plan.root / side_folder(side, timed)
    folder.mkdir(parents=True, exist_ok=True)
    files.write_batch_json(folder, plan.side_doc(side, timed))


def check_resume_files(plan: ScreenPlan) -> None:
    """What a resumed screen writes, checked before anything runs: each side's folder, its
    batch.json (written again when lost) and tables, and the screen's own tables. A file
    where a side's folder belongs, or a folder where a table belongs, is one line now (exit
    2), not a failed write (exit 1) after the ops ran."""
    for side, timed in plan.batches():
        label = side_folder(side, timed)
        folder = plan.root / label
        files.check_folder_place(folder, f"side {label}'s batch belongs there; move it "
                                         f"away, then zlh screen --resume {plan.root}")
        check_output_file(folder / files.BATCH_JSON, f"side {label} plan")
        files.check_tables(folder, [item.op for item in plan.base.items])
    for name in (SCREEN_TSV, IR_CHANGED_TXT):
        check_output_file(plan.root / name, "screen file")


def mend_side_plans(plan: ScreenPlan, echo: Echo) -> None:
    """A side's batch.json that is missing or unreadable (its side directory deleted, the
    file damaged) is written again from screen.json; the finished ops the side still holds
    are kept."""
    for side, timed in plan.batches():
        label = side_folder(side, timed)
        try:
            files.read_batch_json(plan.root / label)
        except UsageError as exc:
            if timed and not (plan.root / label).exists():
                write_side_plan(plan, side, timed)      # nothing timed yet: made now
                continue
            echo(f"zlh screen: {label}/{files.BATCH_JSON} written again from "
                 f"{plan.root}/{SCREEN_JSON} ({exc})")
            write_side_plan(plan, side, timed)


def rescore(root: Path, extra_scrub: list[str], echo: Echo,
            warn: Echo | None = None) -> dict[str, Verdict]:
    """Every verdict again from the stored run directories, with the plan's scrub plus
    `extra_scrub`; the table from before the first rescore is kept as
    screen.tsv.before-rescore (a later rescore leaves it). An op without a finished side A
    (or with side A finished but side B, which was due, not), or whose run directory is gone
    or damaged, is said on `warn`."""
    warn = warn or echo
    plan = read_plan(root)
    plan.scrub = list(dict.fromkeys([*plan.scrub, *extra_scrub]))
    for name in (SCREEN_TSV, SCREEN_TSV + ".before-rescore", IR_CHANGED_TXT):
        check_output_file(root / name, "screen file")
    old = old_verdicts(root / SCREEN_TSV, warn)
    verdicts, unfinished = {}, []
    for item in plan.base.items:
        a = files.read_complete(root / "A", item.op)
        b = files.read_complete(root / "B", item.op)
        if a is None or (b is None and b_is_due(a[0])):   # (B killed midway: not NO_ROWS)
            unfinished.append(item.op)
            continue
        timed = None
        if plan.timing == TIMING_CHANGED:
            timed = [files.read_complete(root / (label + TIMED), item.op) for label in "AB"]
            timed = tuple(t[0] for t in timed) if None not in timed else None
        for label, side in (("A", a), ("B", b), *(((f"{s}{TIMED}", (t,)) for s, t in
                                                    zip("AB", timed or ())))):
            problem = side and files.run_problem(item.op, side[0])
            if problem:
                warn(f"WARNING: {files.op_dir(root / label, item.op) / files.COMPLETE} "
                     f"names run {side[0].run_dir}, which {problem}; the verdict is decided "
                     f"without it (zlh screen --resume {root} runs it again)")
        verdicts[item.op] = decide(item.op, a[0], b[0] if b else None, plan.scrub,
                                   plan.base.options.ir_stage, timed)
    again = ("resume the shard that ran them, then zlh merge again" if plan.base.merged
             else f"zlh screen --resume {root} runs them")
    if unfinished:
        warn(f"WARNING: {len(unfinished)} op(s) not finished (side A, or side B after it) "
             f"keep no row: {', '.join(unfinished)} ({again})")
    if not verdicts:
        raise UsageError(f"{root}: no op has finished (A/<op>/{files.COMPLETE}, and B's "
                         f"where B was due); nothing to rescore ({again})")
    keep_first(root / SCREEN_TSV, ".before-rescore")     # the screen's own, kept once
    write_table(plan, verdicts)
    write_plan(plan)
    write_ir_changed(plan, verdicts)
    for op, v in verdicts.items():
        if old.get(op) != v.verdict:
            echo(f"{op} {old.get(op, '-')} -> {v.verdict}")
    counts = {name: sum(1 for v in verdicts.values() if v.verdict == name) for name in VERDICTS}
    echo("rescored: " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
    return verdicts


__all__ = ["ScreenPlan", "Screen", "read_plan", "write_plan", "rescore", "summary_lines",
           "write_ir_changed", "NO_ROWS", "NO_TRITON", "NO_IR_DIFF", "IR_CHANGED"]
