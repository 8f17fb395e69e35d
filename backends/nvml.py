"""NVIDIA telemetry through NVML (`pynvml`, from the nvidia-ml-py package — the `.[telemetry]`
extra). Imported lazily: without it the cuda backend falls back to nvidia-smi for the
continuous file and reads no per-case clocks.

Every NVML call goes through ctypes, which releases the GIL while the driver answers, and none
of them synchronises the device: a reading costs microseconds of host time.
"""
from __future__ import annotations

import importlib

from .base import TelemetrySample
from .telemetry import ClockReading, TelemetryUnavailable, reasons_from_mask

# nvmlClocksEventReason* / nvmlClocksThrottleReason* bits (nvml.h), as stable names.
REASON_BITS = ((0x1, "gpu_idle"), (0x2, "app_clock_setting"), (0x4, "sw_power_cap"),
               (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal"),
               (0x40, "hw_thermal"), (0x80, "hw_power_brake"), (0x100, "display_clock"))


def load(module=None):
    """pynvml, initialised; TelemetryUnavailable saying why not."""
    if module is None:
        try:
            module = importlib.import_module("pynvml")
        except ImportError as exc:
            raise TelemetryUnavailable(f"pynvml not importable ({exc}; pip install "
                                       f"nvidia-ml-py, the .[telemetry] extra)") from None
    try:
        module.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError and friends: a reason, not a crash
        raise TelemetryUnavailable(f"NVML init failed: {exc}") from None
    return module


class NvmlDevice:
    """One physical GPU through NVML; `selector` is an NVML index or a (prefix of a) UUID,
    as a CUDA visibility variable names it."""

    name = "nvml"

    def __init__(self, selector: str, module=None):
        self.nvml = load(module)
        self.selector = selector
        self.handle = self._handle(selector)
        self._usual: float | None | bool = False     # False: not asked yet

    def _handle(self, selector: str):
        nv = self.nvml
        try:
            if selector.isdigit():
                return nv.nvmlDeviceGetHandleByIndex(int(selector))
            try:
                return nv.nvmlDeviceGetHandleByUUID(selector)
            except Exception:  # noqa: BLE001 - CUDA also accepts a unique UUID prefix
                matches = [h for h in (nv.nvmlDeviceGetHandleByIndex(i)
                                       for i in range(nv.nvmlDeviceGetCount()))
                           if _text(nv.nvmlDeviceGetUUID(h)).startswith(selector)]
                if len(matches) == 1:
                    return matches[0]
                raise TelemetryUnavailable(f"NVML: {len(matches)} devices match {selector!r}")
        except TelemetryUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001
            raise TelemetryUnavailable(f"NVML has no device {selector!r}: {exc}") from None

    def _call(self, name: str, *args):
        """One NVML query; None when this device or driver does not answer it."""
        function = getattr(self.nvml, name, None)
        if function is None:
            return None
        try:
            return function(self.handle, *args)
        except Exception:  # noqa: BLE001 - NOT_SUPPORTED and the like: a missing value
            return None

    def reasons(self) -> tuple[str, ...] | None:
        for name in ("nvmlDeviceGetCurrentClocksEventReasons",
                     "nvmlDeviceGetCurrentClocksThrottleReasons"):
            mask = self._call(name)
            if mask is not None:
                return reasons_from_mask(mask, REASON_BITS)
        return None

    def usual_sm_mhz(self) -> float | None:
        """The applications (target) SM clock, else the maximum: what an unthrottled busy
        GPU runs at. Asked once."""
        if self._usual is False:
            clock = self.nvml.NVML_CLOCK_SM
            value = (self._call("nvmlDeviceGetApplicationsClock", clock)
                     or self._call("nvmlDeviceGetMaxClockInfo", clock))
            self._usual = float(value) if value else None
        return self._usual

    def clock(self) -> ClockReading:
        sm = self._call("nvmlDeviceGetClockInfo", self.nvml.NVML_CLOCK_SM)
        return ClockReading(float(sm) if sm is not None else None, self.usual_sm_mhz(),
                            self.reasons() or ())

    def read(self) -> TelemetrySample:
        nv = self.nvml
        sm = self._call("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM)
        mem = self._call("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM)
        temp = self._call("nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU)
        power_mw = self._call("nvmlDeviceGetPowerUsage")
        util = self._call("nvmlDeviceGetUtilizationRates")
        index = self._call("nvmlDeviceGetIndex")
        return TelemetrySample(
            index=int(index) if index is not None else -1,
            sm_clock_mhz=_num(sm), mem_clock_mhz=_num(mem), temp_c=_num(temp),
            power_w=power_mw / 1000.0 if power_mw is not None else None,
            util_pct=_num(getattr(util, "gpu", None)), throttle=self.reasons())

    def identity(self) -> dict:
        uuid, name = self._call("nvmlDeviceGetUUID"), self._call("nvmlDeviceGetName")
        driver = None
        try:
            driver = _text(self.nvml.nvmlSystemGetDriverVersion())
        except Exception:  # noqa: BLE001
            pass
        return {"uuid": _text(uuid) if uuid else None, "name": _text(name) if name else None,
                "driver": driver, "usual_sm_mhz": self.usual_sm_mhz()}

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _num(value) -> float | None:
    return float(value) if value is not None else None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
