"""The timing core: turn a zero-argument callable into a `Measurement`.

Three timers, one shape:

    discard one call (absorbs JIT compile and autotune) -> estimate the per-call time
    -> warm up for `warmup_ms` -> take samples until the stopping rule says enough.

* `GraphTimer` captures an unrolled sequence of calls in a device graph and times replays
  with device events: no host launch overhead in the number.
* `EventTimer` times calls with device events (per call, or per batch for tiny calls),
  optionally flushing L2 before each call.
* `HostTimer` uses the host clock and a device sync; it is the timer of the `cpu` backend.

`turns` (a `baton.SampleTurns`, optional) has the samples taken in turns with another
process's timer measuring the same cases: one sample and a sync per turn, each sample queued
behind a short device spin and one untimed run of the same work (so that it follows its own
side's work, not the other side's, and the host's wake-up and launch stay out of the timed
window), the estimate, warm-up and capture in turn too, the stopping rule's time counting this
side's own time only (baton.py).

Timers only time. They know the backend interface, never an adapter or a vendor. Errors in
graph-specific phases are raised as `GraphPhaseError` so the caller can fall back.

`scope` (a context-manager factory, optional) is entered around the timer's calls of `fn`
only — the eager calls, the unrolled calls inside a graph capture, a sampling loop — and
never around graph creation, capture begin/end or replays. A function under test that runs
inside a library context (e.g. one that routes torch ops to the library's kernels) gets
exactly its calls routed, not the timer's own device work.

`lead` (a callable given a sample's calls, optional) queues device work at the start of each
sample's timed window, once per sample whatever its calls (in a graph, captured ahead of the
unrolled calls; with events, after the start event): a planted change (run/plant.py).
"""
from __future__ import annotations

import contextlib
import math
import time
from typing import Callable, ContextManager

Scope = Callable[[], ContextManager]
Lead = Callable[[int], object]

from ..common import spelling
from .measurement import Measurement
from .stopping import Budget, StoppingRule

GRAPH, EVENT, HOST = "graph", "event", "host"
HOLD_CYCLES = 100_000    # the spin before a sample taken in turns: 50-100 µs at 1-2 GHz
TIMER_NAMES = (GRAPH, EVENT, HOST)


class GraphPhaseError(Exception):
    """Capture or replay failed; `phase` is capture, warmup (first replay) or sync."""

    def __init__(self, phase: str, cause: BaseException):
        super().__init__(f"graph {phase} failed: {cause}")
        self.phase = phase
        self.cause = cause


def clamp(value: float, low: int, high: int) -> int:
    if not math.isfinite(value):
        return high
    return int(max(low, min(high, round(value))))


class _TimerBase:
    name = ""

    def __init__(self, backend, device_index: int, rule: StoppingRule | None = None,
                 budget: Budget | None = None, repeat: int = 1, turns=None):
        if repeat < 1:
            raise ValueError("repeat must be >= 1")
        self.backend = backend
        self.device_index = device_index
        self.rule = rule or StoppingRule()
        self.budget = budget or Budget()
        self.repeat = repeat
        self.clocks: tuple = ()
        self.turns = turns
        # In turns each sample starts on a drained device, after a hand-over between processes
        # and often after the other side's work: a short spin, then one untimed run of the same
        # work, are queued ahead of it, so every sample follows its own side's work (caches,
        # clocks as for the samples of one side in a row) and the host's wake-up and launch
        # stay out of the timed window.
        self._hold = turns is not None and backend.has_spin()

    # -- the shared skeleton -------------------------------------------------------------
    def measure(self, fn: Callable[[], object], scope: Scope | None = None,
                calls: int | None = None, lead: Lead | None = None) -> Measurement:
        """`calls`: the calls per sample to use (pinned by a replay) instead of sizing a
        sample from the first estimate; not used where that many calls would take longer
        than a capture may (`Budget.max_capture_ms`, at the estimated rate). `lead`: device
        work at the start of each sample's timed window (module docstring)."""
        scope = scope or contextlib.nullcontext
        runs = [self._measure_once(fn, scope, calls, lead) for _ in range(self.repeat)]
        if len(runs) == 1:
            return runs[0]
        samples = tuple(s for run in runs for s in run.samples_ms)
        return Measurement(samples, self.name, runs[0].calls_per_sample,
                           sum(r.warmup_calls for r in runs),
                           repeats=tuple(r.median for r in runs),
                           clocks=tuple(c for r in runs for c in r.clocks),
                           undersampled=any(r.undersampled for r in runs))

    def _measure_once(self, fn, scope: Scope, pinned: int | None = None,
                      lead: Lead | None = None) -> Measurement:
        with scope():
            fn()                  # discarded: JIT compile, autotune, lazy init
            self.backend.synchronize()
            if self.turns is not None:
                self.turns.begin()    # from here to the samples: in turn with the peer
            per_call_ms = (self._time_calls(fn, self.budget.estimate_calls)
                           / self.budget.estimate_calls)
            warmup_calls = clamp(self.budget.warmup_ms / max(per_call_ms, 1e-6), 1,
                                 self.budget.max_warmup_calls)
            for _ in range(warmup_calls):
                fn()
        self.backend.synchronize()
        if pinned and pinned * per_call_ms > self.budget.max_capture_ms:
            pinned = None      # far slower than where the pin was taken: sized as usual
        return self._sample(fn, per_call_ms, warmup_calls, scope, pinned, lead or _no_lead)

    def _collect(self, take_batch: Callable[[], list[float]]) -> list[float]:
        """Samples until the rule stops; the device clock is read (backend.clock_reading, an
        in-process query, None where there is none) just before and just after, outside any
        timed window, into `self.clocks`."""
        self.clocks = self._clock()
        pace_s = self.rule.pace_us / 1e6
        start = time.perf_counter()
        waited = self._waited_s()

        def enough(taken: list[float]) -> bool:     # this side's own time: waits excluded
            own_s = time.perf_counter() - start - (self._waited_s() - waited)
            return self.rule.should_stop(taken, own_s * 1e3)

        samples, ended = (self.turns.collect(take_batch, enough) if self.turns is not None
                          else ([], False))
        while not ended:    # alone (or on alone from where the turns stopped)
            samples.extend(take_batch())
            ended = enough(samples)
            if pace_s and not ended:
                time.sleep(pace_s)       # the device idles between samples (stopping.py)
        self.clocks += self._clock()
        return samples

    def _queue_ahead(self, same_work: Callable[[], object] | None) -> None:
        """Before a sample's start event, in turns: the spin (where the backend has one) and
        `same_work` untimed (see __init__)."""
        if self.turns is None:
            return
        if self._hold:
            self.backend.spin(HOLD_CYCLES)
        if same_work is not None:
            same_work()

    def _waited_s(self) -> float:
        return self.turns.waited_s if self.turns is not None else 0.0

    def _clock(self) -> tuple:
        reading = self.backend.clock_reading(self.device_index)
        return (reading,) if reading is not None else ()

    def _per_sync(self) -> int:
        """Samples between host syncs: one when paced (each sample is followed by the gap) or
        taken in turns (the device drained before the other side's turn)."""
        return 1 if self.rule.pace_us or self.turns is not None else self.budget.samples_per_sync

    def _calls_per_sample(self, per_call_ms: float, pinned: int | None = None) -> int:
        if pinned:
            return int(pinned)
        if per_call_ms >= self.budget.batch_ms:
            return 1
        return clamp(self.budget.batch_ms / max(per_call_ms, 1e-6), 1, 1000)

    # -- what differs ----------------------------------------------------------------------
    def _time_calls(self, fn, calls: int) -> float:
        raise NotImplementedError

    def _sample(self, fn, per_call_ms: float, warmup_calls: int, scope: Scope,
                pinned: int | None, lead: Lead) -> Measurement:
        raise NotImplementedError


def _no_lead(calls: int) -> None:
    return None


class HostTimer(_TimerBase):
    name = HOST

    def _time_calls(self, fn, calls: int, lead: Lead = _no_lead) -> float:
        self.backend.synchronize()
        start = time.perf_counter()
        lead(calls)
        for _ in range(calls):
            fn()
        self.backend.synchronize()
        return (time.perf_counter() - start) * 1e3

    def _sample(self, fn, per_call_ms, warmup_calls, scope, pinned, lead) -> Measurement:
        calls = self._calls_per_sample(per_call_ms, pinned)
        with scope():
            samples = self._collect(lambda: [self._time_calls(fn, calls, lead) / calls])
        return Measurement(tuple(samples), self.name, calls, warmup_calls,
                           clocks=self.clocks,
                           undersampled=self.rule.undersampled(len(samples)))


class EventTimer(_TimerBase):
    name = EVENT

    def __init__(self, *args, flush_l2: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.flush_l2 = flush_l2
        self._flush_buffer = None

    def flush_bytes(self) -> int:
        """Twice the device's L2, so a flush evicts everything; 256 MiB when L2 is unknown."""
        l2 = self.backend.l2_cache_bytes(self.device_index)
        return 2 * l2 if l2 else 256 * 1024 * 1024

    def _flush(self):
        if self._flush_buffer is None:
            import torch  # heavy: imported only where used
            self._flush_buffer = torch.empty(self.flush_bytes(), dtype=torch.int8,
                                             device=self.backend.torch_device(self.device_index))
        self._flush_buffer.zero_()

    def _time_calls(self, fn, calls: int) -> float:
        start, end = self.backend.event(), self.backend.event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def _sample(self, fn, per_call_ms, warmup_calls, scope, pinned, lead) -> Measurement:
        calls = 1 if self.flush_l2 else self._calls_per_sample(per_call_ms, pinned)
        per_sync = self._per_sync()

        def take_batch():
            pairs = []
            for _ in range(per_sync):
                if self.flush_l2:
                    self._flush()
                start, end = self.backend.event(), self.backend.event()
                self._queue_ahead(None if self.flush_l2 else (lambda: [fn() for _ in range(calls)]))
                start.record()
                lead(calls)
                for _ in range(calls):
                    fn()
                end.record()
                pairs.append((start, end))
            self.backend.synchronize()
            return [s.elapsed_time(e) / calls for s, e in pairs]

        with scope():
            samples = self._collect(take_batch)
        return Measurement(tuple(samples), self.name, calls, warmup_calls,
                           clocks=self.clocks,
                           undersampled=self.rule.undersampled(len(samples)))


class GraphTimer(EventTimer):
    name = GRAPH

    def __init__(self, *args, **kwargs):
        kwargs.pop("flush_l2", None)
        super().__init__(*args, flush_l2=False, **kwargs)

    def _sample(self, fn, per_call_ms, warmup_calls, scope, pinned, lead) -> Measurement:
        target_ms, max_unroll = self.budget.graph_replay_ms, self.budget.max_unroll
        unroll = int(pinned) if pinned else clamp(target_ms / max(per_call_ms, 1e-6), 1,
                                                  max_unroll)
        graph = self._capture(fn, unroll, scope, lead)
        replay_ms = self._replay_ms(graph)
        # The eager estimate includes host launch cost, so tiny kernels get too few calls per
        # replay; size the graph again from the device's own time per call, once.
        better = clamp(target_ms * unroll / max(replay_ms, 1e-6), 1, max_unroll)
        # A capture runs every call on the host: a call that is mostly host work (an input
        # list built in Python, a copy from host memory) has a tiny device time, and sizing
        # the graph by that alone would capture thousands of slow calls (minutes per case).
        better = min(better, max(unroll, clamp(self.budget.max_capture_ms /
                                               max(per_call_ms, 1e-6), 1, max_unroll)))
        if not pinned and replay_ms < target_ms / 2 and better > unroll:
            del graph
            unroll = better
            graph = self._capture(fn, unroll, scope, lead)
            replay_ms = self._replay_ms(graph)
        # Warm the device up on the graph itself (clocks ramp under sustained load).
        replays = clamp(self.budget.warmup_ms / max(replay_ms, 1e-6), 1,
                        self.budget.max_warmup_calls)
        self._replay(graph, replays, "warmup")
        self._sync("sync")
        per_sync = self._per_sync()

        def take_batch():
            pairs = []
            for _ in range(per_sync):
                start, end = self.backend.event(), self.backend.event()
                self._queue_ahead(lambda: self._replay(graph, 1, "sync"))
                start.record()
                self._replay(graph, 1, "sync")
                end.record()
                pairs.append((start, end))
            self._sync("sync")
            return [s.elapsed_time(e) / unroll for s, e in pairs]

        samples = self._collect(take_batch)
        graph = None    # the captured graph is released before the result is returned
        return Measurement(tuple(samples), self.name, unroll, warmup_calls + replays * unroll,
                           clocks=self.clocks,
                           undersampled=self.rule.undersampled(len(samples)))

    @staticmethod
    def _replay(graph, times: int, phase: str) -> None:
        try:
            for _ in range(times):
                graph.replay()
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            raise GraphPhaseError(phase, exc) from exc

    def _sync(self, phase: str) -> None:
        try:
            self.backend.synchronize()
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            raise GraphPhaseError(phase, exc) from exc

    def _replay_ms(self, graph) -> float:
        """Device time of one replay; the first replay's errors are phase `warmup`."""
        start, end = self.backend.event(), self.backend.event()
        try:
            start.record()
            graph.replay()
            end.record()
        except Exception as exc:  # noqa: BLE001
            raise GraphPhaseError("warmup", exc) from exc
        self._sync("warmup")
        return start.elapsed_time(end)

    def _capture(self, fn, unroll: int, scope: Scope, lead: Lead):
        graph = self.backend.new_graph()
        try:
            # A scratch RNG state: if capture aborts, the process generator is untouched.
            with self.backend.scratch_rng(self.device_index):
                with self.backend.graph_capture(graph):
                    lead(unroll)
                    with scope():
                        for _ in range(unroll):
                            fn()
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            raise GraphPhaseError("capture", exc) from exc
        return graph


def make_timer(name: str, backend, device_index: int, rule: StoppingRule | None = None,
               budget: Budget | None = None, repeat: int = 1, flush_l2: bool = False,
               turns=None):
    if name == GRAPH:
        return GraphTimer(backend, device_index, rule, budget, repeat, turns=turns)
    if name == EVENT:
        return EventTimer(backend, device_index, rule, budget, repeat, flush_l2=flush_l2,
                          turns=turns)
    if name == HOST:
        return HostTimer(backend, device_index, rule, budget, repeat, turns=turns)
    raise ValueError(f"unknown timer {name!r}; known: {', '.join(TIMER_NAMES)}")


def resolve_timer_name(requested: str, backend) -> str:
    """`auto` -> graph where the backend captures graphs, event where it has events, else host."""
    if requested == "auto":
        if backend.supports_graph:
            return GRAPH
        return EVENT if backend.supports_events else HOST
    usable = " or ".join([t for t, ok in ((GRAPH, backend.supports_graph),
                                          (EVENT, backend.supports_events), (HOST, True))
                          if ok] + ["auto"])
    if requested == GRAPH and not backend.supports_graph:
        raise ValueError(f"backend {backend.name} does not support graph capture; "
                         f"use {spelling.option('timer')} {usable}")
    if requested == EVENT and not backend.supports_events:
        raise ValueError(f"backend {backend.name} has no device events; "
                         f"use {spelling.option('timer')} {usable}")
    if requested not in TIMER_NAMES:
        raise ValueError(f"unknown timer {requested!r}; known: auto, {', '.join(TIMER_NAMES)}")
    return requested
