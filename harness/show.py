"""`zlh show RUN_DIR`: a run's table, caliber and marker counts, from its files alone."""
from __future__ import annotations

import collections
import json
from pathlib import Path

from tabulate import tabulate

from . import markers
from .errors import UsageError
from .results import read_rows
from .table import render_rows


def show_run(run_dir: str, colour: bool = False) -> str:
    path = Path(run_dir)
    try:
        info = json.loads((path / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{run_dir} is not a run directory (run.json: {exc})") from None
    results = path / "results.jsonl"
    rows = read_rows(results) if results.exists() else []
    lines = [f"{info.get('run_id', path.name)}  op={info.get('op')}  status={info.get('status')}"
             f"  wall={info.get('wall_s', '-')} s"]
    device = info.get("device", {})
    lines.append(f"device: {device.get('name')} ({device.get('arch')}), backend "
                 f"{device.get('backend')}; adapter {info.get('adapter', {}).get('adapter')}")
    caliber = info.get("caliber", {})
    lines.append(tabulate([[k, json.dumps(v) if isinstance(v, dict) else v]
                           for k, v in caliber.items()], headers=["caliber", "value"],
                          tablefmt="simple"))
    fallbacks = info.get("autotune_fallbacks")
    if fallbacks is not None:
        lines.append(f"autotune: {info.get('autotune_mode')} from "
                     f"{info.get('autotune_replay_from')}; fallbacks {fallbacks}")
    elif info.get("autotune_mode"):
        lines.append(f"autotune: {info.get('autotune_mode')}")
    counts = collections.Counter(markers.marker_name(m) for r in rows for m in r.markers)
    if counts:
        lines.append("markers: " + ", ".join(f"{n} x{c}" for n, c in counts.most_common()))
    legend, table = render_rows(rows, colour=colour)
    lines += [legend, table] if legend else [table]
    return "\n".join(lines)
