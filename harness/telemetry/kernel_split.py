"""Kernel split: where an op's device time goes, kernel by kernel (`zlh bench --kernel-split`).

After a case is timed — outside every timed section, with the inputs it was timed on — the
function under test is called PROFILED_CALLS more times under torch's profiler, recording
the backend's device activity (`Backend.profiler_activities`; none on the CPU backend:
then one line says so and nothing is written). The device events (kernels, and the
memsets/copies an op issues) are summed per name: launches, device time per call of the
op, and its share of the case's device time. Beside them, the op's device span per call
(`op_span_us`: from the first device event of a call to the end of its last, averaged over
the calls): the kernels' times plus the idle time between them inside one call (the gap between
two calls, host launch time, is left out). The profiled calls are launched one by one, so the
idle time inside a call holds host launch time too: a replayed graph has none of it, so under
the graph timer the kernels' sum is what the measured latency is set beside, under the event
timer the span (`case_sums`; the timer is `op_timer`). The rows go to the run's
`kernel_split.tsv`, rewritten after every case so that an interrupted run keeps what it
profiled.

The profiled calls are never timed and the timed numbers never see the profiler: it runs
after the case's measurements are taken, and a profiler failure costs only the split.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from ..common.errors import one_line
from ..common.fields import finite
from ..common.files import atomic_write_text
from ..common.tsv import read_tsv_rows, tsv_text

FILE_NAME = "kernel_split.tsv"
COLUMNS = ("variant", "dtype", "shape", "occurrence", "kernel", "calls", "time_us", "share",
           "per_call_us", "op_calls", "op_latency_us", "op_span_us", "op_timer")
PROFILED_CALLS = 10


@dataclass(frozen=True)
class KernelTime:
    """One kernel's part of the profiled calls: launches and device time over all of them."""
    kernel: str
    calls: int
    total_us: float


def device_intervals(events: Iterable[Any]) -> list[tuple[str, float, float]]:
    """(name, start, end in µs) of the device events among a profiler's events (torch's
    FunctionEvent: `device_type` other than CPU, `time_range` in µs); host events are left
    out, and so is an event whose times cannot be read."""
    found = []
    for event in events:
        kind = getattr(event, "device_type", None)
        if kind is None or getattr(kind, "name", str(kind)).upper().endswith("CPU"):
            continue
        span = getattr(event, "time_range", None)
        try:
            start, end = float(span.start), float(span.end)
        except (AttributeError, TypeError, ValueError):
            continue
        if end >= start:
            found.append((str(getattr(event, "name", "?")), start, end))
    return found


def device_events(events: Iterable[Any]) -> list[tuple[str, float]]:
    """(name, duration in µs) of the device events among a profiler's events."""
    return [(name, end - start) for name, start, end in device_intervals(events)]


def device_span(events: Iterable[Any], op_calls: int) -> float | None:
    """The op's device time per call from its first device event's start to its last one's
    end — its kernels and the idle time between them inside the call, not the gap between
    two calls (host launch time that a replayed graph does not have) — averaged over the
    calls. The events, in start order, are cut into `op_calls` runs of equal length (every
    call launches the same kernels); None when they cannot be (no device events, or a count
    that `op_calls` does not divide)."""
    found = sorted(device_intervals(events), key=lambda e: e[1])
    if not found or op_calls < 1 or len(found) % op_calls:
        return None
    per_call = len(found) // op_calls
    calls = [found[i:i + per_call] for i in range(0, len(found), per_call)]
    launches = sorted(name for name, _, _ in calls[0])
    if any(sorted(name for name, _, _ in call) != launches for call in calls[1:]):
        return None                         # calls that do not launch alike: no cut to trust
    spans = [max(e for _, _, e in call) - call[0][1] for call in calls]
    return round(sum(spans) / op_calls, 3)


def aggregate(events: Iterable[tuple[str, float]]) -> list[KernelTime]:
    """Per kernel name: launches and total device time, largest total first (then name)."""
    calls: dict[str, int] = {}
    totals: dict[str, float] = {}
    for name, duration in events:
        calls[name] = calls.get(name, 0) + 1
        totals[name] = totals.get(name, 0.0) + duration
    return sorted((KernelTime(k, calls[k], totals[k]) for k in calls),
                  key=lambda t: (-t.total_us, t.kernel))


def split_rows(kernels: list[KernelTime], op_calls: int) -> list[dict]:
    """kernel, calls, time_us (per call of the op), share (of the case's device time, 0..1)
    and per_call_us (per launch) of each kernel; [] when nothing ran on the device."""
    whole = sum(k.total_us for k in kernels)
    if op_calls < 1 or whole <= 0:
        return []
    return [{"kernel": k.kernel, "calls": k.calls,
             "time_us": round(k.total_us / op_calls, 3),
             "share": round(k.total_us / whole, 4),
             "per_call_us": round(k.total_us / k.calls, 3),
             "op_calls": op_calls} for k in kernels]


def torch_profile(fn: Callable[[], Any], calls: int, activities: list,
                  synchronize: Callable[[], None]) -> list:
    """torch's profiler events of `calls` calls of `fn`, the device drained before and after."""
    import torch  # heavy: imported only where used
    synchronize()
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
        synchronize()
    return list(prof.events())


def tsv(rows: list[dict]) -> str:
    return tsv_text(COLUMNS, rows)


class KernelSplit:
    """One run's kernel split: `profile_case` per measured case, the file kept current."""

    def __init__(self, run_dir: str | Path, activities: list,
                 synchronize: Callable[[], None], say: Callable[[str], None],
                 profile: Callable[..., list] | None = None, calls: int = PROFILED_CALLS):
        self.path = Path(run_dir) / FILE_NAME
        self.activities, self.synchronize, self.say = activities, synchronize, say
        self.profile = profile if profile is not None else torch_profile
        self.calls = calls
        self.rows: list[dict] = []

    @classmethod
    def for_run(cls, wanted: bool, backend, run_dir: str | Path,
                say: Callable[[str], None]) -> "KernelSplit | None":
        """The run's split, or None: not asked for, or (said in one line) the backend's
        device kernels are not visible to torch's profiler here."""
        if not wanted:
            return None
        activities = backend.profiler_activities()
        if not activities:
            say(f"kernel split: not available on the {backend.name} backend (torch's profiler "
                f"records no device kernels there); {FILE_NAME} is not written")
            return None
        return cls(run_dir, activities, backend.synchronize, say)

    def profile_case(self, fn: Callable[[], Any], where: dict, latency_ms: float | None,
                     timer: str | None = None) -> list[dict]:
        """Profile `fn` (the function under test, in its own context) for one case; `where`:
        variant, dtype, shape, occurrence; `timer`: the one that measured `latency_ms`. Never
        raises: a failure is one line and no rows."""
        shown = f"{where.get('dtype')} {where.get('shape')}"
        try:
            events = list(self.profile(fn, self.calls, self.activities, self.synchronize))
            rows = split_rows(aggregate(device_events(events)), self.calls)
            span = device_span(events, self.calls)
        except Exception as exc:  # noqa: BLE001 - the split never costs the case
            self.say(f"kernel split: {shown}: the profiler failed ({type(exc).__name__}: "
                     f"{one_line(exc)}); no split for this case")
            return []
        if not rows:
            self.say(f"kernel split: {shown}: the profiler saw no device kernel; no split for "
                     f"this case")
            return []
        latency = None if latency_ms is None else round(latency_ms * 1000.0, 3)
        rows = [{**where, **r, "op_latency_us": latency, "op_span_us": span, "op_timer": timer}
                for r in rows]
        self.rows += rows
        try:
            atomic_write_text(self.path, tsv(self.rows))
        except OSError as exc:
            self.say(f"kernel split: cannot write {self.path} ({one_line(exc)})")
        return rows


CASE_KEY = ("variant", "dtype", "shape", "occurrence")


def read_split(path: str | Path) -> list[dict[str, str]]:
    """Rows of a run's `kernel_split.tsv` (a run directory or the file) keyed by header
    name; [] when there is none or it is not text."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    return read_tsv_rows(path)


def case_sums(rows: list[dict[str, str]], timer: str | None = None) -> list[dict]:
    """Per case (in file order): its kernels, the sum of their `time_us`, the idle time
    between them (`idle_us`: the span less the sum; None in a file without spans), the span
    (`span_us`), the measured latency, what it is set beside (`compared`: "kernels" — the
    sum — under the graph timer, whose replays launch without host time between kernels, or
    when there is no span; "span" otherwise), and how far the split is from it (`gap_pct`:
    (latency - compared) / latency in %; None without a latency). `timer` stands in for rows
    without `op_timer` (files of older runs: the run's timer)."""
    cases: dict[tuple, dict] = {}
    for row in rows:
        key = tuple(row.get(c, "") for c in CASE_KEY)
        case = cases.setdefault(key, {**dict(zip(CASE_KEY, key)), "kernels": 0,
                                      "kernels_us": 0.0, "op_latency_us": None,
                                      "span_us": None, "timer": row.get("op_timer") or timer})
        time_us = finite(row.get("time_us"))
        if time_us is None:
            continue
        case["kernels_us"] += time_us
        case["kernels"] += 1
        for field, column in (("op_latency_us", "op_latency_us"), ("span_us", "op_span_us")):
            value = finite(row.get(column))
            case[field] = value if value is not None else case[field]
    for case in cases.values():
        latency, span = case["op_latency_us"], case["span_us"]
        case["kernels_us"] = round(case["kernels_us"], 3)
        case["idle_us"] = None if span is None else round(span - case["kernels_us"], 3)
        case["compared"] = "kernels" if span is None or case["timer"] == "graph" else "span"
        whole = case["kernels_us"] if case["compared"] == "kernels" else span
        case["gap_pct"] = round(100.0 * (latency - whole) / latency, 3) if latency else None
    return list(cases.values())
