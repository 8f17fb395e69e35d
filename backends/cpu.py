"""The host CPU: Triton kernels run through Triton's interpreter, timed with the host clock."""
from __future__ import annotations

import logging
import os
import platform
import time

from . import telemetry
from .base import Backend, DeviceIdentity

MEMINFO = "/proc/meminfo"     # the host's memory figures (memory_free: MemAvailable)


class CpuBackend(Backend):
    def __init__(self):
        super().__init__(
            name="cpu",
            aliases=("host",),
            torch_device_type="cpu",
            visibility_keys=(),
            supports_graph=False,
            supports_events=False,
            extra_env={"TRITON_INTERPRET": "1"},
        )

    def is_available(self) -> bool:
        return True

    def enumerate_devices(self, explicit=None, env=None) -> list[int]:
        return [int(i) for i in explicit] if explicit else [0]

    def identity(self, index: int) -> DeviceIdentity:
        return DeviceIdentity(index, _cpu_model(), platform.machine() or "unknown", str(index))

    def forced_env(self):
        return dict(self.extra_env)      # activate_env sets it, whatever the environment says

    def activate_env(self) -> None:
        # Triton reads TRITON_INTERPRET when a kernel is decorated, so this must run before
        # any adapter imports its kernels. Another value in the environment is said once,
        # not replaced silently (an A/B side giving one is refused: ab/preflight.py).
        given = os.environ.get("TRITON_INTERPRET")
        if given is not None and given.strip() != "1":
            logging.getLogger("zlh").warning(
                f"WARNING TRITON_INTERPRET={given} ignored: backend cpu runs Triton through "
                f"its interpreter (TRITON_INTERPRET=1)")
        os.environ["TRITON_INTERPRET"] = "1"

    def activate(self, device_index: int) -> None:
        self.activate_env()

    def synchronize(self) -> None:
        return None

    def telemetry_source(self, index: int, env=None):
        raise telemetry.TelemetryUnavailable("backend cpu: no device telemetry (the host "
                                             "clock times the interpreter)")

    # The host spins instead of a device: one "cycle" is one nanosecond.
    def has_spin(self) -> bool:
        return True

    def spin(self, cycles: int) -> None:
        end = time.perf_counter_ns() + int(cycles)
        while time.perf_counter_ns() < end:
            pass

    def spin_cycles_per_ms(self, index: int, probe_ms: float = 1.0) -> float:
        return 1e6

    def l2_cache_bytes(self, index: int) -> int | None:
        return None

    def rng_usable(self, index: int):
        return None

    def device_usable(self):
        return None

    def empty_cache(self) -> None:
        return None

    def memory_held(self) -> int | None:
        return None

    def memory_free(self, index: int) -> int | None:
        """The host's available memory (/proc/meminfo MemAvailable), or None elsewhere."""
        try:
            with open(MEMINFO, encoding="ascii") as handle:
                for line in handle:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"
