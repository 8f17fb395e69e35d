import pytest

from conftest import FakeBackend
from harness.common import markers
from harness.measure.case_timer import CaseTimer
from harness.common.errors import CaseFailure, DevicePoisonedError
from harness.measure.timers import (EVENT, GRAPH, HOST, GraphPhaseError, GraphTimer, HostTimer,
                            make_timer, resolve_timer_name)
import backends


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        sum(range(200))


def test_host_timer_discards_first_call_and_warms_up(sure_rule, fast_budget):
    fn = Counter()
    m = HostTimer(backends.get_backend("cpu"), 0, sure_rule, fast_budget).measure(fn)
    assert m.timer == HOST
    assert m.n >= sure_rule.min_samples
    assert m.warmup_calls >= 1
    # 1 discarded + estimate + warm-up + every sampled call
    assert fn.calls == 1 + fast_budget.estimate_calls + m.warmup_calls + m.n * m.calls_per_sample
    assert m.median > 0


def test_repeat_reports_median_of_independent_medians(fast_rule, fast_budget):
    m = HostTimer(backends.get_backend("cpu"), 0, fast_rule, fast_budget, repeat=3).measure(Counter())
    assert len(m.repeats) == 3
    assert m.median == sorted(m.repeats)[1]


def test_graph_timer_captures_unrolled_calls(fast_rule, fast_budget):
    fn = Counter()
    backend = FakeBackend()
    m = GraphTimer(backend, 0, fast_rule, fast_budget).measure(fn)
    assert m.timer == GRAPH
    assert 1 <= m.calls_per_sample <= fast_budget.max_unroll
    assert backend.captures >= 1
    assert m.median > 0


def test_graph_timer_reports_capture_phase(fast_rule, fast_budget):
    backend = FakeBackend(capture_error=RuntimeError("operation not permitted when stream is "
                                                     "capturing"))
    with pytest.raises(GraphPhaseError) as info:
        GraphTimer(backend, 0, fast_rule, fast_budget).measure(Counter())
    assert info.value.phase == "capture"


def case_timer(backend, rule, budget):
    return CaseTimer(backend, 0, GRAPH, rule, budget)


def test_recoverable_capture_failure_falls_back_to_events_with_marker(fast_rule, fast_budget):
    error = RuntimeError("CUDA error: operation not permitted when stream is capturing\n"
                         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    timed = case_timer(FakeBackend(capture_error=error), fast_rule, fast_budget).measure(
        Counter(), "softmax", dtype="float16", shape="64x64")
    assert timed.measurement.timer == EVENT
    (line,) = timed.markers
    name, fields = markers.parse_marker(line)
    assert name == "BENCHMARK_DIRECT_NO_CUDAGRAPH"
    assert fields["op"] == "softmax" and fields["phase"] == "capture"
    assert fields["reason"] == "RuntimeError"
    assert fields["detail"].startswith("CUDA error: operation not permitted")


def test_fatal_capture_error_fails_the_case_without_a_number(fast_rule, fast_budget):
    error = RuntimeError("CUDA error: an illegal memory access was encountered")
    with pytest.raises(CaseFailure) as info:
        case_timer(FakeBackend(capture_error=error), fast_rule, fast_budget).measure(Counter(), "x")
    assert info.value.reason == "fatal_device_error"


def test_fatal_error_that_leaves_the_device_unusable_ends_the_run(fast_rule, fast_budget):
    backend = FakeBackend(capture_error=RuntimeError("CUDA error: an illegal memory access"),
                          device_error="RuntimeError: CUDA error: an illegal memory access")
    with pytest.raises(DevicePoisonedError) as info:
        case_timer(backend, fast_rule, fast_budget).measure(Counter(), "x")
    assert info.value.message.startswith("BENCHMARK_DEVICE_POISONED op=x phase=capture")
    assert "device unusable afterwards" in info.value.message


def test_deny_list_matches_the_benchmark_name_too(fast_rule, fast_budget):
    backend = FakeBackend(deny={"unique2"})
    timed = case_timer(backend, fast_rule, fast_budget).measure(Counter(), "unique2:unique",
                                                                 {"unique2"})
    assert backend.captures == 0 and "phase=denylist" in timed.markers[0]


def test_poisoned_error_ends_with_its_own_marker(fast_rule, fast_budget):
    error = RuntimeError("Offset increment outside graph capture encountered unexpectedly.")
    with pytest.raises(DevicePoisonedError) as info:
        case_timer(FakeBackend(capture_error=error), fast_rule, fast_budget).measure(Counter(), "x")
    assert info.value.message.startswith("BENCHMARK_CAPTURE_POISONED op=x phase=capture")


def test_stuck_generator_after_recoverable_failure_is_poisoned(fast_rule, fast_budget):
    backend = FakeBackend(capture_error=RuntimeError("capture invalidated"),
                          rng_error="Offset increment outside graph capture")
    with pytest.raises(DevicePoisonedError) as info:
        case_timer(backend, fast_rule, fast_budget).measure(Counter(), "dropout")
    assert "generator unusable" in info.value.message


def test_deny_list_skips_capture(fast_rule, fast_budget):
    backend = FakeBackend(deny={"unique2"})
    timed = case_timer(backend, fast_rule, fast_budget).measure(Counter(), "unique2")
    assert backend.captures == 0
    assert timed.measurement.timer == EVENT
    assert "phase=denylist reason=KnownPoisoningOp" in timed.markers[0]


def test_timer_resolution_follows_capabilities():
    assert resolve_timer_name("auto", backends.get_backend("cuda")) == GRAPH
    assert resolve_timer_name("auto", backends.get_backend("rocm")) == EVENT
    assert resolve_timer_name("auto", backends.get_backend("cpu")) == HOST
    with pytest.raises(ValueError, match="graph capture"):
        resolve_timer_name("graph", backends.get_backend("cpu"))
    with pytest.raises(ValueError):
        make_timer("stopwatch", backends.get_backend("cpu"), 0)


def test_a_host_bound_call_is_not_unrolled_by_its_tiny_device_time(fast_rule):
    """A call that is mostly host work (its graph replays in microseconds) must not be
    captured thousands of times: the unroll stops at max_capture_ms of host time."""
    import time as clock
    from harness.measure.stopping import Budget

    class SlowOnHost(Counter):
        def __call__(self):
            self.calls += 1
            clock.sleep(0.005)                      # 5 ms of host work, no device work

    budget = Budget(warmup_ms=1.0, max_warmup_calls=5, estimate_calls=2, graph_replay_ms=1.0,
                    max_unroll=2000, batch_ms=0.0, samples_per_sync=5, max_capture_ms=25.0)
    fn = SlowOnHost()
    m = GraphTimer(FakeBackend(), 0, fast_rule, budget).measure(fn)
    assert m.timer == GRAPH
    assert m.calls_per_sample <= 6                  # 25 ms / ~5 ms per call, not 2000
    assert fn.calls < 30
    # a generous replay target: a replay slowed by a busy host still asks for max_unroll
    uncapped = Budget(**{**budget.to_dict(), "max_capture_ms": 1e9, "max_unroll": 40,
                         "graph_replay_ms": 100.0})
    assert GraphTimer(FakeBackend(), 0, fast_rule, uncapped).measure(
        SlowOnHost()).calls_per_sample == 40        # without the cap: up to max_unroll
