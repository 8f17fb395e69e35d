"""The protocol section of a manifest: cells and their roles, timed cells, canary order,
promises, timer, dtypes, timeouts, code-change criterion, thresholds, canary gate."""
from __future__ import annotations

import re

from ..common import spelling
from ..common.errors import UsageError
from ..common.fields import Checker
from ..compile.ir.fingerprint import pattern_problem
from ..run.options import TIMERS, BenchOptions, manifest_option_names
from .manifest import BASELINE, CANDIDATE, CLASSES, CODE_CHANGES, COSTS, ROLES

CELL_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PROTOCOL_KEYS = {"adapter", "cells", "timed_cells", "canary_order", "fresh_process_per_op_cell",
                 "one_physical_device", "serial_measurement", "timer", "dtypes", "timeouts_s",
                 "code_change", "measured_launch_floor", "scrub", "bench", "shapes",
                 "thresholds", "canary_gate"}
MAX_TIMEOUT_S = 7 * 24 * 3600.0    # a week per run: beyond it, a typo rather than a plan
PROMISES = ("fresh_process_per_op_cell", "one_physical_device", "serial_measurement")
# Bench options a manifest may set for every cell; the others are protocol fields of their
# own or forced (isolated tuner cache, IR capture, output check, out, replay).
BENCH_KEYS = manifest_option_names()


def check_protocol(c: Checker, p: dict, workloads: list[dict]) -> None:
    c.keys(p, PROTOCOL_KEYS, "protocol")
    names = _cells(c, p)
    _timed(c, p, names)
    for promise in PROMISES:
        if p.get(promise) is not True:
            c.bad(f"protocol.{promise}", f"must be true, got {p.get(promise)!r}")
    c.text(p, "timer", "protocol.timer", choices=TIMERS)
    c.strings(p, "dtypes", "protocol.dtypes")
    _timeouts(c, p)
    c.text(p, "code_change", "protocol.code_change", choices=CODE_CHANGES)
    c.number(p, "measured_launch_floor", "protocol.measured_launch_floor", optional=True,
             integer=True, low=0)
    _scrub(c, p)
    bench = c.obj(p, "bench", "protocol.bench", optional=True)
    if bench is not None:
        _bench(c, bench)
    c.absolute(p, "shapes", "protocol.shapes")
    _thresholds(c, p)
    canaries = _canaries(c, p, workloads)
    _gate(c, p, canaries)


def _cells(c: Checker, p: dict) -> list[str]:
    cells = p.get("cells")
    if not isinstance(cells, list) or len(cells) < 2:
        c.bad("protocol.cells", "must list at least a baseline and a candidate cell")
        return []
    names, roles, envs = [], [], {}
    for i, cell in enumerate(cells):
        where = f"protocol.cells[{i}]"
        if not isinstance(cell, dict):
            c.bad(where, "must be an object")
            continue
        c.keys(cell, {"name", "role", "env"}, where)
        name = c.text(cell, "name", f"{where}.name", pattern=CELL_NAME)
        role = c.text(cell, "role", f"{where}.role", choices=ROLES)
        env = c.obj(cell, "env", f"{where}.env")
        for key, value in (env or {}).items():
            if not ENV_NAME.match(key):
                c.bad(f"{where}.env.{key}", "not an environment variable name")
            elif value is not None and not isinstance(value, str):
                c.bad(f"{where}.env.{key}", f"must be a string or null (unset), got {value!r}")
            elif value is not None and "\0" in value:
                c.bad(f"{where}.env.{key}", "holds a NUL character (no environment can)")
        if name is not None and name in names:
            c.bad(f"{where}.name", f"{name!r} repeats an earlier cell")
        names.append(name)
        roles.append(role)
        if role is not None and env is not None:
            envs.setdefault(role, env)
    if roles and roles[0] != BASELINE:
        c.bad("protocol.cells[0].role", "the first cell is the baseline (it records; the "
              "others replay it)")
    for role in (BASELINE, CANDIDATE):
        if roles.count(role) != 1:
            c.bad("protocol.cells", f"needs exactly one {role} cell, has {roles.count(role)}")
    if BASELINE in envs and envs.get(BASELINE) == envs.get(CANDIDATE):
        c.bad("protocol.cells", "the candidate's env equals the baseline's: nothing differs")
    return [n for n in names if n]


def _timed(c: Checker, p: dict, names: list[str]) -> None:
    timed = c.strings(p, "timed_cells", "protocol.timed_cells")
    if timed is None or not names:
        return
    for name in timed:
        if name not in names:
            c.bad("protocol.timed_cells", f"{name!r} is not a cell")
    cells = [x for x in p["cells"] if isinstance(x, dict) and isinstance(x.get("name"), str)]
    wanted = {x["name"] for x in cells if x.get("role") in (BASELINE, CANDIDATE)}
    if set(timed) != wanted:
        c.bad("protocol.timed_cells", f"must be the baseline and the candidate cell "
              f"({', '.join(sorted(n for n in wanted if n))}), got {', '.join(timed)}")


def _timeouts(c: Checker, p: dict) -> None:
    timeouts = c.obj(p, "timeouts_s", "protocol.timeouts_s")
    if timeouts is None:
        return
    c.keys(timeouts, set(COSTS), "protocol.timeouts_s")
    for cost in COSTS:
        c.number(timeouts, cost, f"protocol.timeouts_s.{cost}", low=0, strict_low=True,
                 high=MAX_TIMEOUT_S)


def _scrub(c: Checker, p: dict) -> None:
    scrub = c.strings(p, "scrub", "protocol.scrub", optional=True)
    for i, pattern in enumerate(scrub or ()):
        why = pattern_problem(pattern)
        if why is not None:
            c.bad(f"protocol.scrub[{i}]", f"bad regular expression: {why}")


def _bench(c: Checker, bench: dict) -> None:
    for key in sorted(set(bench) - set(BENCH_KEYS)):
        c.bad(f"protocol.bench.{key}", f"not settable here (allowed: {', '.join(BENCH_KEYS)})")
    try:
        with spelling.as_keywords():         # the manifest's keys are the keywords
            BenchOptions.from_flat(**{k: v for k, v in bench.items() if k in BENCH_KEYS})
    except UsageError as exc:
        c.bad("protocol.bench", exc.message)


def _thresholds(c: Checker, p: dict) -> None:
    thresholds = c.obj(p, "thresholds", "protocol.thresholds", optional=True)
    if thresholds is None:
        return
    c.keys(thresholds, {"good_pct", "regression_pct"}, "protocol.thresholds")
    c.number(thresholds, "good_pct", "protocol.thresholds.good_pct", optional=True, low=0,
             strict_low=True)
    value = c.number(thresholds, "regression_pct", "protocol.thresholds.regression_pct",
                     optional=True)
    if value is not None and value >= 0:
        c.bad("protocol.thresholds.regression_pct", f"must be negative, got {value!r}")


def _canaries(c: Checker, p: dict, workloads: list[dict]) -> set[str]:
    order = c.strings(p, "canary_order", "protocol.canary_order")
    canaries = {w.get("id") for w in workloads
                if w.get("canary") is True and isinstance(w.get("id"), str)}
    if order is None:
        return canaries
    ids = {w.get("id") for w in workloads if isinstance(w.get("id"), str)}
    for name in order:
        if name not in ids:
            c.bad("protocol.canary_order", f"{name!r} is not a workload id")
        elif name not in canaries:
            c.bad("protocol.canary_order", f"{name!r} is not marked canary")
    missing = sorted(str(x) for x in canaries - set(order))
    if missing:
        c.bad("protocol.canary_order", f"canaries missing from the order: {', '.join(missing)}")
    return canaries


def _gate(c: Checker, p: dict, canaries: set[str]) -> None:
    gate = c.obj(p, "canary_gate", "protocol.canary_gate", optional=True)
    if gate is None:
        return
    c.keys(gate, {"classes", "max_k"}, "protocol.canary_gate")
    c.number(gate, "max_k", "protocol.canary_gate.max_k", optional=True, integer=True, low=0)
    classes = c.obj(gate, "classes", "protocol.canary_gate.classes", optional=True) or {}
    for task_id, allowed in classes.items():
        where = f"protocol.canary_gate.classes.{task_id}"
        if task_id not in canaries:
            c.bad(where, "not a canary workload")
        if not isinstance(allowed, list) or not allowed or \
                any(a not in CLASSES for a in allowed):
            c.bad(where, f"must be a non-empty list of classes ({', '.join(CLASSES)})")
