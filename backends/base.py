"""What every device runtime must tell the harness.

A backend is a small declarative object: which environment keys make devices visible,
what it can do (graph capture, events), how to name and enumerate its devices, how to read
its telemetry, and how to sort a device error into fatal / poisoned / recoverable.
The harness talks only to this interface; vendor names stay inside `backends/`.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from . import telemetry

# Error classes, in order of severity.
FATAL = "fatal"          # the kernel is broken: fail the case, never report a latency
POISONED = "poisoned"    # the process can no longer be trusted: stop the run
RECOVERABLE = "recoverable"  # capture is not possible for this case: fall back to events

TELEMETRY_FIELDS = ("index", "sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w", "util_pct")

# Newer torch appends this footer to *every* device error; it says nothing about the cause
# and must never drive classification.
_GENERIC_FOOTERS = (
    re.compile(r"compile with [`']?TORCH_USE_\w+_DSA[`']? to enable device-side assertions\.?",
               re.I),
    re.compile(r"for debugging consider passing \w+_LAUNCH_BLOCKING=1\.?", re.I),
    re.compile(r"device-side assertions? (?:are|is) (?:not )?enabled[^\n]*", re.I),
    re.compile(r"[^\n]*might be asynchronously reported at some other API call[^\n]*", re.I),
)


def error_text(error: BaseException | str) -> str:
    """`ExcName: message` for an exception, the text itself for a string."""
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


def strip_generic_footers(text: str) -> str:
    for pattern in _GENERIC_FOOTERS:
        text = pattern.sub("", text)
    return text


@dataclass(frozen=True)
class DeviceIdentity:
    index: int
    name: str
    arch: str
    physical_id: str = ""
    uuid: str = ""              # the card's own id where the backend gives one

    def to_dict(self) -> dict:
        return {"index": self.index, "name": self.name, "arch": self.arch,
                "physical_id": self.physical_id, "uuid": self.uuid}

    @property
    def card(self) -> str:
        """Which card this is, for the caliber: its UUID, else the physical index."""
        return self.uuid or (f"index {self.physical_id}" if self.physical_id else "")


@dataclass(frozen=True)
class TelemetrySample:
    index: int
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    temp_c: float | None
    power_w: float | None
    util_pct: float | None
    throttle: tuple[str, ...] | None = None   # reason names (backends.telemetry); None: unknown

    def to_dict(self) -> dict:
        out = {name: getattr(self, name) for name in TELEMETRY_FIELDS}
        out["throttle"] = list(self.throttle) if self.throttle is not None else None
        return out


def parse_number(text) -> float | None:
    """'1980 MHz' -> 1980.0, '65C' -> 65.0, '[N/A]' -> None."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    match = re.search(r"-?\d+(?:\.\d+)?", str(text))
    return float(match.group()) if match else None


@dataclass
class Backend:
    """Base class; concrete backends set the class attributes and override what differs."""

    name: str = ""
    aliases: tuple[str, ...] = ()
    torch_device_type: str = ""           # "cuda", "musa", "npu", "cpu"
    visibility_keys: tuple[str, ...] = ()  # first key is the one the harness sets
    supports_graph: bool = False
    supports_events: bool = False
    telemetry_command: tuple[str, ...] = ()
    telemetry_tools: tuple[str, ...] = ()   # what telemetry_source tries, in order (zlh backends)
    capture_deny: frozenset[str] = frozenset()
    # Substrings (lower case) matched against the error text with generic footers removed.
    fatal_patterns: tuple[str, ...] = ()
    poisoned_patterns: tuple[str, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # Corpus skip guards known stale (or verified needed) on this runtime: skip_guards.py.
    skip_guards: tuple = ()
    # The torch.profiler.ProfilerActivity member that records this runtime's device kernels;
    # "" where torch's profiler does not see them.
    profiler_activity: str = ""

    # ---- identity and enumeration -------------------------------------------------------
    def torch_module(self):
        import torch  # heavy: imported only where used
        return getattr(torch, self.torch_device_type)

    def is_available(self) -> bool:
        try:
            return bool(self.torch_module().is_available())
        except Exception:  # noqa: BLE001 - a missing vendor extension just means "no"
            return False

    def visible_from_env(self, env: Mapping[str, str] | None = None) -> list[str] | None:
        env = os.environ if env is None else env
        for key in self.visibility_keys:
            value = env.get(key)
            if value is not None and value.strip() != "":
                return [v.strip() for v in value.split(",") if v.strip()]
        return None

    def enumerate_devices(self, explicit: Sequence[int] | None = None,
                          env: Mapping[str, str] | None = None) -> list[int]:
        """Logical device indices: explicit list > visibility env > torch's count."""
        if explicit:
            return [int(i) for i in explicit]
        visible = self.visible_from_env(env)
        if visible is not None:
            return list(range(len(visible)))
        try:
            return list(range(int(self.torch_module().device_count())))
        except Exception:  # noqa: BLE001
            return []

    def identity(self, index: int) -> DeviceIdentity:
        mod = self.torch_module()
        props = mod.get_device_properties(index)
        major = getattr(props, "major", None)
        minor = getattr(props, "minor", None)
        arch = getattr(props, "gcnArchName", None) or (
            f"sm_{major}{minor}" if major is not None else "unknown")
        visible = self.visible_from_env()
        physical = visible[index] if visible and index < len(visible) else str(index)
        uuid = getattr(props, "uuid", None)
        return DeviceIdentity(index, props.name, arch, physical, str(uuid) if uuid else "")

    def child_env(self, base: Mapping[str, str], devices: Sequence[str] | None = None,
                  all_backends: Sequence["Backend"] = ()) -> dict[str, str]:
        """Environment for a child process: this backend's keys only, other vendors' cleared."""
        env = dict(base)
        for other in all_backends:
            if other.name != self.name:
                for key in other.visibility_keys:
                    if key not in self.visibility_keys:
                        env.pop(key, None)
        if devices is not None and self.visibility_keys:
            value = ",".join(str(d) for d in devices)
            for key in self.visibility_keys:
                env.pop(key, None)
            env[self.visibility_keys[0]] = value
        env.update(self.extra_env)
        return env

    def forced_env(self) -> Mapping[str, str]:
        """Variables this backend sets for every run whatever the environment says (an A/B
        side giving another value is refused: it would not apply). Base: none (`extra_env`
        is only a default)."""
        return {}

    def activate_env(self) -> None:
        """The environment part of `activate` only (what the stack reads), no device touched:
        a process that only checks inputs must not create a device context."""
        for key, value in self.extra_env.items():
            os.environ.setdefault(key, value)

    def activate(self, device_index: int) -> None:
        """Make this backend current in this process (device selection, env the stack reads)."""
        self.activate_env()
        self.torch_module().set_device(device_index)

    def torch_device(self, index: int) -> str:
        return f"{self.torch_device_type}:{index}"

    # ---- runtime primitives used by the timing core ------------------------------------
    def synchronize(self) -> None:
        self.torch_module().synchronize()

    def event(self):
        return self.torch_module().Event(enable_timing=True)

    def new_graph(self):
        raise NotImplementedError(f"backend {self.name} declares no graph support")

    def graph_capture(self, graph) -> contextlib.AbstractContextManager:
        raise NotImplementedError(f"backend {self.name} declares no graph support")

    def l2_cache_bytes(self, index: int) -> int | None:
        props = self.torch_module().get_device_properties(index)
        size = getattr(props, "L2_cache_size", None)
        return int(size) if size else None

    @contextlib.contextmanager
    def scratch_rng(self, index: int, seed: int = 0x5EED) -> Iterator[None]:
        """Run a block (a graph capture) with the device generator pointing at a scratch state.

        Capture registers the default generator's *state* with the graph; an aborted capture
        leaves that state stuck in capture mode ("Offset increment outside graph capture" on
        every later random op). Swapping in a clone first means the process's own state never
        takes part: it is put back untouched whether capture succeeds or not. Replays of a
        captured graph then advance only the scratch state.
        """
        generators = getattr(self.torch_module(), "default_generators", ())
        gen = generators[index] if index < len(generators) else None
        if gen is None or not hasattr(gen, "graphsafe_set_state"):
            yield   # no swappable generator state: capture as is
            return
        original = gen.graphsafe_get_state()
        scratch = gen.clone_state()
        scratch.manual_seed(seed)
        gen.graphsafe_set_state(scratch)
        try:
            yield
        finally:
            gen.graphsafe_set_state(original)

    def empty_cache(self) -> None:
        """Return cached device memory to the driver (between ops of one process)."""
        module = self.torch_module()
        if hasattr(module, "empty_cache"):
            module.empty_cache()

    def memory_held(self) -> int | None:
        """Bytes of device memory this process's allocator still holds (reserved), or None
        where the runtime does not say."""
        module = self.torch_module()
        if not hasattr(module, "memory_reserved"):
            return None
        try:
            return int(module.memory_reserved())
        except Exception:  # noqa: BLE001 - a runtime without an allocator figure
            return None

    def memory_free(self, index: int) -> int | None:
        """Bytes of device memory free on device `index` (the driver's count, all processes
        together), or None where the runtime does not say."""
        module = self.torch_module()
        if not hasattr(module, "mem_get_info"):
            return None
        try:
            return int(module.mem_get_info(index)[0])
        except Exception:  # noqa: BLE001 - a runtime without a free-memory figure
            return None

    def device_usable(self) -> str | None:
        """None when the device still runs work after an error, else the error text."""
        import torch  # heavy: imported only where used
        try:
            torch.ones(1, device=self.torch_device(self.torch_module().current_device())).add_(1)
            self.synchronize()
            return None
        except Exception as exc:  # noqa: BLE001
            return error_text(exc)

    def rng_usable(self, index: int) -> str | None:
        """None when the device generator works outside capture, else the error text."""
        import torch  # heavy: imported only where used
        try:
            torch.rand(1, device=self.torch_device(index))
            self.synchronize()
            return None
        except Exception as exc:  # noqa: BLE001
            return str(exc)

    # ---- errors ---------------------------------------------------------------------------
    def classify_error(self, error: BaseException | str) -> str:
        cleaned = strip_generic_footers(error_text(error)).lower()
        if any(p in cleaned for p in self.poisoned_patterns):
            return POISONED
        if any(p in cleaned for p in self.fatal_patterns):
            return FATAL
        return RECOVERABLE

    # ---- telemetry ------------------------------------------------------------------------
    def parse_telemetry(self, text: str) -> list[TelemetrySample]:
        raise NotImplementedError

    def read_telemetry(self, timeout_s: float = 10.0) -> list[TelemetrySample] | None:
        if not self.telemetry_command or shutil.which(self.telemetry_command[0]) is None:
            return None
        try:
            out = subprocess.run(list(self.telemetry_command), capture_output=True, text=True,
                                 timeout=timeout_s, check=True).stdout
            return self.parse_telemetry(out)
        except (subprocess.SubprocessError, OSError, ValueError):
            return None

    # ---- pinned telemetry (backends.telemetry) ----------------------------------------------
    def physical_device(self, index: int, env: Mapping[str, str] | None = None) -> str:
        """What the vendor tool calls logical device `index`: its entry in the visibility
        variable (an index or a UUID), or the index itself when nothing is hidden."""
        env = os.environ if env is None else env
        for key in self.visibility_keys:
            visible = telemetry.visible_list(env.get(key))
            if visible is not None:
                return telemetry.map_through(visible, index, key)
        return str(index)

    def telemetry_source(self, index: int, env: Mapping[str, str] | None = None):
        """A source whose `read()` returns one TelemetrySample of the physical device behind
        logical `index`; raises telemetry.TelemetryUnavailable with the reason."""
        raise telemetry.TelemetryUnavailable(f"backend {self.name} has no device telemetry")

    def clock_reading(self, index: int) -> telemetry.ClockReading | None:
        """The SM clock and active throttle reasons of logical `index` now, read in-process
        and cheaply (never a child process); None where the backend has no such reading."""
        return None

    # ---- a known amount of device work (planted-change self-test) ---------------------------
    def has_spin(self) -> bool:
        return callable(getattr(self.torch_module(), "_sleep", None))

    def spin(self, cycles: int) -> None:
        """Queue a kernel that spins for `cycles` device clock cycles (graph capture takes it)."""
        sleep = getattr(self.torch_module(), "_sleep", None)
        if sleep is None:
            raise NotImplementedError(f"backend {self.name} has no device spin")
        sleep(int(cycles))

    def spin_cycles_per_ms(self, index: int, probe_ms: float = 1.0) -> float:
        """Spin cycles per millisecond of device time, measured now (after ~50 ms of spinning,
        so the clocks have ramped): N / (t(2N) - t(N)) cancels the launch cost."""
        def timed(cycles: int) -> float:
            start, end = self.event(), self.event()
            start.record()
            self.spin(cycles)
            end.record()
            end.synchronize()
            return start.elapsed_time(end)

        guess = 1_000_000 / max(timed(1_000_000), 1e-3)          # cycles per ms, rough
        timed(int(50 * guess))                                    # ramp the clocks up
        n = int(probe_ms * guess)
        once = sorted(timed(n) for _ in range(5))[2]
        twice = sorted(timed(2 * n) for _ in range(5))[2]
        return n / max(twice - once, 1e-6)

    def profiler_activities(self) -> list:
        """The torch.profiler activities that record this runtime's device kernels (for a
        kernel split); [] where there are none, or this torch's profiler lacks them."""
        if not self.profiler_activity:
            return []
        try:
            import torch  # heavy: imported only where used
            activity = getattr(torch.profiler.ProfilerActivity, self.profiler_activity, None)
            supported = torch.profiler.supported_activities()
        except Exception:  # noqa: BLE001 - no profiler in this torch: no split
            return []
        return [activity] if activity is not None and activity in supported else []

    def describe(self) -> dict:
        return {
            "name": self.name,
            "aliases": ",".join(self.aliases),
            "device_type": self.torch_device_type,
            "visibility": ",".join(self.visibility_keys) or "-",
            "graph": self.supports_graph,
            "events": self.supports_events,
            "telemetry": (",".join(self.telemetry_tools)
                          or " ".join(self.telemetry_command[:1]) or "-"),
            "available": self.is_available(),
        }
