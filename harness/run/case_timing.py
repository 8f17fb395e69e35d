"""A case's timed calls: on each placement of its inputs (placement.py) the baseline and the
function under test, with their throttle retries; and, under `--level-placements`, a
record's level probe and the short level placements of a case whose level is drawn per
placement (level.py)."""
from __future__ import annotations

import contextlib

from ..common.errors import CaseFailure, DevicePoisonedError, one_line
from ..measure.case_timer import CaseTimer
from ..measure.measurement import IQM, MEDIAN
from ..store.results import Row
from ..telemetry import throttle
from . import level, placement


COUNTS = ("placements_new_memory", "placements_copied", "placements_not_moved")


def op_names(case) -> set[str]:
    """The names the case's op goes by (its own, a benchmark's op name): the timer's deny
    list is matched against them."""
    return {n for n in (case.op.split(":")[0], case.info.get("op_name")) if n}


class PlacedTiming:
    """One case's timed calls. `fed[0]`: the inputs the calls go through (a new placement
    replaces them); `pin`: what a replay takes from its record for this case —
    {"torch" | "gems": (timer, calls per sample), "level": level placements}; `lead`: a
    plant's spin at the start of each of the function under test's samples; `build`: the
    case's inputs made again, as at first (seeded), for a new placement."""

    def __init__(self, case, case_timer: CaseTimer, backend, options, row: Row, fed: list,
                 under_test, scope, pin: dict, lead=None, build=None):
        self.case, self.case_timer, self.backend, self.options = case, case_timer, backend, options
        self.row, self.fed, self.under_test, self.scope = row, fed, under_test, scope
        self.pin, self.lead, self.build = pin, lead, build or case.build
        self.counts: dict = {}          # the last series' placement counts (`_series`)
        self.baseline = ((lambda: case.baseline(*fed[0].args, **fed[0].kwargs))
                         if options.baseline_timing else None)

    def run(self, replaying: bool) -> None:
        """The case timed as its options and its record say (module doc; level.py)."""
        most = self.options.level_placements
        recorded = self.pin.get("level") if most and replaying else None
        if recorded:                    # a replay: as many level placements as its record
            self._level_series(min(recorded, most))
            return
        spacers = (self.options.seed if self.options.placement_seed is None
                   else self.options.placement_seed)
        with self._series(f"{spacers}") as measure:
            measured = [measure(number) for number in range(self.options.placements)]
        self._fill(measured, MEDIAN)
        if most and not replaying and level.probed(self.row.gems.median,
                                                   self.options.level_min_us):
            # a run that records: the level of a case long enough to be worth it probed
            try:
                self._probe(most)
            except (CaseFailure, DevicePoisonedError):
                raise                   # the device's trouble, not the probe's
            except Exception as exc:  # noqa: BLE001 - the case keeps its first timing
                self.row.extra["level_error"] = one_line(exc)

    def _probe(self, most: int) -> None:
        """PROBE short placements (at most `most`); where their spread says the level is
        drawn per placement, the case timed again on level placements, the probe's among
        them."""
        with self._short() as measure:
            measured = [measure(number) for number in range(1, min(level.PROBE, most) + 1)]
            spread = level.spread_pct([m[1].median for m in measured])
            self.row.extra["level_spread_pct"] = round(spread, 4)
            count = level.placements_for(spread, most)
            if not count:
                return
            measured += [measure(number) for number in range(len(measured) + 1, count + 1)]
        first = self.row.markers, self.row.throttled
        self._fill_level(measured)
        # what the first timing saw stays said (a power limit shows in its long windows, which
        # the round process is chosen by: corpus/chosen_rounds.py)
        self.row.markers = first[0] + self.row.markers
        if first[1] is not None:
            self.row.throttled = bool(first[1] or self.row.throttled)

    def _level_series(self, count: int) -> None:
        with self._short() as measure:
            measured = [measure(number) for number in range(1, count + 1)]
        self._fill_level(measured)           # after the series: its counts are known

    def _fill_level(self, measured: list) -> None:
        """The row from level placements: their interquartile mean, and how many."""
        self._fill(measured, IQM)
        self.row.extra["level_placements"] = len(measured)

    @contextlib.contextmanager
    def _short(self):
        """measure(number) on level placements, each at the short budget (level.py)."""
        with self._series("level") as measure, \
                self.case_timer.timing(*level.short_timing(self.case_timer.rule,
                                                           self.case_timer.budget)):
            yield measure

    @contextlib.contextmanager
    def _series(self, spacers: str):
        """Yields measure(number): the case's calls timed on placement `number` (0: the
        inputs where they are; later ones built again elsewhere, behind a spacer seeded by
        `spacers` and the number). The placements' counts are kept for the row (`_fill`)."""
        options, row = self.options, self.row
        mover = placement.Mover(self.backend, self.case_timer.device_index,
                                options.placement_memory,
                                lambda number: f"{spacers}:{number}:{row.shape_detail}:"
                                               f"{row.occurrence}")
        taken = []

        def measure(number: int) -> tuple:
            taken.append(number)
            if number:
                self.fed[0] = mover.move(number, self.fed, self.build)
            with self.case_timer.section():   # the device alone (its lock) for the calls
                return self._both()
        try:
            yield measure
        finally:
            mover.close()
        counts = {"placements_copied": mover.copied, "placements_not_moved": mover.not_moved}
        self.counts = {name: count for name, count in counts.items() if count}
        if options.placement_memory == placement.NEW and len(taken) > 1:
            self.counts["placements_new_memory"] = mover.in_new_memory

    def _fill(self, measured: list, center: str) -> None:
        """The row from its placements' measurements, combined by `center`, and the counts
        of the series they were taken in (a probe that times the case again replaces
        them)."""
        row = self.row
        for name in COUNTS:
            row.extra.pop(name, None)
        row.extra.update(self.counts)
        row.torch = placement.combined([m[0] for m in measured], center)
        row.gems = placement.combined([m[1] for m in measured], center)
        flags = [m[2] for m in measured if m[2] is not None]
        row.throttled = any(flags) if flags else None
        row.markers = [line for m in measured for line in m[3]]

    def _both(self) -> tuple:
        """Time the baseline (None: not timed), then the function under test; while either
        ran throttled (see telemetry.throttle), time both again, up to `retry_throttled`
        more times. The last attempt is kept; every throttled attempt leaves a
        BENCHMARK_CASE_THROTTLED line. Returns (the baseline's measurement or None, the
        function under test's, throttled, markers)."""
        case, case_timer, pin = self.case, self.case_timer, self.pin
        retries = self.options.retry_throttled
        where = {"dtype": case.dtype, "shape": case.shape_detail}
        names = op_names(case)
        notes: list[str] = []
        for attempt in range(1, retries + 2):
            timed_torch = (case_timer.measure(self.baseline, case.op, names,
                                              pin=pin.get("torch"), **where)
                           if self.baseline is not None else None)
            timed_gems = case_timer.measure(self.under_test, case.op, names, scope=self.scope,
                                            pin=pin.get("gems"), lead=self.lead, **where)
            verdicts = throttle.judge({"torch": timed_torch and timed_torch.measurement,
                                       "gems": timed_gems.measurement})
            left = retries + 1 - attempt
            notes += throttle.marker_lines(verdicts, {"op": case.op, **where}, attempt, left)
            if not case_timer.agree(throttle.row_flag(verdicts)) or left == 0:
                break               # (with turns, a retry when either side's was throttled)
        return (timed_torch and timed_torch.measurement, timed_gems.measurement,
                throttle.row_flag(verdicts),
                (timed_torch.markers if timed_torch else []) + timed_gems.markers + notes)

