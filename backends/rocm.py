"""AMD GPUs through ROCm's torch build (which answers to `torch.cuda`)."""
from __future__ import annotations

import json

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
            telemetry_command=("rocm-smi", "--showuse", "--showtemp", "--showpower",
                               "--showclocks", "--json"),
            fatal_patterns=CUDA_FATAL + ("hipErrorIllegalAddress".lower(),
                                         "memory access fault"),
            poisoned_patterns=(),
        )

    def is_available(self) -> bool:
        import torch
        return bool(getattr(torch.version, "hip", None)) and super().is_available()

    def parse_telemetry(self, text: str) -> list[TelemetrySample]:
        return parse_rocm_smi_json(text)


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
