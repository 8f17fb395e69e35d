"""NVIDIA GPUs through torch.cuda."""
from __future__ import annotations

import csv
import io

from .base import Backend, TelemetrySample, parse_number

NVIDIA_SMI_QUERY = ("index", "clocks.sm", "clocks.mem", "temperature.gpu", "power.draw",
                    "utilization.gpu")

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
            aliases=("nvidia",),
            torch_device_type="cuda",
            visibility_keys=("CUDA_VISIBLE_DEVICES",),
            supports_graph=True,
            supports_events=True,
            telemetry_command=("nvidia-smi", "--query-gpu=" + ",".join(NVIDIA_SMI_QUERY),
                               "--format=csv,noheader,nounits"),
            fatal_patterns=CUDA_FATAL,
            poisoned_patterns=CUDA_POISONED,
        )

    def new_graph(self):
        return self.torch_module().CUDAGraph()

    def graph_capture(self, graph):
        return self.torch_module().graph(graph)

    def parse_telemetry(self, text: str) -> list[TelemetrySample]:
        return parse_smi_csv(text)


def parse_smi_csv(text: str) -> list[TelemetrySample]:
    """Rows of `index, sm, mem, temp, power, util`, with or without units or a header."""
    samples = []
    for row in csv.reader(io.StringIO(text)):
        cells = [c.strip() for c in row]
        if len(cells) < 6 or not cells[0].isdigit():
            continue  # header or blank line
        index, sm, mem, temp, power, util = cells[:6]
        samples.append(TelemetrySample(int(index), parse_number(sm), parse_number(mem),
                                       parse_number(temp), parse_number(power),
                                       parse_number(util)))
    return samples
