"""Calls per sample pinned by `--replay`: a replay run times each case with the calls per
sample (a graph's unroll, an event sample's batch) its record used.

A timer sizes a sample from a first estimate of the call's latency, and the estimate moves
from run to run. The latency per call moves with it: a graph replay's launch is shared by its
calls, and on an H200 a 25-60 µs kernel timed with graphs of K/2 to 2K calls read medians
0.4 % apart where one graph of K calls timed again read 0.06-0.1 % apart (tests/device/
README.md, twenty-fourth set). Two sides that size their samples apart compare their sizing as
well as their kernels; a replay therefore takes the record's calls per sample, case by case,
for the timer the record used (a case the record did not time, or timed with another timer,
is sized as usual). A case its record timed on level placements (`--level-placements`,
level.py) is pinned to that many as well (`"level"`).
"""
from __future__ import annotations

from pathlib import Path

from ..common.fields import is_int
from ..store.reader import load_run
from ..store.results import SUCCESS, row_key
from ..store.rundir import RESULTS_JSONL

Key = tuple        # store.results.row_key
Pin = tuple        # (timer name, calls per sample)


def calls_from_record(run_dir: Path | None) -> dict[Key, dict[str, Pin]] | None:
    """{case key: {"torch" | "gems": (timer, calls per sample), "level": placements}} of a
    stored run (`level` where the record timed the case on level placements); {} for a
    record that holds no measurements (a parallel sweep's merged records: its replay sizes
    its samples as usual); None for None (no record: a run that records). A measurement that
    fell back to another timer is pinned under that timer."""
    if run_dir is None:
        return None
    if not (Path(run_dir) / RESULTS_JSONL).is_file():
        return {}
    pins: dict[Key, dict[str, Pin]] = {}
    for row in load_run(run_dir).rows:
        if row.status != SUCCESS:
            continue
        sides: dict = {side: (m.timer, m.calls_per_sample) for side, m in
                       (("torch", row.torch), ("gems", row.gems)) if m is not None}
        count = row.extra.get("level_placements")
        if is_int(count) and count > 0:
            sides["level"] = count
        if sides:
            pins[row_key(row)] = sides
    return pins
