"""`zlh calibrate`: A/A on this machine through the `zlh ab` machinery, or A against a planted
B, and `calibration.json`.

Both sides are the same build and the same environment; every run is a fresh `zlh bench`
process; round 1's A records, every other run replays it; rounds alternate which side goes
first — exactly `zlh ab --rounds N` (`ab.orchestrate.run_rounds`), with identical generated code
expected (so rounds go on after round 1). With `--plant-pct X`, side B's function under test
gets a device spin sized as X % of side A's latency and side A the same spin kernel with zero
cycles (see `plant`).

calibration.json (schema_version 1, kind "calibration"): machine identity, rounds, alpha,
power, the detectable-change formula, plant_pct (null for A/A), and per op its shapes —
variant, dtype, shape detail, occurrence, A/B latency, per-round deltas, noise_median_pct,
noise_max_pct, sd_pct, detectable_pct, significant, direction (planted: detected,
wrong_sign) — with an op summary and an overall one (`floor`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from ..ab.orchestrate import ab_root, run_rounds
from ..ab.report import reports_so_far
from ..ab.sides import ABPlan, Side, runner_fields
from ..common import style
from ..common.errors import Terminated
from ..common.files import atomic_write_json
from ..common.limits import MAX_ROUNDS
from ..common.log import Echo
from ..run.options import BenchOptions
from ..store.reader import load_run
from ..store.results import row_key
from ..telemetry import tsv
from . import floor
from .noise import KIND

SCHEMA_VERSION = 1
FILE = "calibration.json"
FORMULA = "detectable = (t(1-alpha/2, N-1) + t(power, N-1)) * sd / sqrt(N)"
DETECT_PCT = 0.3           # the change whose rounds are printed when none is named


@dataclass
class CalibratePlan:
    ops: list[str]
    options: BenchOptions
    root: Path
    rounds: int = 3
    plant_pct: float | None = None
    timeout_s: float = 3600.0
    auto: object = None                 # ab.rounds.AutoRounds: --rounds auto
    runner: object = None               # ab.rounds.RoundRunner: --round-process persistent
    detect_pct: float | None = None     # rounds to detect this change (default: the plant)
    started: float = field(default_factory=time.time)

    @property
    def detect(self) -> float:
        return self.detect_pct or self.plant_pct or DETECT_PCT

    def ab_plan(self) -> ABPlan:
        planted = self.plant_pct is not None
        # side A's record measures what the plant lands per case; B plants what lands
        landing = {"plant_landing_pct": self.plant_pct} if planted and self.plant_pct else {}
        a = Side("A", description="A: this build" + (", spin 0 cycles" if planted else ""),
                 options={"plant_pct": 0.0, **landing} if planted else {})
        b = Side("B", description=(f"B: this build, planted +{self.plant_pct:g}%" if planted
                                   else "B: this build"),
                 options={"plant_pct": self.plant_pct} if planted else {})
        return ABPlan(ops=list(self.ops), a=a, b=b, options=self.options, root=self.root,
                      rounds=self.rounds, timeout_s=self.timeout_s, allow_no_ir_diff=True,
                      switch_name="calibrate", auto=self.auto, runner=self.runner)


def calibrate(plan: CalibratePlan, echo: Echo = print,
              progress: Echo | None = None) -> tuple[dict, int]:
    """Run the rounds, write ROOT/calibration.json, print the table. (document, exit code)
    Cut short (Ctrl-C, SIGTERM), it still writes calibration.json for the ops that finished
    (`"complete": false`), then lets the signal go on."""
    ab_plan = plan.ab_plan()
    with ab_root(ab_plan, "calibrate"):      # held until calibration.json is written
        try:
            reports, code = run_rounds(ab_plan, echo, progress)
        except (KeyboardInterrupt, Terminated):
            finished = reports_so_far(plan.root)
            if finished:
                atomic_write_json(plan.root / FILE, {**document(plan, finished),
                                                     "complete": False})
            raise
        doc = document(plan, reports)
        atomic_write_json(plan.root / FILE, {**doc, "complete": True})
    for text in render(doc):
        echo(text)
    echo(f"calibration: {plan.root / FILE}")
    return doc, code


def document(plan: CalibratePlan, reports) -> dict:
    ops = [_op_entry(report, plan.plant_pct, plan.detect) for report in reports]
    return {
        "schema_version": SCHEMA_VERSION, "kind": KIND,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "root": str(plan.root),
        "machine": machine(reports, plan.root),
        "rounds": "auto" if plan.auto is not None else plan.rounds,
        "rounds_auto": plan.auto.to_dict() if plan.auto is not None else None,
        **runner_fields(plan.runner), "alpha": floor.ALPHA,
        "power": floor.POWER, "formula": FORMULA, "plant_pct": plan.plant_pct,
        "detect_pct": plan.detect, "wall_s": round(time.time() - plan.started, 1),
        "bench_args": plan.options.to_argv(), "ops": ops,
        "floor": floor.overall([op["summary"] for op in ops]),
    }


def _op_entry(report, plant_pct: float | None, detect: float = 0.3) -> dict:
    shapes = []
    planted = planted_by_case(report) if plant_pct is not None else {}
    for row in report.rows:
        rounds = row.rounds or {}
        deltas = rounds.get("deltas_pct") or [row.delta_pct]
        entry = {"variant": row.variant, "dtype": row.dtype, "shape_detail": row.shape_detail,
                 "occurrence": row.occurrence, "a_ms": row.a_ms, "b_ms": row.b_ms,
                 "delta_pct": row.delta_pct, "deltas_pct": list(deltas),
                 "significant": row.significant, "direction": row.direction,
                 "throttled": any("throttled" in a for a in row.annotations),
                 **floor.shape_floor(deltas)}
        if "needed" in rounds:         # --rounds auto: what its two-stage test could see
            entry.update(detectable_pct=rounds.get("detectable_pct"),
                         rounds_needed_target=rounds["needed"])
        entry["rounds_to_detect"] = floor.rounds_to_detect(entry["sd_pct"], detect)
        if plant_pct is not None:
            how = planted.get(row_key(row), {})        # (an ABRow names its case alike)
            entry.update(planted_pct=plant_pct, landed_pct=how.get("landed_pct"),
                         plant_sized_by=how.get("sized_by"),
                         **floor.plant_outcome({"significant": row.significant,
                                                "direction": row.direction}))
        shapes.append(entry)
    chosen = report.summary.get("round_process")       # --round-process auto: its choice
    chosen = chosen if isinstance(chosen, dict) else {}
    return {"op": report.op, "verdict": report.verdict, "shapes": shapes,
            "round_process": chosen.get("process"), "round_budget": chosen.get("budget"),
            "summary": floor.op_summary(shapes)}


def planted_by_case(report) -> dict[tuple, dict]:
    """case key -> how round 1's side B planted it (its rows' `extra.planted`: cycles,
    `sized_by`, the size the record measured it to land, `landed_pct`); {} when unreadable."""
    try:
        rows = load_run(report.sides["B"]["run_dir"]).rows
    except Exception:  # noqa: BLE001 - how it was planted is told where known
        return {}
    return {row_key(r): r.extra["planted"] for r in rows
            if isinstance(r.extra.get("planted"), dict)}


def machine(reports, root: Path) -> dict:
    """Who measured: host, device (name, arch, physical id), backend, versions — from round
    1's side A run — and the clocks telemetry.tsv saw during the calibration."""
    out: dict = {}
    for report in reports:
        try:
            info = load_run(report.sides["A"]["run_dir"]).info
        except Exception:  # noqa: BLE001 - identity is best effort; the numbers stand alone
            continue
        device = info.get("device") or {}
        out = {"host": (info.get("host") or {}).get("hostname"),
               "backend": device.get("backend"), "device": device.get("name"),
               "arch": device.get("arch"), "index": device.get("index"),
               "physical": ((info.get("telemetry") or {}).get("before") or {}).get("physical")
               or device.get("physical_id"),
               "versions": {k: v for k, v in (info.get("versions") or {}).items()
                            if k not in ("python_executable", "numpy")}}
        break
    out["telemetry"] = tsv.summarize(tsv.read(Path(root) / tsv.FILE))
    return out


def render(doc: dict) -> list[str]:
    """The table per shape, then the machine and the summary lines."""
    planted = doc.get("plant_pct") is not None
    headers = ["op", "dtype", "shape", "A ms", "|d| median %", "|d| max %", "sd %",
               f"detectable % (N={doc['rounds']})", f"rounds for {doc.get('detect_pct', 0.3):g}%"]
    headers += ["landed %", "delta %", "found"] if planted else ["signif."]
    table = []
    for op in doc["ops"]:
        for s in op["shapes"]:
            entry = [op["op"], s["dtype"], s["shape_detail"] + (f" #{s['occurrence']}"
                                                               if s["occurrence"] else ""),
                     _num(s["a_ms"], ".5f"), _num(s["noise_median_pct"], ".3f"),
                     _num(s["noise_max_pct"], ".3f"), _num(s["sd_pct"], ".3f"),
                     _num(s["detectable_pct"], ".3f"), _needed(s)]
            entry += ([_num(s.get("landed_pct"), ".3f"), _num(s["delta_pct"], "+.3f"),
                       "yes" if s["detected"] else
                       "WRONG SIGN" if s["wrong_sign"] else "no"] if planted
                      else ["yes" if s["significant"] else "no"])
            table.append(entry)
    lines = [tabulate(table, headers=headers, tablefmt=style.tablefmt(), disable_numparse=True)
             if table else "(no shapes)"]
    lines.append(machine_line(doc.get("machine") or {}))
    lines += summary_lines(doc)
    return lines


def machine_line(m: dict) -> str:
    versions = " ".join(f"{k} {v}" for k, v in (m.get("versions") or {}).items() if v)
    clocks = (m.get("telemetry") or {}).get("sm_clock_mhz")
    clock = (f"; SM clock {clocks['min']:.0f}~{clocks['max']:.0f} MHz (median "
             f"{clocks['median']:.0f})" if clocks else "")
    return (f"machine: {m.get('host') or '?'} · {m.get('backend') or '?'}:{m.get('index', '?')} "
            f"{m.get('device') or '?'} {m.get('arch') or ''} · physical {m.get('physical') or '?'}"
            f" · {versions}{clock}")


def summary_lines(doc: dict) -> list[str]:
    lines = []
    for op in doc["ops"]:
        s = op["summary"]
        text = (f"{op['op']}: {s['shapes']} shapes, |d| median "
                f"{_num(s['noise_median_pct'], '.3f')}% max {_num(s['noise_max_pct'], '.3f')}%, "
                f"detectable (median) {_num(s['detectable_median_pct'], '.3f')}%, "
                f"significant {s['significant']}"
                + (f", rounds as {op['round_process']}" if op.get("round_process") else "")
                + (f" at {' '.join(op['round_budget'])}" if op.get("round_budget") else ""))
        if "plant" in s:
            text += (f"; planted {doc['plant_pct']:g}%: detected {_rate(s['plant'])}, "
                     f"shapes >= 20 us {_rate(s['plant_target'])}")
        lines.append(text)
    if doc.get("wall_s") is not None:
        lines.append(f"wall: {doc['wall_s']:.1f} s, rounds {doc['rounds']} "
                     f"({doc.get('round_process') or 'fresh'} processes)")
    total = doc["floor"]
    for key, label in (("plant", "all shapes"), ("plant_target", "shapes >= 20 us")):
        if key in total:
            lines.append(f"planted {doc['plant_pct']:g}% detected with the right sign "
                         f"({label}): {_rate(total[key])}")
    return lines


def _rate(part: dict) -> str:
    rate = part.get("rate")
    return (f"{part['detected']}/{part['shapes']}"
            + (f" ({100 * rate:.0f}%)" if rate is not None else "")
            + (f", wrong sign {part['wrong_sign']}" if part.get("wrong_sign") else ""))


def _needed(shape: dict) -> str:
    """Rounds to detect the calibration's change size; `>1000` when no count will."""
    if "rounds_to_detect" not in shape or shape.get("sd_pct") is None:
        return "-"
    value = shape["rounds_to_detect"]
    return str(value) if value is not None else f">{MAX_ROUNDS}"


def _num(value, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else "-"
