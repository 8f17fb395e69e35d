"""Rounds over several GPUs: after a screen, the ops worth rounds (IR_CHANGED by default)
are spread over the devices by their measured cost (partition.py), and one `zlh ab --rounds N`
runs per device in parallel — each seeing only its device, each with its own isolated tuner
cache (parallel cards must not share one), each with its own root `card<d>/`. At the end the
cards are merged: one status.tsv with a device column, one report (JSON, CSV, HTML), failed
runs per card, fallback and poison totals, wall per card against the plan. A card that fails
does not stop the others; `--resume` runs, per card, only the ops its reports lack.

With the `ray` executor the plan's split is only a forecast: the unit is one op (its `zlh ab`:
all its rounds, both sides, ABBA order, the pinned record), run in the Ray actor of whichever
lane (one GPU of the cluster) comes free first, the costliest op first; its root is
`card<d>-<op>/`. An op's rounds never spread over several GPUs: the card-to-card spread of a
latency is larger than the changes rounds are run for, and it would enter the delta.
"""
from __future__ import annotations

import re
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ..common.files import read_text
from ..common.log import Echo
from ..ab.runs import STATUS_COLUMNS
from ..ab.report import ABReport, load_report
from ..ab.sides import Side
from ..common.errors import UsageError
from ..common.fields import Fields
from ..common.limits import MAX_ROUNDS
from ..common.files import (atomic_write_json, atomic_write_text, check_output_file,
                            read_failure, read_json_object)
from ..compile.ir.fingerprint import compile_scrub
from ..run.options import BenchOptions
from ..store.rundir import safe_name
from .batch_plan import BatchPlan, device_list, options_field
from .check import check_plan, corpus_adapter
from .environment import environment_switches
from .executor import executor_fields, make_executor
from .lanes import lane_for
from .partition import Partition, partition, render, weights_from_screen
from .screen_plan import SCREEN_TSV, read_plan, side_from
from .selection import Item
from .threads import run_lanes

CAMPAIGN_JSON = "campaign.json"


@dataclass
class CampaignPlan:
    root: Path
    screen_root: Path
    devices: list[int]
    rounds: int
    part: Partition
    a: Side
    b: Side
    options: BenchOptions
    scrub: list[str] = field(default_factory=list)
    timeout_s: float = 3600.0
    # the environment switches the campaign started under (environment.environment_switches; None:
    # an older root recorded none), and the changes a resume was allowed to make
    env: dict | None = None
    env_changes: list = field(default_factory=list)
    executor: str = "local"            # who runs the cards (executor.py): local, ray
    ray_address: str | None = None

    def card_root(self, device: int, attempt: int = 0) -> Path:
        return self.root / (f"card{device}" if not attempt else f"card{device}-r{attempt}")

    def to_dict(self) -> dict:
        return {"schema_version": 1, "kind": "campaign", "screen": str(self.screen_root),
                "devices": self.devices, "rounds": self.rounds,
                "assignment": {str(d): ops for d, ops in self.part.assignment.items()},
                "weights_s": self.part.weights, "planned_s": {str(d): s for d, s in
                                                              self.part.loads.items()},
                "A": vars(self.a), "B": vars(self.b), "options": self.options.to_dict(),
                "scrub": self.scrub, "timeout_s": self.timeout_s, "env": self.env,
                "env_changes": self.env_changes, "executor": self.executor,
                "ray_address": self.ray_address}


def plan_campaign(root: Path, screen_root: Path, devices: list[int], rounds: int,
                  extra_ops: list[str], verdicts: tuple[str, ...] = ("IR_CHANGED",),
                  timeout_s: float = 3600.0, only: list[str] | None = None) -> CampaignPlan:
    screen = read_plan(screen_root)
    weights, filtered = weights_from_screen(screen_root / SCREEN_TSV, verdicts)
    if only:
        screened = set(weights) | {op for op, _ in filtered}
        unknown = [op for op in only if op not in screened]
        if unknown:
            raise UsageError(f"--only {', '.join(unknown)}: not an op of the screen "
                             f"{screen_root} (see its screen.tsv)")
        filtered += [(op, "not in --only") for op in weights if op not in only]
        weights = {op: w for op, w in weights.items() if op in only}
    if not weights and not extra_ops:
        raise UsageError(f"{screen_root}: no {'/'.join(verdicts)} op to run rounds on")
    part = partition(weights, devices, rounds, extra_ops)
    part.filtered = filtered
    options = screen.base.options.replace(isolate_tuner_cache=True, device=None, out="runs",
                                          replay=None)
    plan = CampaignPlan(Path(root), Path(screen_root), devices, rounds, part, screen.a,
                        screen.b, options, list(screen.scrub), timeout_s)
    plan.env = environment_switches(check_campaign(plan).env_prefixes)
    return plan


def card_command(plan: CampaignPlan, ops: list[str], root: Path) -> list[str]:
    sides = []
    for label, side in (("a", plan.a), ("b", plan.b)):
        sides += [f"--env-{label}={k}={v}" for k, v in side.env.items() if v is not None]
        if side.python != sys.executable:
            sides += [f"--python-{label}", side.python]
    return [sys.executable, "-m", "harness", "ab", *ops, *sides, *plan.options.to_argv(),
            *[f"--scrub={s}" for s in plan.scrub], "--rounds", str(plan.rounds),
            "--timeout", str(plan.timeout_s), "--root", str(root), "--quiet"]


def card_roots(plan: CampaignPlan, device: int) -> list[Path]:
    """The roots of device's cards: card<d>, card<d>-r<k> (a resume's), card<d>-<op> (a Ray
    unit's) — not those of device 1<d>."""
    pattern = re.compile(rf"card{device}(-.+)?")
    if not plan.root.is_dir():
        return []
    return sorted(p for p in plan.root.iterdir() if p.is_dir() and pattern.fullmatch(p.name))


def done_ops(plan: CampaignPlan, device: int, echo: Echo | None = None) -> set[str]:
    done = set()
    for root in card_roots(plan, device):
        done |= {r.op for r in card_files(root, echo)[1]}
    return done


def reported_ops(plan: CampaignPlan) -> set[str]:
    """The ops some card reported, on any device (a Ray unit runs on the lane that was free,
    not always the one the plan named)."""
    return set().union(*(done_ops(plan, d) for d in plan.devices))


def card_files(root: Path, echo: Echo | None) -> tuple[list[dict], list[ABReport]]:
    """(status rows, op reports) of one card directory. A file that cannot be read (damaged,
    edited) adds nothing and says so on one line: the card's other file and the other cards'
    results are still merged, and `--resume` runs the ops it lacks again."""
    rows: list[dict] = []
    reports: list[ABReport] = []
    try:
        if (root / "status.tsv").exists():
            rows, cut = _status_rows(read_text(root / "status.tsv"))
            if cut and echo is not None:
                echo(f"zlh campaign: {root / 'status.tsv'}: line(s) {', '.join(map(str, cut))} "
                     f"cut short (an append that did not finish) left out of the merge")
    except (OSError, ValueError) as exc:      # UnicodeDecodeError is a ValueError
        _left_out(echo, root / "status.tsv", exc)
    try:
        reports = load_report(root)[1] if (root / "report.json").exists() else []
    except UsageError as exc:
        _left_out(echo, root / "report.json", exc)
    return rows, reports


COUNT_COLUMNS = ("rc", "replay_fallbacks", "graph_fallbacks", "poisoned")


def _status_rows(text: str) -> tuple[list[dict], list[int]]:
    """(the rows of a card's status.tsv as `zlh ab` writes it, the numbers of lines with
    fewer fields: appends cut short, left out); ValueError for another header, a row with
    more fields or a count that is not a whole number."""
    lines = [line for line in text.splitlines() if line]
    if not lines or tuple(lines[0].split("\t")) != STATUS_COLUMNS:
        raise ValueError(f"not the header zlh ab writes ({', '.join(STATUS_COLUMNS)})")
    rows, cut = [], []
    for number, line in enumerate(lines[1:], 2):
        cells = line.split("\t")
        if len(cells) < len(STATUS_COLUMNS):
            cut.append(number)
            continue
        if len(cells) != len(STATUS_COLUMNS):
            raise ValueError(f"line {number} has {len(cells)} fields, not {len(STATUS_COLUMNS)}")
        row = dict(zip(STATUS_COLUMNS, cells))
        for key in COUNT_COLUMNS:
            if key in row and not re.fullmatch(r"-?[0-9]+", row[key]):
                raise ValueError(f"line {number}: {key} {row[key][:20]!r} is not a whole number")
        rows.append(row)
    return rows, cut


def _left_out(echo: Echo | None, path: Path, exc: BaseException) -> None:
    if echo is not None:
        echo(f"zlh campaign: {path} left out of the merge: {read_failure(exc)}")


def run_cards(plan: CampaignPlan, echo: Echo, resume: bool = False) -> dict[int, dict]:
    """One `zlh ab` per device, side by side (Ray: one per op, see run_op_units);
    {device: {"rc", "wall_s", "root", "ops"}}."""
    if plan.executor == "ray":
        return run_op_units(plan, echo, resume)
    results: dict[int, dict] = {}
    executor = make_executor(plan.executor, **_lane_plan(plan).executor_options())

    def card(device: int, ops: list[str]) -> None:
        attempt = len(card_roots(plan, device)) if resume else 0
        root = plan.card_root(device, attempt)
        root.mkdir(parents=True, exist_ok=True)
        lane = lane_for(_lane_plan(plan), device)
        started = time.time()
        with executor.open_lane(lane) as runner:
            rc = runner.run_command(card_command(plan, ops, root), root / "campaign.log").rc
        results[device] = {"rc": rc, "wall_s": time.time() - started, "root": str(root),
                           "ops": ops}
        echo(f"card {device}: rc={rc} wall {(time.time() - started) / 60:.1f} min "
             f"(planned {plan.part.loads[device] / 60:.1f}) ops={len(ops)} -> {root}")

    lanes = []
    done = reported_ops(plan) if resume else set()
    for device, ops in plan.part.assignment.items():
        todo = [op for op in ops if op not in done]
        if todo:
            lanes.append((f"card-{device}", card, (device, todo)))
    run_lanes(lanes, lambda: None)
    return results


def run_op_units(plan: CampaignPlan, echo: Echo, resume: bool = False) -> dict[int, dict]:
    """One `zlh ab` per op, each in the actor of the first lane that comes free, the costliest
    op first (a resume: the ops no card reported); {device: {"rc" (the worst), "wall_s",
    "root", "ops" (those it ran)}}."""
    done = reported_ops(plan) if resume else set()
    ops = [op for d in sorted(plan.part.assignment) for op in plan.part.assignment[d]]
    queue = deque(sorted((op for op in ops if op not in done),
                         key=lambda op: -plan.part.weights.get(op, 0.0)))
    taken = threading.Lock()
    executor = make_executor(plan.executor, **_lane_plan(plan).executor_options())
    results: dict[int, dict] = {}

    def next_op() -> str | None:
        with taken:
            return queue.popleft() if queue else None

    def lane_units(device: int) -> None:
        started, ran, rcs = time.time(), [], []
        with executor.open_lane(lane_for(_lane_plan(plan), device)) as runner:
            while (op := next_op()) is not None:
                root = _unit_root(plan, device, op)
                root.mkdir(parents=True)
                rc = runner.run_command(card_command(plan, [op], root),
                                        root / "campaign.log").rc
                ran.append(op)
                rcs.append(rc)
                echo(f"card {device}: {op} rc={rc} -> {root}")
        results[device] = {"rc": max(rcs, key=abs, default=0), "wall_s": time.time() - started,
                           "root": str(plan.root), "ops": ran}
        echo(f"card {device}: {len(ran)} ops in {(time.time() - started) / 60:.1f} min")

    run_lanes([(f"card-{d}", lane_units, (d,)) for d in plan.devices], lambda: None)
    return results


def _unit_root(plan: CampaignPlan, device: int, op: str) -> Path:
    """card<d>-<op>/, or card<d>-<op>-r<k>/ where a resume runs the op again."""
    base = plan.root / f"card{device}-{safe_name(op)}"
    attempt = 0
    while (root := base if not attempt else base.with_name(f"{base.name}-r{attempt}")).exists():
        attempt += 1
    return root


def _lane_plan(plan: CampaignPlan):
    return BatchPlan(root=plan.root, items=[], devices=plan.devices, options=plan.options,
                     executor=plan.executor, ray_address=plan.ray_address)


ROOT_FILES = (CAMPAIGN_JSON, "plan.tsv", "status.tsv", "report.json", "report.csv",
              "report.html", "merged.json")


def check_root_files(root: Path) -> None:
    """The files a campaign writes at the top of its root: a folder or a device in their
    place is one line before any card runs (exit 2), not a failed write after all ran."""
    for name in ROOT_FILES:
        check_output_file(Path(root) / name, "campaign file")


def write_plan(plan: CampaignPlan) -> None:
    plan.root.mkdir(parents=True, exist_ok=True)
    atomic_write_json(plan.root / CAMPAIGN_JSON, plan.to_dict())
    atomic_write_text(plan.root / "plan.tsv", render(plan.part, "tsv"))


def read_campaign(root: Path) -> CampaignPlan:
    """The plan campaign.json holds, field by field (one line naming the field when it was
    edited or damaged), its ops and options checked as a new campaign's are."""
    path = Path(root) / CAMPAIGN_JSON
    doc = read_json_object(path, f"{root} is not a campaign root (no {CAMPAIGN_JSON})")
    f = Fields(doc, str(path))
    devices = device_list(f, "devices")
    assignment: dict[int, list[str]] = {}
    for key, ops in f.object("assignment").items():
        if not (key.isascii() and key.isdigit() and int(key) in devices):
            raise f.error("assignment", f"an object keyed by the devices {devices}", key)
        if not isinstance(ops, list) or not all(isinstance(o, str) and o for o in ops):
            raise f.error(f"assignment.{key}", "a list of op names", ops)
        assignment[int(key)] = list(ops)
    ops = [op for d in sorted(assignment) for op in assignment[d]]
    weights = _seconds(f, "weights_s", ops)
    planned = {int(k): v for k, v in _seconds(f, "planned_s", map(str, assignment)).items()}
    options = options_field(f, "options")
    plan = CampaignPlan(Path(root), Path(f.str("screen", empty=False)), devices,
                        f.int("rounds", low=1, high=MAX_ROUNDS),
                        Partition(planned, assignment, weights),
                        side_from(f, "A"), side_from(f, "B"), options, f.strs("scrub", []),
                        f.number("timeout_s", 3600.0, low=1))
    env = doc.get("env")
    if env is not None and not (isinstance(env, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise f.error("env", "null or an object of NAME: value strings", env)
    plan.env, plan.env_changes = env, f.objects("env_changes", [])
    plan.executor, plan.ray_address = executor_fields(f)
    try:
        compile_scrub(plan.scrub)
    except ValueError as exc:
        raise f.error("scrub", f"valid patterns ({exc})", plan.scrub) from None
    check_campaign(plan, str(path))
    return plan


def _seconds(f: Fields, name: str, keys) -> dict[str, float]:
    """An object of finite seconds >= 0 holding (at least) every one of `keys`."""
    seconds = Fields(f.object(name), f"{f.where}: {name}")
    return {k: seconds.number(k, low=0) for k in dict.fromkeys(keys)}


def check_campaign(plan: CampaignPlan, where: str = ""):
    """What would make every card fail, one line now: an op twice or unknown to the adapter,
    options or interpreters that cannot run (the checks of a batch plan). The adapter."""
    ops = [op for d in sorted(plan.part.assignment) for op in plan.part.assignment[d]]
    batch = BatchPlan(root=plan.root, items=[Item(op) for op in ops], devices=plan.devices,
                      options=plan.options)
    adapter = corpus_adapter(plan.options, None, where)    # the adapter reads its own env
    check_plan(batch, adapter, where, (plan.a.python, plan.b.python), resolve=True)
    return adapter
