"""`harness.measure`: time one zero-argument callable with `zlh bench`'s timing core.

The same pieces a run uses, in the same order: the backend (named or detected) and its
device, the timer (`auto`: graph where the backend captures graphs, event where it has
events, host on the cpu backend), the stopping rule and budget built and checked by
`BenchOptions`, and `CaseTimer`, so a capture that fails falls back to event timing with
the `BENCHMARK_DIRECT_NO_CUDAGRAPH` marker (in `Measurement.fallback`), a fatal device error
fails, and a poisoned device raises `DevicePoisonedError`. A callable that calls `sys.exit`
raises `CallableError` rather than ending the program.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import backends

from ..common.errors import (CallableError, CaseFailure, DevicePoisonedError, PreflightError,
                             Terminated, UsageError, ZlhError, failure_detail)
from ..measure.case_timer import CaseTimer
from ..measure.measurement import Measurement
from ..measure.timers import resolve_timer_name
from ..run.option_table import BY_NAME, MEASURE_NAMES
from ..run.options import BenchOptions
from ..run.plan import options_backend

# Keywords of `measure` that configure the timing core (BenchOptions' flat names; the option
# table marks them).
TIMING_NAMES = MEASURE_NAMES


@dataclass
class Device:
    """A backend, its device index and a `CaseTimer` configured from checked options."""
    backend: Any
    index: int
    timer: CaseTimer

    @property
    def timer_name(self) -> str:
        return self.timer.timer_name


def open_device(**values) -> Device:
    """Backend, device and timer from `measure`'s keywords; UsageError / PreflightError."""
    unknown = sorted(set(values) - set(TIMING_NAMES))
    if unknown:
        raise UsageError(f"unknown timing option {', '.join(unknown)}; known: "
                         f"{', '.join(TIMING_NAMES)}")
    options = BenchOptions.from_flat(**{k: v for k, v in values.items() if v is not None})
    backend = options_backend(options)
    if not backend.is_available():
        raise PreflightError("backend", f"backend {backend.name} has no usable device here")
    index = _device_index(backend, options.device)
    backend.activate(index)
    try:
        timer = resolve_timer_name(options.timer, backend)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if options.l2 == "flush" and timer != "event":
        raise UsageError("l2='flush' needs timer='event' (a graph replays with a warm L2)")
    return Device(backend, index, CaseTimer(backend, index, timer, options.rule, options.budget,
                                            options.repeat, flush_l2=options.l2 == "flush"))


def _device_index(backend, wanted: int | None) -> int:
    visible = backend.enumerate_devices()
    if not visible:
        raise PreflightError("device", f"backend {backend.name} sees no device")
    if wanted is not None:
        if wanted not in visible:
            raise PreflightError("device", f"device {wanted}: backend {backend.name} sees "
                                           f"devices {', '.join(map(str, visible))}")
        return wanted
    try:                        # the caller's current device, not always the first one
        current = backend.torch_module().current_device()
    except Exception:  # noqa: BLE001 - a runtime without the notion: the first device
        current = None
    return current if isinstance(current, int) and current in visible else visible[0]


def check_callable(fn, what: str = "fn") -> None:
    """A UsageError unless `fn` can be called with no arguments."""
    if not callable(fn):
        raise UsageError(f"{what} must be a callable taking no arguments, got "
                         f"{type(fn).__name__} {_short(fn)}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return                                  # no signature to read (a builtin): trust it
    try:
        signature.bind()
    except TypeError:
        raise UsageError(f"{what} must take no arguments, but "
                         f"{getattr(fn, '__name__', type(fn).__name__)} takes {signature}; "
                         f"wrap it: lambda: {getattr(fn, '__name__', 'fn')}(...)") from None


def time_callable(device: Device, fn: Callable[[], Any], name: str) -> Measurement:
    """One measurement of `fn`; an error it raises is a CallableError (cause kept)."""
    try:
        return device.timer.measure(fn, name).measurement
    except (DevicePoisonedError, UsageError):
        raise
    except CaseFailure as exc:
        raise CallableError(f"{name}: {exc.reason}: {exc.detail}") from exc
    except ZlhError:
        raise
    except Terminated:
        raise
    except SystemExit as exc:        # would end the embedding program: an error instead
        raise CallableError(f"{name}: the function called sys.exit({exc.code!r})") from exc
    except Exception as exc:  # noqa: BLE001 - the caller's function: one line, cause kept
        verdict = device.backend.classify_error(exc)
        problem = device.backend.device_usable() if verdict == backends.FATAL else None
        if verdict == backends.POISONED or problem:
            raise DevicePoisonedError(f"{name}: the device became unusable: "
                                      f"{failure_detail(exc)}") from exc
        raise CallableError(f"{name} raised {type(exc).__name__}: {failure_detail(exc)}") from exc


def measure(fn: Callable[[], Any], *, name: str = "callable", **timing) -> Measurement:
    """Time `fn` (no arguments) as `zlh bench` times a case's function under test.

    The timing keywords are those the option table marks (the signature shows them with
    their `zlh bench` defaults): backend None: detected; device None: the current one; a
    keyword left out or None takes the `zlh bench` default. Each keyword is checked like the
    `zlh bench` option of the same name. Returns a `Measurement`: raw samples, median,
    rel_error, the timer actually used, and `fallback` (the marker line) when graph capture
    failed and the number is event-timed. `name` labels markers and errors."""
    check_callable(fn)
    if set(timing) - set(TIMING_NAMES):   # open_device names them with the known ones
        open_device(**timing)
    if not isinstance(name, str):
        raise UsageError(f"name must be a string, got {name!r}")
    return time_callable(open_device(**timing), fn, name)


def _signature() -> inspect.Signature:
    """`measure(fn, *, backend=None, device=None, timer='auto', ..., name='callable')`: the
    timing keywords as the option table declares them, for help() and editors."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [inspect.Parameter("fn", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           annotation="Callable[[], Any]"),
         *(inspect.Parameter(n, keyword, default=BY_NAME[n].default,
                             annotation=BY_NAME[n].annotation()) for n in TIMING_NAMES),
         inspect.Parameter("name", keyword, default="callable", annotation="str")],
        return_annotation="Measurement")


measure.__signature__ = _signature()


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
