"""AMD GPUs through ROCm's torch build (which answers to `torch.cuda`)."""
from __future__ import annotations

import importlib
import json
import os

from . import telemetry
from .base import Backend, TelemetrySample, parse_number
from .cuda import CUDA_FATAL


class RocmBackend(Backend):
    def __init__(self):
        super().__init__(
            name="rocm",
            aliases=("amd", "hip"),
            torch_device_type="cuda",
            visibility_keys=("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"),
            supports_graph=False,   # not validated on ROCm yet: event timing only
            supports_events=True,
            profiler_activity="CUDA",   # torch's profiler records HIP kernels under it too
            telemetry_command=("rocm-smi", "--showuse", "--showtemp", "--showpower",
                               "--showclocks", "--json"),
            telemetry_tools=("amdsmi", "rocm-smi"),
            fatal_patterns=CUDA_FATAL + ("hipErrorIllegalAddress".lower(),
                                         "memory access fault"),
            poisoned_patterns=(),
        )

    def is_available(self) -> bool:
        import torch  # heavy: imported only where used
        return bool(getattr(torch.version, "hip", None)) and super().is_available()

    def parse_telemetry(self, text: str) -> list[TelemetrySample]:
        return parse_rocm_smi_json(text)

    def physical_device(self, index: int, env=None) -> str:
        """ROCR_VISIBLE_DEVICES selects first, HIP_VISIBLE_DEVICES indexes into what it left."""
        env = os.environ if env is None else env
        rocr = telemetry.visible_list(env.get("ROCR_VISIBLE_DEVICES"))
        hip = telemetry.visible_list(env.get("HIP_VISIBLE_DEVICES"))
        if hip is not None:
            index_text = telemetry.map_through(hip, index, "HIP_VISIBLE_DEVICES")
            if rocr is None or not index_text.isdigit():
                return index_text
            index = int(index_text)
        return telemetry.map_through(rocr, index, "ROCR_VISIBLE_DEVICES")

    def telemetry_source(self, index: int, env=None):
        """amdsmi (in-process library) where it imports, else `rocm-smi -d N`."""
        selector = self.physical_device(index, env)
        if not selector.isdigit():
            raise telemetry.TelemetryUnavailable(f"backend rocm: cannot pin device {selector!r} "
                                                 f"(index expected)")
        return telemetry.first_source(self.name, (
            lambda: AmdSmiDevice(int(selector)),
            lambda: telemetry.CommandSource(
                "rocm-smi", [*self.telemetry_command, "-d", selector], parse_rocm_smi_json,
                telemetry.only_or_index(selector))))


class AmdSmiDevice:
    """One AMD GPU through the amdsmi library (imported lazily). Throttle reasons: None."""

    name = "amdsmi"

    def __init__(self, index: int, module=None):
        if module is None:
            try:
                module = importlib.import_module("amdsmi")
            except ImportError as exc:
                raise telemetry.TelemetryUnavailable(f"amdsmi not importable ({exc})") from None
        try:
            module.amdsmi_init()
            handles = module.amdsmi_get_processor_handles()
        except Exception as exc:  # noqa: BLE001
            raise telemetry.TelemetryUnavailable(f"amdsmi init failed: {exc}") from None
        if index >= len(handles):
            raise telemetry.TelemetryUnavailable(f"amdsmi sees {len(handles)} device(s), "
                                                 f"not device {index}")
        self.smi, self.index, self.handle = module, index, handles[index]

    def _ask(self, name: str, *args):
        try:
            return getattr(self.smi, name)(self.handle, *args)
        except Exception:  # noqa: BLE001 - an unsupported query is a missing value
            return None

    def read(self) -> TelemetrySample:
        smi = self.smi
        gfx = self._ask("amdsmi_get_clock_info", smi.AmdSmiClkType.GFX) or {}
        mem = self._ask("amdsmi_get_clock_info", smi.AmdSmiClkType.MEM) or {}
        temp = self._ask("amdsmi_get_temp_metric", smi.AmdSmiTemperatureType.EDGE,
                         smi.AmdSmiTemperatureMetric.CURRENT)
        power = self._ask("amdsmi_get_power_info") or {}
        activity = self._ask("amdsmi_get_gpu_activity") or {}
        watts = next((power[k] for k in ("current_socket_power", "average_socket_power",
                                         "socket_power") if parse_number(power.get(k))), None)
        return TelemetrySample(self.index, parse_number(gfx.get("clk")),
                               parse_number(mem.get("clk")), parse_number(temp),
                               parse_number(watts), parse_number(activity.get("gfx_activity")))

    def close(self) -> None:
        try:
            self.smi.amdsmi_shut_down()
        except Exception:  # noqa: BLE001
            pass


def _find(entry: dict, *needles: str):
    for key, value in entry.items():
        low = key.lower()
        if all(n in low for n in needles):
            return value
    return None


def parse_rocm_smi_json(text: str) -> list[TelemetrySample]:
    """`rocm-smi ... --json`: {"card0": {"sclk clock speed:": "(1700Mhz)", ...}}."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in rocm-smi output")
    data = json.loads(text[start:])
    samples = []
    for card, entry in sorted(data.items()):
        if not card.lower().startswith("card"):
            continue
        samples.append(TelemetrySample(
            index=int(parse_number(card)),
            sm_clock_mhz=parse_number(_find(entry, "sclk")),
            mem_clock_mhz=parse_number(_find(entry, "mclk")),
            temp_c=parse_number(_find(entry, "temperature", "edge") or _find(entry, "temperature")),
            power_w=parse_number(_find(entry, "power", "(w)")),
            util_pct=parse_number(_find(entry, "gpu use")),
        ))
    return samples
