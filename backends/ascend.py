"""Huawei Ascend NPUs through torch_npu (`torch.npu`)."""
from __future__ import annotations

from . import telemetry
from .base import Backend

ASCEND_FATAL = (
    "out of memory",
    "aicore exception",
    "illegal memory access",
    "device-side assert triggered",
)


class AscendBackend(Backend):
    def __init__(self):
        super().__init__(
            name="ascend",
            aliases=("npu", "huawei"),
            torch_device_type="npu",
            visibility_keys=("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"),
            supports_graph=False,   # event timing only
            supports_events=True,
            telemetry_command=(),   # npu-smi has no machine-readable query: no telemetry
            fatal_patterns=ASCEND_FATAL,
        )

    def activate(self, device_index: int) -> None:
        import torch_npu  # noqa: F401 - registers torch.npu
        super().activate(device_index)

    def telemetry_source(self, index: int, env=None):
        raise telemetry.TelemetryUnavailable("backend ascend: npu-smi has no machine-readable "
                                             "query; no telemetry")
