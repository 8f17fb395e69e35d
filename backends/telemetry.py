"""Device telemetry, pinned to one physical device: the vendor-neutral pieces.

A backend turns a logical device index into a *telemetry source* (`Backend.telemetry_source`)
whose `read()` returns one `TelemetrySample` of exactly that device — never every GPU on the
host — and, where a cheap in-process library exists, a `ClockReading` per timed function
(`Backend.clock_reading`). Everything leaves this layer normalised:

    TelemetrySample: index, sm_clock_mhz, mem_clock_mhz, temp_c, power_w, util_pct,
                     throttle (a tuple of the stable reason names below; None: not reported)
    ClockReading:    sm_clock_mhz, usual_sm_mhz (the clock the device runs at when nothing
                     holds it back), throttle

Reason names are stable text, whatever the vendor calls them: `SLOWDOWN_REASONS` are the ones
that mean "the device was held back while it worked" (power, thermal, hardware slowdown);
`gpu_idle`, `app_clock_setting`, `sync_boost` and `display_clock` are reported but are not
slowdowns of a running kernel.

Pinning: the logical index is mapped through the backend's visibility variable to what the
vendor tool understands (an index or a UUID, e.g. CUDA_VISIBLE_DEVICES=GPU-8f2a…,1 makes
logical 0 the GPU with that UUID and logical 1 the tool's device 1).
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

REASON_NAMES = ("gpu_idle", "app_clock_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
                "sw_thermal", "hw_thermal", "hw_power_brake", "display_clock")
SLOWDOWN_REASONS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                              "hw_power_brake"})


class TelemetryUnavailable(Exception):
    """No telemetry for this device here; the message says why (for telemetry.err)."""


@dataclass(frozen=True)
class ClockReading:
    """The device's clock at one instant, read in-process (cheap: no child process)."""
    sm_clock_mhz: float | None
    usual_sm_mhz: float | None = None
    throttle: tuple[str, ...] = ()

    @property
    def slowdowns(self) -> tuple[str, ...]:
        return tuple(r for r in self.throttle if r in SLOWDOWN_REASONS)

    def to_dict(self) -> dict:
        return {"sm_clock_mhz": self.sm_clock_mhz, "usual_sm_mhz": self.usual_sm_mhz,
                "throttle": list(self.throttle)}

    @classmethod
    def from_dict(cls, data: Mapping) -> "ClockReading":
        return cls(data.get("sm_clock_mhz"), data.get("usual_sm_mhz"),
                   tuple(data.get("throttle") or ()))


def ordered_reasons(names) -> tuple[str, ...]:
    """Reason names in the one stable order (unknown names last, sorted)."""
    names = set(names)
    known = [n for n in REASON_NAMES if n in names]
    return tuple(known + sorted(names - set(REASON_NAMES)))


def reasons_from_mask(mask: int, bits: Sequence[tuple[int, str]]) -> tuple[str, ...]:
    """A vendor bit mask as reason names, in the stable order."""
    return ordered_reasons(name for bit, name in bits if int(mask) & bit)


def visible_list(value: str | None) -> list[str] | None:
    """A visibility variable's entries. Like the runtimes, the list ends at the first
    negative index ("0,-1,2" shows one device); None when the variable is unset or blank."""
    if value is None or not value.strip():
        return None
    entries = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        if item.lstrip("-").isdigit() and int(item) < 0:
            break
        entries.append(item)
    return entries


def map_through(visible: list[str] | None, index: int, key: str) -> str:
    """The physical selector (index or UUID) of logical `index` under a visibility list."""
    if visible is None:
        return str(index)
    if index >= len(visible):
        raise TelemetryUnavailable(f"logical device {index} is not visible: {key}="
                                   f"{','.join(visible)} shows {len(visible)} device(s)")
    return visible[index]


class CommandSource:
    """Telemetry from a vendor command line tool: run it, parse it, keep the pinned device.

    `pick(samples)` selects the pinned device's sample from what the tool printed (None: not
    there). `fallbacks` are further commands tried, in order, when one fails (e.g. a driver
    that does not know the throttle-reason field)."""

    def __init__(self, name: str, command: Sequence[str],
                 parse: Callable[[str], list], pick: Callable[[list], object],
                 fallbacks: Sequence[Sequence[str]] = (), timeout_s: float = 10.0):
        if shutil.which(command[0]) is None:
            raise TelemetryUnavailable(f"{command[0]} not found on PATH")
        self.name = name
        self.commands = [list(command), *(list(c) for c in fallbacks)]
        self.parse, self.pick, self.timeout_s = parse, pick, timeout_s

    def read(self):
        problems = []
        for command in list(self.commands):
            try:
                done = subprocess.run(command, capture_output=True, text=True,
                                      timeout=self.timeout_s)
            except (OSError, subprocess.SubprocessError) as exc:
                raise TelemetryUnavailable(f"{command[0]}: {exc}") from None
            if done.returncode == 0:
                sample = self.pick(self.parse(done.stdout))
                if sample is None:
                    raise TelemetryUnavailable(f"{command[0]} printed no row for the device")
                self.commands = [command, *(c for c in self.commands if c is not command)]
                return sample
            problems.append(_first_line(done.stdout + done.stderr) or f"rc={done.returncode}")
        raise TelemetryUnavailable(f"{self.commands[0][0]} failed: {'; '.join(problems)}")

    def close(self) -> None:
        return None


def by_index(selector: str) -> Callable[[list], object]:
    """A `pick` for tools that print every device with its index."""
    def pick(samples):
        if not selector.isdigit():
            return None
        wanted = [s for s in samples if s.index == int(selector)]
        return wanted[0] if wanted else None
    return pick


def only_or_index(selector: str) -> Callable[[list], object]:
    """A `pick` for tools asked for one device: its row (or the row with its index)."""
    def pick(samples):
        if len(samples) == 1:
            return samples[0]
        return by_index(selector)(samples)
    return pick


def first_source(name: str, makers: Sequence[Callable[[], object]]):
    """The first source that can be made; TelemetryUnavailable listing every reason."""
    reasons = []
    for make in makers:
        try:
            return make()
        except TelemetryUnavailable as exc:
            reasons.append(str(exc))
    raise TelemetryUnavailable(f"backend {name}: " + "; ".join(reasons))


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else ""
