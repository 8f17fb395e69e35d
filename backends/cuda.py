"""NVIDIA GPUs through torch.cuda."""
from __future__ import annotations

import csv
import io
import sys

from . import nvml, telemetry
from .base import Backend, TelemetrySample, parse_number

NVIDIA_SMI_QUERY = ("index", "clocks.sm", "clocks.mem", "temperature.gpu", "power.draw",
                    "utilization.gpu")
# The active clock event (throttle) reasons as a bit mask, NVML's bits; drivers that do not
# know the field make nvidia-smi fail, and the query without it is tried next.
NVIDIA_SMI_REASONS = "clocks_throttle_reasons.active"

# Errors after which the kernel's result is meaningless: the case fails.
CUDA_FATAL = (
    "illegal memory access",
    "cudaerrorillegaladdress",
    "an illegal instruction",
    "misaligned address",
    "device-side assert triggered",
    "out of memory",
    "unspecified launch failure",
    "uncorrectable ecc",
)
# Errors after which nothing this process measures can be trusted. The stuck generator
# ("offset increment outside graph capture") is what an aborted capture leaves behind when
# the default generator took part in it.
CUDA_POISONED = (
    "offset increment outside graph capture",
    "gpu has fallen off the bus",
    "context is destroyed",
)


class CudaBackend(Backend):
    def __init__(self):
        super().__init__(
            name="cuda",
            aliases=("nvidia", "nv"),
            torch_device_type="cuda",
            visibility_keys=("CUDA_VISIBLE_DEVICES",),
            supports_graph=True,
            supports_events=True,
            profiler_activity="CUDA",
            telemetry_command=("nvidia-smi", "--query-gpu=" + ",".join(NVIDIA_SMI_QUERY),
                               "--format=csv,noheader,nounits"),
            telemetry_tools=("nvml", "nvidia-smi"),
            fatal_patterns=CUDA_FATAL,
            poisoned_patterns=CUDA_POISONED,
        )

    def new_graph(self):
        return self.torch_module().CUDAGraph()

    def graph_capture(self, graph):
        return self.torch_module().graph(graph)

    def parse_telemetry(self, text: str) -> list[TelemetrySample]:
        return parse_smi_csv(text)

    # ---- pinned telemetry -------------------------------------------------------------------
    def device_selectors(self, index: int, env=None) -> list[str]:
        """Names of the physical GPU behind logical `index`, best first: its UUID from the
        runtime when this process already initialised CUDA (exact whatever CUDA_DEVICE_ORDER
        says), then the entry of CUDA_VISIBLE_DEVICES (an NVML index or UUID; NVML numbers
        GPUs in PCI bus order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID or one model)."""
        mapped = self.physical_device(index, env)
        uuid = _runtime_uuid(index) if env is None else None
        return [uuid, mapped] if uuid and uuid != mapped else [mapped]

    def telemetry_source(self, index: int, env=None):
        selectors = self.device_selectors(index, env)
        return telemetry.first_source(self.name, (
            *(lambda sel=sel: nvml.NvmlDevice(sel) for sel in selectors),
            lambda: telemetry.CommandSource(
                "nvidia-smi", smi_command(selectors[0], True), parse_smi_csv,
                telemetry.only_or_index(selectors[0]),
                fallbacks=[smi_command(selectors[0], False)])))

    def clock_reading(self, index: int):
        """SM clock and throttle reasons through NVML (cached per device; None without it)."""
        cache = self.__dict__.setdefault("_clock_devices", {})
        if index not in cache:
            cache[index] = None
            for selector in self.device_selectors(index):
                try:
                    cache[index] = nvml.NvmlDevice(selector)
                    break
                except telemetry.TelemetryUnavailable:
                    continue
        device = cache[index]
        return device.clock() if device is not None else None


def smi_command(selector: str, reasons: bool) -> list[str]:
    """nvidia-smi for one GPU (`-i` takes an index or a UUID)."""
    fields = NVIDIA_SMI_QUERY + ((NVIDIA_SMI_REASONS,) if reasons else ())
    return ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits",
            "-i", selector]


def _runtime_uuid(index: int) -> str | None:
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        return f"GPU-{uuid}" if uuid else None
    except Exception:  # noqa: BLE001 - no runtime answer: the visibility variable decides
        return None


def parse_smi_csv(text: str) -> list[TelemetrySample]:
    """Rows of `index, sm, mem, temp, power, util[, reasons mask]`, with or without units or
    a header; the mask (e.g. 0x0000000000000004) becomes reason names."""
    samples = []
    for row in csv.reader(io.StringIO(text)):
        cells = [c.strip() for c in row]
        if len(cells) < 6 or not cells[0].isdigit():
            continue  # header or blank line
        index, sm, mem, temp, power, util = cells[:6]
        samples.append(TelemetrySample(int(index), parse_number(sm), parse_number(mem),
                                       parse_number(temp), parse_number(power),
                                       parse_number(util),
                                       _reasons(cells[6]) if len(cells) > 6 else None))
    return samples


def _reasons(cell: str) -> tuple[str, ...] | None:
    try:
        return telemetry.reasons_from_mask(int(cell, 16), nvml.REASON_BITS)
    except ValueError:
        return None     # [N/A], [Not Supported]
