"""Moore Threads GPUs through torch_musa (`torch.musa`)."""
from __future__ import annotations

import json

from . import telemetry
from .base import Backend, TelemetrySample, parse_number
from .skip_guards import MUSA_SKIP_GUARDS

MUSA_FATAL = (
    "musa error: an illegal memory access",
    "out of memory",
    "device-side assert triggered",
    "misaligned address",
    "uncorrectable ecc",
)
MUSA_POISONED = ("musa error: unknown error",)


class MusaBackend(Backend):
    def __init__(self):
        super().__init__(
            name="musa",
            aliases=("mthreads",),
            torch_device_type="musa",
            visibility_keys=("MUSA_VISIBLE_DEVICES", "MTHREADS_VISIBLE_DEVICES"),
            supports_graph=True,
            supports_events=True,
            telemetry_command=("mthreads-gmi", "-q", "-d", "TEMPERATURE,CLOCK,POWER,UTILIZATION",
                               "--json"),
            # unique2 turns the context unusable after two recoverable capture failures.
            capture_deny=frozenset({"unique2"}),
            fatal_patterns=MUSA_FATAL,
            poisoned_patterns=MUSA_POISONED,
            skip_guards=MUSA_SKIP_GUARDS,
        )

    def activate(self, device_index: int) -> None:
        import torch_musa  # noqa: F401 - registers torch.musa
        super().activate(device_index)

    def new_graph(self):
        return self.torch_module().MUSAGraph()

    def graph_capture(self, graph):
        return self.torch_module().graph(graph)

    def parse_telemetry(self, text: str) -> list[TelemetrySample]:
        return parse_gmi_json(text)

    def telemetry_source(self, index: int, env=None):
        """mthreads-gmi prints every GPU with its index; the pinned one is kept. Throttle
        reasons are not reported (None)."""
        selector = self.physical_device(index, env)
        if not selector.isdigit():
            raise telemetry.TelemetryUnavailable(
                f"backend musa: cannot pin device {selector!r} (mthreads-gmi rows carry an "
                f"index only)")
        return telemetry.first_source(self.name, (
            lambda: telemetry.CommandSource("mthreads-gmi", self.telemetry_command,
                                            parse_gmi_json, telemetry.by_index(selector)),))


def _strip_keys(value):
    """mthreads-gmi keys may carry trailing spaces ("Power Draw ")."""
    if isinstance(value, dict):
        return {str(k).strip(): _strip_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_keys(v) for v in value]
    return value


def parse_gmi_json(text: str) -> list[TelemetrySample]:
    """`mthreads-gmi -q ... --json`: values carry glued units ("1888MHz", "36C", "477.68W")."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in mthreads-gmi output")
    data = _strip_keys(json.loads(text[start:]))
    gpus = data.get("GPU", [])
    if isinstance(gpus, dict):
        gpus = [gpus]
    samples = []
    for position, gpu in enumerate(gpus):
        clocks = gpu.get("Clocks", {})
        samples.append(TelemetrySample(
            index=int(parse_number(gpu.get("Index", position))),
            sm_clock_mhz=parse_number(clocks.get("Graphics")),
            mem_clock_mhz=parse_number(clocks.get("Memory")),
            temp_c=parse_number(gpu.get("Temperature", {}).get("GPU Current Temp")),
            power_w=parse_number(gpu.get("Power Readings", {}).get("Power Draw")),
            util_pct=parse_number(gpu.get("Utilization", {}).get("Gpu")),
        ))
    return samples
