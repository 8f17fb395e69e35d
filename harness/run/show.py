"""`zlh show RUN_DIR`: a run's table, caliber and marker counts, from its files alone."""
from __future__ import annotations

import collections
import json

from tabulate import tabulate

from ..common import markers, style
from ..common.fields import is_number
from ..store.reader import ABANDONED, COMPLETE, RESULTS_LOST, load_run
from ..store.compiler import short as short_compiler
from .table import BASE, TEST, render_rows


def show_run(run_dir: str, colour: bool = False) -> str:
    run = load_run(run_dir)
    info = run.info
    lines = [f"{info.get('run_id', run.path.name)}  op={run.op}  status={run.status}"
             f"  wall={info.get('wall_s', '-')} s"
             + _inputs_part(info.get("inputs_s"))]
    if run.status == RESULTS_LOST:
        lines.append(f"WARNING: run.json says complete, but {run.lost}: the table holds only "
                     f"the rows the file has, and `zlh ab` compares this run only with "
                     f"--allow-partial")
    elif run.status != COMPLETE:
        why = f", {info['reason']}" if info.get("reason") else ""
        lines.append(f"WARNING: this run did not complete (status {run.status}{why}"
                     f"{'; its process is gone' if run.status == ABANDONED else ''}); its "
                     f"table holds the cases measured before it stopped, and `zlh ab` "
                     f"compares it only with --allow-partial")
        if run.lost:
            lines.append(f"WARNING: {run.lost}: the table holds only the rows the file has")
    device = _object(info.get("device"))
    lines.append(f"device: {device.get('name')} ({device.get('arch')}), backend "
                 f"{device.get('backend')}; adapter {_object(info.get('adapter')).get('adapter')}"
                 f"; compiler {short_compiler(info.get('compiler'))}")
    caliber = _object(info.get("caliber"))
    lines.append(tabulate([[k, json.dumps(v) if isinstance(v, dict) else v]
                           for k, v in caliber.items()], headers=["caliber", "value"],
                          tablefmt=style.tablefmt()))
    fallbacks = info.get("autotune_fallbacks")
    if fallbacks is not None:
        lines.append(f"autotune: {info.get('autotune_mode')} from "
                     f"{info.get('autotune_replay_from')}; fallbacks {fallbacks}")
    elif info.get("autotune_mode"):
        lines.append(f"autotune: {info.get('autotune_mode')}")
    counts = collections.Counter(markers.marker_name(m) for r in run.rows for m in r.markers)
    if counts:
        lines.append("markers: " + ", ".join(f"{n} x{c}" for n, c in counts.most_common()))
    flags = collections.Counter(f for r in run.rows for f in r.flags)
    if flags:
        lines.append("flags: " + ", ".join(f"{_by_role(n)} x{c}" for n, c in flags.most_common())
                     + " (undersampled: a cap stopped sampling well before --min-samples; "
                     "outliers, bimodal: see docs/concepts/measurement.md)")
    interpreted = device.get("backend") == "cpu" or \
        _object(info.get("caliber")).get("backend") == "cpu"
    legend, table = render_rows(run.rows, colour=colour, tablefmt=style.tablefmt(),
                                interpreted=interpreted)
    lines += [legend, table] if legend else [table]
    return "\n".join(lines)


def _inputs_part(inputs_s) -> str:
    """` (building inputs N s)` once the adapter's input building took a second or more."""
    if is_number(inputs_s) and inputs_s >= 1:
        return f" (building inputs {inputs_s:.1f} s)"
    return ""


def _object(value) -> dict:
    """A run.json field that should be an object; {} for one that is not (damaged)."""
    return value if isinstance(value, dict) else {}


def _by_role(flag: str) -> str:
    """`gems:undersampled` (results.jsonl's side names) as the table names the sides:
    `test:undersampled`; `torch:` is `base:`."""
    side, _, name = flag.partition(":")
    return f"{ {'gems': TEST, 'torch': BASE}.get(side, side)}:{name}" if name else flag
