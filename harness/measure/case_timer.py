"""Time one callable for one case with the run's timer, falling back per case.

Graph capture can fail for a case (host sync, dynamic allocation, RNG, illegal stream op).
Such a failure is sorted by the backend:
  recoverable -> event timing for this case, with a BENCHMARK_DIRECT_NO_CUDAGRAPH marker;
  fatal       -> the case fails (never a fallback latency for a broken kernel);
  poisoned    -> BENCHMARK_CAPTURE_POISONED and the run ends.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace

from backends import FATAL, POISONED

from ..common import markers
from ..common.errors import CaseFailure, DevicePoisonedError, one_line
from .measurement import Measurement
from .stopping import Budget, StoppingRule
from .timers import EVENT, GRAPH, GraphPhaseError, make_timer


@dataclass
class Timed:
    measurement: Measurement
    markers: list[str] = field(default_factory=list)


class CaseTimer:
    """`lock`: the device's measurement lock (device_lock.DeviceLock), held around each
    timed section (`section`); None where no other process shares the device. `turns`: a
    baton.SampleTurns when another process's timer measures the same cases and the two take
    their samples in turns (each measurement labelled with its op, dtype and shape); None
    otherwise."""

    def __init__(self, backend, device_index: int, timer: str, rule: StoppingRule,
                 budget: Budget, repeat: int = 1, flush_l2: bool = False, lock=None,
                 turns=None):
        self.backend = backend
        self.lock = lock
        self.turns = turns
        self.measure_s = 0.0           # time inside timed sections (lock waits excluded)
        self.first_call_s = 0.0        # the functions under test's first calls (`first_call`)
        self.device_index = device_index
        self.timer_name = timer
        self.rule, self.budget = rule, budget
        self._made_with = (repeat, flush_l2, turns)
        self.primary, self.fallback = self._timers(rule, budget)

    def _timers(self, rule: StoppingRule, budget: Budget) -> tuple:
        """(the requested timer, the event timer it falls back to or None) at these budgets."""
        def made(name: str):
            return make_timer(name, self.backend, self.device_index, rule, budget,
                              *self._made_with)
        return made(self.timer_name), (made(EVENT) if self.timer_name == GRAPH else None)

    @contextlib.contextmanager
    def timing(self, rule: StoppingRule, budget: Budget):
        """For the block, measurements at this stopping rule and budget (a level placement's
        short ones, run/level.py); the sections, the lock and the turns stay as they are."""
        saved = self.primary, self.fallback
        self.primary, self.fallback = self._timers(rule, budget)
        try:
            yield self
        finally:
            self.primary, self.fallback = saved

    def agree(self, flag: bool) -> bool:
        """`flag`, or the peer's where samples are taken in turns (a decision both sides
        take alike, such as a throttle retry)."""
        return self.turns.agree(flag) if self.turns is not None else flag

    @contextlib.contextmanager
    def section(self):
        """One timed section: the warm-up and timed calls of one case (its baseline and its
        function under test, with their throttle retries), the device's lock held for it:
        both numbers of a row are taken under the same conditions, and the lock is taken
        once per case."""
        with self.lock.section() if self.lock is not None else contextlib.nullcontext():
            started = time.perf_counter()
            try:
                yield
            finally:
                self.measure_s += time.perf_counter() - started

    @contextlib.contextmanager
    def first_call(self):
        """A case's first call of its function under test, outside any timed section: its
        compilation, an autotune sweep, lazy set-up (under the run's hold of the lock, where
        one is named)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.first_call_s += time.perf_counter() - started

    def measure(self, fn, op: str, names=(), scope=None, pin=None, lead=None,
                **where) -> Timed:
        """`names`: other names the op goes by (a benchmark's own op name), for the deny list;
        `scope`: entered around the calls of `fn` (see timers); `pin`: (timer name, calls per
        sample) a replay took from its record, used by that timer only; `lead`: device work
        at the start of each sample's timed window, given its calls (see timers)."""
        if self.turns is not None:
            self.turns.label = "|".join(str(part) for part in (op, *where.values()))
        if self.fallback is not None and ({op, *names} & self.backend.capture_deny):
            line = markers.marker(markers.NO_GRAPH, op=op, phase="denylist",
                                  reason="KnownPoisoningOp", **where,
                                  detail=f"{self.backend.name} denies capture for this op")
            return _fell_back(self.fallback.measure(fn, scope, _calls(pin, self.fallback),
                                                    lead), line)
        try:
            return Timed(self.primary.measure(fn, scope, _calls(pin, self.primary), lead))
        except GraphPhaseError as failure:
            return self._fall_back(fn, op, failure, where, scope, pin, lead)

    def _fall_back(self, fn, op: str, failure: GraphPhaseError, where: dict, scope,
                   pin=None, lead=None) -> Timed:
        cause = failure.cause
        fields = dict(op=op, phase=failure.phase, reason=type(cause).__name__, **where)
        verdict = self.backend.classify_error(cause)
        if verdict == FATAL:
            problem = self.backend.device_usable()
            if problem:
                raise DevicePoisonedError(markers.marker(
                    markers.DEVICE_POISONED, detail=f"{one_line(cause)}; device unusable "
                                                    f"afterwards: {problem}", **fields))
            raise CaseFailure("fatal_device_error", one_line(cause)) from cause
        self._settle()
        stuck_rng = self.backend.rng_usable(self.device_index)
        if verdict == POISONED or stuck_rng:
            detail = one_line(cause) if verdict == POISONED else f"generator unusable: {stuck_rng}"
            raise DevicePoisonedError(markers.marker(markers.CAPTURE_POISONED, detail=detail,
                                                     **fields))
        line = markers.marker(markers.NO_GRAPH, detail=one_line(cause, 160), **fields)
        return _fell_back(self.fallback.measure(fn, scope, _calls(pin, self.fallback), lead),
                          line)

    def _settle(self) -> None:
        """Let an aborted capture drain; a failure here surfaces in the next check."""
        try:
            self.backend.synchronize()
        except Exception:  # noqa: BLE001
            pass


def _calls(pin, timer) -> int | None:
    """The pinned calls per sample where the pin is for this timer, else None (sized)."""
    return pin[1] if pin is not None and pin[0] == timer.name else None


def _fell_back(measurement: Measurement, line: str) -> Timed:
    """An event-timed measurement that says why it is not graph-timed."""
    return Timed(replace(measurement, fallback=line), [line])
