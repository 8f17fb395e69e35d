"""What every model reads alike: telemetry points (thinned for the page), a run's compiler,
the caliber as one line, times."""
from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

from ..common.errors import UsageError
from ..common.files import read_text
from ..store.compiler import short as short_compiler
from ..store.reader import read_info
from ..telemetry import tsv

MAX_POINTS = 600            # telemetry points kept per device (evenly thinned, slowdowns kept)
_CALIBER_SHOWN = ("backend", "timer", "bench_level", "l2_policy", "repeat", "warmup_ms",
                  "autotune_mode", "ir_stage", "tuner_cache", "seed", "inputs")


def csv_rows(path: Path) -> list[dict]:
    """The rows of a CSV table with a header, as dicts; [] when there is no file, UsageError
    naming the file when it cannot be read."""
    try:
        return list(csv.DictReader(io.StringIO(read_text(path))))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"{path} cannot be read ({exc})") from None


def telemetry(root) -> list[dict]:
    """The points of ROOT/telemetry.tsv as dicts, at most MAX_POINTS per device."""
    by_device: dict[str, list[dict]] = {}
    for point in tsv.read(Path(root) / tsv.FILE):
        d = point.to_dict()
        d["slow"] = list(point.slowdowns)
        by_device.setdefault(point.device, []).append(d)
    out = []
    for points in by_device.values():
        step = max(1, -(-len(points) // MAX_POINTS))
        out += [p for i, p in enumerate(points) if i % step == 0 or p["slow"]]
    return out


def run_info(path) -> dict:
    """run.json of a run directory, {} when it cannot be read."""
    try:
        return read_info(path) if path else {}
    except Exception:  # noqa: BLE001 - a damaged run only leaves its identity out
        return {}


def compiler(info: dict) -> str:
    """`triton 3.6.0`, with 10 digits of its commit when run.json recorded one."""
    if not info:
        return "-"
    identity = info.get("compiler")
    commit = identity.get("commit") if isinstance(identity, dict) else None
    return short_compiler(identity) + (f" ({str(commit)[:10]})" if commit else "")


def caliber_line(caliber: dict | None) -> str:
    if not isinstance(caliber, dict) or not caliber:
        return "-"
    parts = [f"{k}={caliber[k]}" for k in _CALIBER_SHOWN if k in caliber]
    stop = caliber.get("stopping")
    if isinstance(stop, dict) and stop:
        parts.append("stopping " + ",".join(f"{k}={v}" for k, v in sorted(stop.items())))
    return " ".join(parts) or "-"


def epoch(text) -> float | None:
    for form in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(str(text), form).timestamp()
        except ValueError:
            continue
    return None


def span(infos: list[dict]) -> tuple[str, float | None]:
    """(the first start as written, seconds from the first start to the last end)."""
    starts = [(epoch(i.get("started_at")), i.get("started_at")) for i in infos if i]
    starts = [s for s in starts if s[0] is not None]
    ends = [epoch(i.get("finished_at")) for i in infos if i]
    ends = [e for e in ends if e is not None]
    if not starts:
        return "-", None
    first = min(starts)
    return str(first[1]), (max(ends) - first[0]) if ends else None


def telemetry_span(points: list[dict]) -> tuple[str, float | None]:
    """When and how long, from the telemetry when no run says it."""
    if not points:
        return "-", None
    t0, t1 = min(p["time"] for p in points), max(p["time"] for p in points)
    return datetime.fromtimestamp(t0).astimezone().strftime("%Y-%m-%dT%H:%M:%S%z"), t1 - t0


def family(op_file: str, run=None) -> str:
    """An op's family: the benchmark class its cases came from where its run says
    (`UnaryPointwiseBenchmark` -> UnaryPointwise: a corpus with one file per op names the op
    again in its file), else its benchmark file's name (`benchmark/test_reduction_ops.py` ->
    reduction_ops), '-' when unknown."""
    for row in getattr(run, "rows", None) or ():
        cls = (getattr(row, "extra", None) or {}).get("benchmark")
        if isinstance(cls, str) and cls:
            return cls.removesuffix("Benchmark") or cls
    name = Path(str(op_file or "")).stem
    if not name or name == "-":
        return "-"
    return name.removeprefix("test_")
