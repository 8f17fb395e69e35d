"""telemetry.tsv (the watcher), the per-case throttle verdict, --retry-throttled, and what a
bench run records — with a fake NVML module behind a fake device backend."""
import json

import pytest

from backends import nvml
from backends.base import TelemetrySample
from backends.telemetry import ClockReading, TelemetryUnavailable
from conftest import FakeBackend
from fake_nvml import FakeNvml, h200
from harness.common import markers
from harness.corpus.chosen_rounds import choose_by_record
from harness.measure.measurement import Measurement
from harness.run.runner import run_op
from harness.telemetry import throttle, tsv, watch
from scripted import plan_for


class Source:
    name = "fake"

    def __init__(self, samples):
        self.samples = list(samples)
        self.closed = False
        self.reads = 0

    def read(self):
        self.reads += 1
        item = self.samples.pop(0) if len(self.samples) > 1 else self.samples[0]
        if isinstance(item, Exception):
            raise item
        return item

    def close(self):
        self.closed = True


class WatchedBackend(FakeBackend):
    """A device backend with a scripted telemetry source per logical index."""

    def __init__(self, sources=None, unavailable=None, nvml_module=None):
        super().__init__()
        self.sources = sources or {}
        self.unavailable = unavailable
        self.nvml_module = nvml_module
        self._devices = {}

    def physical_device(self, index, env=None):
        return f"GPU-{index}"

    def telemetry_source(self, index, env=None):
        if self.unavailable:
            raise TelemetryUnavailable(self.unavailable)
        return self.sources[index]

    def clock_reading(self, index):
        if self.nvml_module is None:
            return None
        if index not in self._devices:
            self._devices[index] = nvml.NvmlDevice(str(index), module=self.nvml_module)
        return self._devices[index].clock()


def sample(sm=1980.0, throttle=()):
    return TelemetrySample(0, sm, 3201.0, 41.0, 300.0, 95.0, throttle)


# ---- the watcher --------------------------------------------------------------------------
def test_watcher_writes_a_line_at_start_and_at_exit(tmp_path):
    source = Source([sample(1410.0, ("sw_power_cap",)), sample(1980.0)])
    with watch(tmp_path, WatchedBackend({0: source}), 0, interval_s=60) as watcher:
        pass
    points = tsv.read(tmp_path / tsv.FILE)
    assert (tmp_path / tsv.FILE).read_text().splitlines()[0].split("\t") == list(tsv.COLUMNS)
    assert [p.sm_clock_mhz for p in points] == [1410.0, 1980.0]
    assert points[0].slowdowns == ("sw_power_cap",) and points[1].throttle == ()
    assert points[0].physical == "GPU-0" and points[0].source == "fake"
    assert points[0].cost_us is not None and points[0].cost_us >= 0
    assert source.closed and not (tmp_path / tsv.ERROR_FILE).exists()
    summary = watcher.summary()
    assert summary["samples"] == 2 and summary["sm_clock_mhz"]["min"] == 1410.0
    assert summary["slowdown_samples"] == 1 and summary["slowdown_reasons"] == ["sw_power_cap"]


def test_watcher_samples_every_interval_and_several_devices_share_one_file(tmp_path):
    backend = WatchedBackend({0: Source([sample(1000.0)]), 2: Source([sample(2000.0)])})
    watcher = watch(tmp_path, backend, [0, 2], interval_s=0.01).start()
    # Wait for the reads, not for a time: a busy host can leave the watcher's thread without
    # the CPU for all of a fixed sleep. A watcher that stopped sampling never gets there.
    import time
    deadline = time.monotonic() + 30
    while backend.sources[2].reads < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    watcher.stop()
    points = tsv.read(tmp_path / tsv.FILE)
    assert {p.device for p in points} == {"0", "2"}
    assert sum(1 for p in points if p.device == "2") >= 4
    assert all(p.sm_clock_mhz == (2000.0 if p.device == "2" else 1000.0) for p in points)


def test_interval_zero_is_off(tmp_path):
    with watch(tmp_path / "w", WatchedBackend({0: Source([sample()])}), 0, 0.0) as watcher:
        pass
    assert not (tmp_path / "w").exists() and watcher.summary()["error"] == "off"


def test_unavailable_telemetry_writes_the_reason_and_nothing_else(tmp_path):
    backend = WatchedBackend(unavailable="pynvml not importable; nvidia-smi not found on PATH")
    with watch(tmp_path, backend, 0, interval_s=1) as watcher:
        pass
    assert not (tmp_path / tsv.FILE).exists()
    assert "device 0: telemetry unavailable: pynvml not importable" in \
        (tmp_path / tsv.ERROR_FILE).read_text()
    assert watcher.summary()["file"] is None


def test_a_failing_device_is_dropped_after_three_reads_and_the_work_goes_on(tmp_path):
    broken = Source([RuntimeError("NVML: GPU is lost")])
    watcher = watch(tmp_path, WatchedBackend({0: broken}), 0, interval_s=60).start()
    for _ in range(4):
        watcher.sample_once()
    watcher.stop()
    errors = (tmp_path / tsv.ERROR_FILE).read_text()
    assert errors.count("read failed: RuntimeError: NVML: GPU is lost") == 3
    assert "no longer sampled" in errors and watcher.sources == []


def test_tsv_marks_missing_values_and_unknown_reasons_as_na(tmp_path):
    path = tmp_path / tsv.FILE
    path.write_text(tsv.header() + tsv.line(1.0, 0, "0", TelemetrySample(0, None, 1.0, 2.0,
                                                                          None, 3.0, None),
                                            "nvidia-smi", 12.0) + "garbage\n")
    (point,) = tsv.read(path)
    assert point.sm_clock_mhz is None and point.power_w is None and point.throttle is None
    assert "\tNA\t" in path.read_text()


# ---- the throttle verdict -----------------------------------------------------------------
@pytest.mark.parametrize("readings, throttled, why", [
    ([ClockReading(1980, 1980), ClockReading(1965, 1980)], False, ""),
    ([ClockReading(1980, 1980, ("gpu_idle",))], False, ""),
    ([ClockReading(1980, 1980, ("sw_power_cap",))], True, "reasons sw_power_cap"),
    ([ClockReading(1980, 1980), ClockReading(1410, 1980)], True,
     "sm clock 1410 < 95% of 1980 MHz"),
    ([ClockReading(1400, None)], False, ""),
    ([], None, ""),
])
def test_throttle_verdict(readings, throttled, why):
    verdict = throttle.judge_readings(readings)
    assert verdict.throttled is throttled
    assert "; ".join(verdict.why) == why


def test_measurement_keeps_its_clock_readings():
    m = Measurement((1.0, 1.1), "graph", clocks=(ClockReading(1980, 1980),
                                                  ClockReading(1200, 1980, ("hw_slowdown",))))
    back = Measurement.from_dict(m.to_dict())
    assert back.clocks == m.clocks
    assert "clocks" not in Measurement((1.0,), "graph").to_dict()


# ---- a bench run with a fake NVML -----------------------------------------------------------
def run_with(tmp_path, fast_rule, fast_budget, fake, **changes):
    backend = WatchedBackend({0: Source([sample()])}, nvml_module=fake)
    plan = plan_for(["ok", "ok"], tmp_path, fast_rule, fast_budget, backend)
    plan.options = plan.options.replace(telemetry_interval=60.0, **changes)
    return run_op(plan, "op", echo=lambda _: None)


def test_cases_on_a_full_clock_are_not_throttled(tmp_path, fast_rule, fast_budget):
    result = run_with(tmp_path, fast_rule, fast_budget, FakeNvml([h200()]))
    assert [r.throttled for r in result.rows] == [False, False]
    row = json.loads((result.run_dir / "results.jsonl").read_text().splitlines()[0])
    assert row["throttled"] is False
    assert row["gems"]["clocks"][0] == {"sm_clock_mhz": 1980.0, "usual_sm_mhz": 1980.0,
                                        "throttle": []}
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["throttled_cases"] == 0
    assert info["telemetry"]["file"] == "telemetry.tsv" and info["telemetry"]["samples"] >= 2
    assert info["telemetry"]["before"]["physical"] == "GPU-0"


def test_a_power_capped_case_is_flagged_with_a_marker(tmp_path, fast_rule, fast_budget):
    result = run_with(tmp_path, fast_rule, fast_budget,
                      FakeNvml([h200(sm=1500, reasons=0x4)]))
    assert [r.throttled for r in result.rows] == [True, True]
    lines = [m for m in result.rows[0].markers if markers.marker_name(m) == markers.THROTTLED]
    assert len(lines) == 2                            # the baseline and the function under test
    name, fields = markers.parse_marker(lines[1])
    assert (fields["fn"], fields["sm_mhz"], fields["usual_mhz"], fields["reasons"],
            fields["action"]) == ("gems", "1500", "1980", "sw_power_cap", "kept")
    assert "BENCHMARK_CASE_THROTTLED" in (result.run_dir / "run.log").read_text()
    assert "True" in (result.run_dir / "results.csv").read_text().splitlines()[1]


def test_retry_throttled_measures_again_until_the_clock_recovers(tmp_path, fast_rule,
                                                                 fast_budget):
    fake = FakeNvml([h200(sm=1200)])
    real_clock = fake.nvmlDeviceGetClockInfo
    reads = {"n": 0}

    def recovering(h, which):           # slow for the first attempt of the first case only
        reads["n"] += which == fake.NVML_CLOCK_SM
        value = real_clock(h, which)
        return value if reads["n"] <= 4 or which != fake.NVML_CLOCK_SM else 1980
    fake.nvmlDeviceGetClockInfo = recovering
    result = run_with(tmp_path, fast_rule, fast_budget, fake, retry_throttled=2)
    first = result.rows[0]
    assert first.throttled is False
    attempts = [markers.parse_marker(m)[1] for m in first.markers
                if markers.marker_name(m) == markers.THROTTLED]
    assert {(a["attempt"], a["action"]) for a in attempts} == {("1", "retry")}
    assert result.rows[1].throttled is False


def test_retries_stop_after_n_and_keep_the_flag(tmp_path, fast_rule, fast_budget):
    result = run_with(tmp_path, fast_rule, fast_budget,
                      FakeNvml([h200(sm=1980, reasons=0x40)]), retry_throttled=1)
    attempts = [markers.parse_marker(m)[1] for m in result.rows[0].markers
                if markers.marker_name(m) == markers.THROTTLED and "fn=gems" in m]
    assert [(a["attempt"], a["action"]) for a in attempts] == [("1", "retry"), ("2", "kept")]
    assert result.rows[0].throttled is True and attempts[0]["reasons"] == "hw_thermal"


def test_no_clock_reading_leaves_the_flag_unknown(tmp_path, fast_rule, fast_budget):
    result = run_with(tmp_path, fast_rule, fast_budget, None)
    assert [r.throttled for r in result.rows] == [None, None]


@pytest.mark.parametrize("nvml, process", [
    (FakeNvml([h200(sm=1500, reasons=0x4)]), "turns-fresh"),     # sw_power_cap
    (FakeNvml([h200(sm=1980, reasons=0x40)]), "twins"),          # hw_thermal: not power
    (FakeNvml([h200(sm=1200)]), "twins"),                        # a clock still ramping up
    (None, "twins"),                                             # no clock readings
])
def test_round_process_auto_takes_turns_only_where_the_record_ran_at_the_power_limit(
        tmp_path, fast_rule, fast_budget, nvml, process):
    result = run_with(tmp_path, fast_rule, fast_budget, nvml)
    choice = choose_by_record(result.run_dir)
    assert choice["process"] == process
    assert len(choice["held_by_power"]) == (2 if process == "turns-fresh" else 0)
    assert ("2 of 2 case(s)" in choice["why"]) == (process == "turns-fresh")
