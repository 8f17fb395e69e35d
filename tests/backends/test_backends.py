import pytest

import backends
from backends import FATAL, POISONED, RECOVERABLE, get_backend
from backends.base import strip_generic_footers
from backends.cuda import parse_smi_csv
from backends.musa import parse_gmi_json
from backends.rocm import parse_rocm_smi_json


def test_registry_names_and_aliases():
    assert set(backends.backend_names()) == {"cuda", "musa", "rocm", "ascend", "cpu"}
    assert get_backend("nvidia").name == "cuda"
    assert get_backend("AMD").name == "rocm"
    assert get_backend("hip").name == "rocm"
    assert get_backend("npu").name == "ascend"
    assert get_backend("mthreads").name == "musa"


def test_unknown_backend_lists_known_ones():
    with pytest.raises(backends.UnknownBackend) as info:
        get_backend("tpu")
    message = str(info.value)
    assert "'tpu'" in message
    for name in ("cuda", "musa", "rocm", "ascend", "cpu", "nvidia", "hip"):
        assert name in message


def test_the_flaggems_adapter_names_a_vendor_for_every_device_backend():
    from adapters.flaggems import VENDORS
    assert VENDORS == {"cuda": "nvidia", "musa": "mthreads", "rocm": "amd", "ascend": "ascend"}
    assert set(VENDORS) == set(backends.backend_names()) - {"cpu"}


def test_enumeration_prefers_explicit_then_env():
    cuda = get_backend("cuda")
    env = {"CUDA_VISIBLE_DEVICES": "3,5"}
    assert cuda.enumerate_devices([2], env) == [2]
    assert cuda.enumerate_devices(None, env) == [0, 1]
    rocm = get_backend("rocm")
    assert rocm.enumerate_devices(None, {"ROCR_VISIBLE_DEVICES": "1"}) == [0]


def test_child_env_keeps_only_active_vendor_keys():
    base = {"CUDA_VISIBLE_DEVICES": "0", "MUSA_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "2",
            "ROCR_VISIBLE_DEVICES": "2", "ASCEND_RT_VISIBLE_DEVICES": "3", "PATH": "/bin"}
    env = backends.child_env(get_backend("musa"), base, devices=[7])
    assert env["MUSA_VISIBLE_DEVICES"] == "7"
    for key in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                "ASCEND_RT_VISIBLE_DEVICES"):
        assert key not in env
    assert env["PATH"] == "/bin"
    cuda_env = backends.child_env(get_backend("cuda"), base)
    assert cuda_env["CUDA_VISIBLE_DEVICES"] == "0" and "MUSA_VISIBLE_DEVICES" not in cuda_env


FOOTER = "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"


@pytest.mark.parametrize("text, expected", [
    ("CUDA error: operation not permitted when stream is capturing" + FOOTER, RECOVERABLE),
    ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture." + FOOTER,
     RECOVERABLE),
    ("CUDA error: an illegal memory access was encountered" + FOOTER, FATAL),
    ("CUDA error: device-side assert triggered" + FOOTER, FATAL),
    ("CUDA out of memory. Tried to allocate 2.00 GiB", FATAL),
    ("CUDA error: misaligned address", FATAL),
    ("Offset increment outside graph capture encountered unexpectedly.", POISONED),
])
def test_cuda_classification(text, expected):
    assert get_backend("cuda").classify_error(RuntimeError(text)) == expected


def test_generic_footer_never_makes_an_error_fatal():
    # The footer names device-side assertions; only a *triggered* assert is fatal.
    assert "device-side" not in strip_generic_footers(FOOTER).lower()
    assert get_backend("cuda").classify_error("RuntimeError: capture failed" + FOOTER) == RECOVERABLE


def test_musa_classification():
    musa = get_backend("musa")
    assert musa.classify_error("RuntimeError: MUSA error: unknown error") == POISONED
    assert musa.classify_error("RuntimeError: MUSA error: an illegal memory access was "
                               "encountered") == FATAL
    assert musa.classify_error("Cannot call MUSAGeneratorImpl::current_seed during MUSA graph "
                               "capture") == RECOVERABLE
    assert "unique2" in musa.capture_deny


def test_nvidia_smi_real_output_both_formats(fixture_text):
    for name in ("nvidia-smi-h200-nounits.csv", "nvidia-smi-h200-units.csv"):
        samples = parse_smi_csv(fixture_text(name))
        assert len(samples) == 1, name
        s = samples[0]
        assert (s.index, s.sm_clock_mhz, s.mem_clock_mhz, s.temp_c) == (0, 405.0, 3201.0, 34.0)
        assert 100 < s.power_w < 130 and s.util_pct == 0.0


def test_nvidia_smi_not_available_fields():
    s = parse_smi_csv("1, [N/A], 1593, 40, [Not Supported], 7\n")[0]
    assert s.index == 1 and s.sm_clock_mhz is None and s.power_w is None and s.util_pct == 7


def test_mthreads_gmi_glued_units_and_trailing_space_keys(fixture_text):
    samples = parse_gmi_json("Some banner\n" + fixture_text("mthreads-gmi-s5000.json"))
    assert [s.to_dict() for s in samples] == [{
        "index": 7, "sm_clock_mhz": 1888.0, "mem_clock_mhz": 2500.0, "temp_c": 36.0,
        "power_w": 477.68, "util_pct": 87.0, "throttle": None}]


def test_mthreads_gmi_single_gpu_as_dict():
    text = ('{"GPU": {"Index": "0", "Temperature": {"GPU Current Temp": "40C"}, '
            '"Clocks": {"Graphics": "1000MHz", "Memory": "2000MHz"}, '
            '"Power Readings": {"Power Draw ": "100W"}, "Utilization": {"Gpu": "5%"}}}')
    (s,) = parse_gmi_json(text)
    assert (s.index, s.temp_c, s.power_w, s.util_pct) == (0, 40.0, 100.0, 5.0)


def test_rocm_smi_json_keys():
    # Key names as rocm-smi --json prints them (constructed sample, not a captured one).
    text = ('{"card0": {"Temperature (Sensor edge) (C)": "35.0", '
            '"Average Graphics Package Power (W)": "91.0", "sclk clock speed:": "(1700Mhz)", '
            '"mclk clock speed:": "(1600Mhz)", "GPU use (%)": "12"}, "system": {}}')
    (s,) = parse_rocm_smi_json(text)
    assert s.to_dict() == {"index": 0, "sm_clock_mhz": 1700.0, "mem_clock_mhz": 1600.0,
                           "temp_c": 35.0, "power_w": 91.0, "util_pct": 12.0,
                           "throttle": None}


def test_cpu_backend_is_always_available_and_interprets():
    cpu = get_backend("cpu")
    assert cpu.is_available() and not cpu.supports_graph
    assert cpu.enumerate_devices() == [0]
    assert cpu.identity(0).arch
