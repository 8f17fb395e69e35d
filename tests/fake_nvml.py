"""A scriptable stand-in for the `pynvml` module (nvidia-ml-py): the calls zlh makes, with the
values a test sets per device. Values follow NVML's units (power in mW, clocks in MHz)."""
from __future__ import annotations

from types import SimpleNamespace

NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
NVML_TEMPERATURE_GPU = 0


class NVMLError(Exception):
    pass


class FakeNvml:
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVMLError = NVMLError

    def __init__(self, devices):
        """devices: list of dicts with uuid, sm, mem, temp, power_mw, util, reasons (bit mask),
        app_sm (applications clock; None: NOT_SUPPORTED), max_sm."""
        self.devices = devices
        self.inits = 0
        self.calls: list[str] = []

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.inits -= 1

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index):
        if index >= len(self.devices):
            raise NVMLError("Invalid Argument")
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        for i, d in enumerate(self.devices):
            if d["uuid"] == uuid:
                return i
        raise NVMLError("Not Found")

    def nvmlDeviceGetUUID(self, h):
        return self.devices[h]["uuid"]

    def nvmlDeviceGetIndex(self, h):
        return h

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlSystemGetDriverVersion(self):
        return "570.00"

    def nvmlDeviceGetClockInfo(self, h, which):
        self.calls.append("clock")
        return self.devices[h]["sm" if which == NVML_CLOCK_SM else "mem"]

    def nvmlDeviceGetApplicationsClock(self, h, which):
        value = self.devices[h].get("app_sm")
        if value is None:
            raise NVMLError("Not Supported")
        return value

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return self.devices[h].get("max_sm", 1980)

    def nvmlDeviceGetTemperature(self, h, which):
        return self.devices[h]["temp"]

    def nvmlDeviceGetPowerUsage(self, h):
        return self.devices[h]["power_mw"]

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=self.devices[h]["util"], memory=0)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        self.calls.append("reasons")
        return self.devices[h].get("reasons", 0)


def h200(uuid="GPU-11111111-aaaa", sm=1980, reasons=0, app_sm=1980, **extra):
    return dict(uuid=uuid, sm=sm, mem=3201, temp=40, power_mw=350_500, util=97,
                reasons=reasons, app_sm=app_sm, max_sm=1980, **extra)
