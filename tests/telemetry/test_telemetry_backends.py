"""Pinned telemetry in backends/: visibility mapping, command building and parsing per vendor
(fake tools on PATH print fixture output), NVML and amdsmi through fake modules."""
import os
import stat
from types import SimpleNamespace

import pytest

from backends import get_backend, nvml
from backends.cuda import parse_smi_csv, smi_command
from backends.rocm import AmdSmiDevice
from backends.telemetry import ClockReading, TelemetryUnavailable, visible_list
from fake_nvml import FakeNvml, h200


# ---- pinning: logical index -> physical device --------------------------------------------
@pytest.mark.parametrize("env, index, expected", [
    ({}, 0, "0"),
    ({}, 3, "3"),
    ({"CUDA_VISIBLE_DEVICES": "5,7"}, 1, "7"),
    ({"CUDA_VISIBLE_DEVICES": "GPU-8f2a77c1-1111,1"}, 0, "GPU-8f2a77c1-1111"),
    ({"CUDA_VISIBLE_DEVICES": "GPU-8f2a77c1-1111,1"}, 1, "1"),
    ({"CUDA_VISIBLE_DEVICES": " 2 , 3 "}, 1, "3"),
])
def test_cuda_logical_index_maps_through_the_visibility_variable(env, index, expected):
    assert get_backend("cuda").physical_device(index, env) == expected


def test_a_negative_entry_ends_the_visible_list_and_hidden_devices_are_refused():
    assert visible_list("0,-1,2") == ["0"]
    assert visible_list("  ") is None
    with pytest.raises(TelemetryUnavailable, match="logical device 1 is not visible"):
        get_backend("cuda").physical_device(1, {"CUDA_VISIBLE_DEVICES": "0,-1,2"})


def test_rocm_hip_indexes_into_what_rocr_left_and_musa_reads_either_key():
    rocm = get_backend("rocm")
    both = {"ROCR_VISIBLE_DEVICES": "2,3", "HIP_VISIBLE_DEVICES": "1"}
    assert rocm.physical_device(0, both) == "3"
    assert rocm.physical_device(1, {"HIP_VISIBLE_DEVICES": "4,6"}) == "6"
    assert rocm.physical_device(0, {"ROCR_VISIBLE_DEVICES": "GPU-abc"}) == "GPU-abc"
    musa = get_backend("musa")
    assert musa.physical_device(0, {"MTHREADS_VISIBLE_DEVICES": "7"}) == "7"
    both = {"MUSA_VISIBLE_DEVICES": "3", "MTHREADS_VISIBLE_DEVICES": "7"}
    assert musa.physical_device(0, both) == "3"


# ---- vendor tools: command building and parsing ---------------------------------------------
@pytest.fixture
def fake_tool(tmp_path, monkeypatch):
    """fake_tool(name, stdout, fail_if=None): an executable on PATH that records its arguments
    (one line per call in <name>.args) and prints `stdout`; with `fail_if`, an argument list
    containing that text makes it fail like nvidia-smi does on an unknown field."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    def make(name, stdout, fail_if=None):
        out = tmp_path / f"{name}.out"
        out.write_text(stdout)
        log = tmp_path / f"{name}.args"
        fail = (f'case "$*" in *{fail_if}*) echo "Field \\"{fail_if}\\" is not a valid field '
                f'to query."; exit 2;; esac\n') if fail_if else ""
        script = bindir / name
        script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n{fail}cat "{out}"\n')
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        return log
    return make


@pytest.fixture
def no_nvml(monkeypatch):
    def unavailable(module=None):
        raise TelemetryUnavailable("pynvml not importable (test)")
    monkeypatch.setattr(nvml, "load", unavailable)


def test_nvidia_smi_is_pinned_with_dash_i_and_reads_the_reason_mask(fake_tool, no_nvml):
    log = fake_tool("nvidia-smi", "3, 1410, 3201, 81, 699.10, 100, 0x0000000000000024\n")
    source = get_backend("cuda").telemetry_source(0, {"CUDA_VISIBLE_DEVICES": "GPU-abc,3"})
    sample = source.read()
    assert log.read_text().split()[-2:] == ["-i", "GPU-abc"]
    assert "clocks_throttle_reasons.active" in log.read_text()
    assert (sample.index, sample.sm_clock_mhz, sample.power_w) == (3, 1410.0, 699.1)
    assert sample.throttle == ("sw_power_cap", "sw_thermal")


def test_nvidia_smi_without_the_reason_field_falls_back_and_reports_reasons_unknown(
        fake_tool, no_nvml):
    log = fake_tool("nvidia-smi", "1, 1980, 3201, 40, 120.5, 0\n",
                    fail_if="clocks_throttle_reasons")
    source = get_backend("cuda").telemetry_source(1, {})
    sample = source.read()
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and "clocks_throttle_reasons" not in calls[1]
    assert calls[1].split()[-2:] == ["-i", "1"]
    assert sample.sm_clock_mhz == 1980.0 and sample.throttle is None
    source.read()                      # the working query is remembered: one call more
    assert len(log.read_text().splitlines()) == 3


def test_smi_command_and_csv_with_reasons():
    assert smi_command("2", False)[-2:] == ["-i", "2"]
    assert smi_command("2", True)[1].endswith(",clocks_throttle_reasons.active")
    (s,) = parse_smi_csv("0, 1980, 3201, 35, 118.2, 0, 0x0000000000000001\n")
    assert s.throttle == ("gpu_idle",)
    (s,) = parse_smi_csv("0, 1980, 3201, 35, 118.2, 0, [N/A]\n")
    assert s.throttle is None


def test_cuda_without_nvml_or_nvidia_smi_says_both_reasons(monkeypatch, tmp_path, no_nvml):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TelemetryUnavailable) as info:
        get_backend("cuda").telemetry_source(0, {})
    assert "pynvml not importable" in str(info.value)
    assert "nvidia-smi not found on PATH" in str(info.value)


def test_mthreads_gmi_keeps_only_the_pinned_index(fake_tool, fixture_text):
    body = fixture_text("mthreads-gmi-s5000.json")
    fake_tool("mthreads-gmi", body)
    sample = get_backend("musa").telemetry_source(0, {"MUSA_VISIBLE_DEVICES": "7"}).read()
    assert (sample.index, sample.sm_clock_mhz, sample.power_w) == (7, 1888.0, 477.68)
    with pytest.raises(TelemetryUnavailable, match="no row for the device"):
        get_backend("musa").telemetry_source(0, {"MUSA_VISIBLE_DEVICES": "2"}).read()
    with pytest.raises(TelemetryUnavailable, match="cannot pin"):
        get_backend("musa").telemetry_source(0, {"MUSA_VISIBLE_DEVICES": "GPU-x"})


def test_rocm_smi_asks_for_one_card(fake_tool, monkeypatch):
    def no_amdsmi(self, index, module=None):
        raise TelemetryUnavailable("amdsmi not importable (test)")
    monkeypatch.setattr(AmdSmiDevice, "__init__", no_amdsmi)
    log = fake_tool("rocm-smi", '{"card1": {"sclk clock speed:": "(1700Mhz)", '
                                '"mclk clock speed:": "(1600Mhz)", "GPU use (%)": "12"}}')
    sample = get_backend("rocm").telemetry_source(0, {"HIP_VISIBLE_DEVICES": "1"}).read()
    assert log.read_text().split()[-2:] == ["-d", "1"]
    assert (sample.index, sample.sm_clock_mhz, sample.util_pct) == (1, 1700.0, 12.0)


def test_ascend_and_cpu_are_unavailable_with_a_reason():
    with pytest.raises(TelemetryUnavailable, match="npu-smi"):
        get_backend("ascend").telemetry_source(0, {})
    with pytest.raises(TelemetryUnavailable, match="backend cpu"):
        get_backend("cpu").telemetry_source(0, {})
    assert get_backend("cpu").clock_reading(0) is None


# ---- NVML and amdsmi through fake modules ---------------------------------------------------
def test_nvml_pins_by_index_uuid_and_uuid_prefix():
    fake = FakeNvml([h200("GPU-aaaa-1"), h200("GPU-bbbb-2", sm=1500)])
    assert nvml.NvmlDevice("1", module=fake).read().sm_clock_mhz == 1500.0
    assert nvml.NvmlDevice("GPU-bbbb-2", module=fake).handle == 1
    assert nvml.NvmlDevice("GPU-bbbb", module=fake).handle == 1     # CUDA takes a prefix
    with pytest.raises(TelemetryUnavailable, match="2 devices match"):
        nvml.NvmlDevice("GPU-", module=fake)
    with pytest.raises(TelemetryUnavailable, match="no device '5'"):
        nvml.NvmlDevice("5", module=fake)


def test_nvml_sample_is_normalised():
    fake = FakeNvml([h200(reasons=0x4 | 0x40 | 0x1)])
    s = nvml.NvmlDevice("0", module=fake).read()
    assert s.to_dict() == {"index": 0, "sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0,
                           "temp_c": 40.0, "power_w": 350.5, "util_pct": 97.0,
                           "throttle": ["gpu_idle", "sw_power_cap", "hw_thermal"]}


def test_nvml_clock_reading_uses_the_application_clock_else_the_maximum():
    fake = FakeNvml([h200(sm=1410, app_sm=1755), h200(uuid="GPU-2", app_sm=None)])
    reading = nvml.NvmlDevice("0", module=fake).clock()
    assert reading == ClockReading(1410.0, 1755.0, ())
    assert nvml.NvmlDevice("1", module=fake).clock().usual_sm_mhz == 1980.0
    assert ClockReading.from_dict(reading.to_dict()) == reading


def test_nvml_missing_module_is_a_reason_not_a_crash(monkeypatch):
    import importlib
    real = importlib.import_module

    def no_pynvml(name, *args):
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real(name, *args)
    monkeypatch.setattr(importlib, "import_module", no_pynvml)
    with pytest.raises(TelemetryUnavailable, match="nvidia-ml-py"):
        nvml.load()


def test_amdsmi_sample_is_normalised():
    fake = SimpleNamespace(
        AmdSmiClkType=SimpleNamespace(GFX="gfx", MEM="mem"),
        AmdSmiTemperatureType=SimpleNamespace(EDGE="edge"),
        AmdSmiTemperatureMetric=SimpleNamespace(CURRENT="cur"),
        amdsmi_init=lambda: None, amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: ["h0", "h1"],
        amdsmi_get_clock_info=lambda h, kind: {"clk": 2100 if kind == "gfx" else 1300},
        amdsmi_get_temp_metric=lambda h, kind, metric: 55,
        amdsmi_get_power_info=lambda h: {"average_socket_power": 480},
        amdsmi_get_gpu_activity=lambda h: {"gfx_activity": 99})
    s = AmdSmiDevice(1, module=fake).read()
    assert s.to_dict() == {"index": 1, "sm_clock_mhz": 2100.0, "mem_clock_mhz": 1300.0,
                           "temp_c": 55.0, "power_w": 480.0, "util_pct": 99.0, "throttle": None}
    with pytest.raises(TelemetryUnavailable, match="sees 2 device"):
        AmdSmiDevice(2, module=fake)


def test_cuda_clock_reading_is_none_without_nvml(no_nvml):
    cuda = get_backend("cuda")
    cuda.__dict__.pop("_clock_devices", None)
    try:
        assert cuda.clock_reading(0) is None
    finally:
        cuda.__dict__.pop("_clock_devices", None)


def test_cuda_pins_to_the_runtime_uuid_and_falls_back_to_the_visibility_entry(monkeypatch):
    import backends.cuda as cuda_module
    fake = FakeNvml([h200("GPU-aaaa"), h200("GPU-bbbb", sm=1500)])
    monkeypatch.setattr(nvml, "load", lambda module=None: fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    cuda = get_backend("cuda")
    for uuid, expected in (("GPU-zzzz", 1500.0), ("GPU-aaaa", 1980.0)):
        monkeypatch.setattr(cuda_module, "_runtime_uuid", lambda index, uuid=uuid: uuid)
        cuda.__dict__.pop("_clock_devices", None)
        assert cuda.device_selectors(0) == [uuid, "1"]
        assert cuda.clock_reading(0).sm_clock_mhz == expected
        assert cuda.telemetry_source(0).read().sm_clock_mhz == expected
    cuda.__dict__.pop("_clock_devices", None)
    assert cuda.device_selectors(0, {"CUDA_VISIBLE_DEVICES": "1"}) == ["1"]   # another env
