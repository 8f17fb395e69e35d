"""Triton hook plumbing shared by every IR capture in the process.

- the compile listener (`triton.knobs.compilation.listener`, chained after any listener
  already set) records every compiled variant and where its IR files lie;
- a kernel-load hook maps the loaded function handle to the variant's hash, and a
  launch-enter hook reports each launch to the active captures, tagged `sweep` when it
  happens inside `Autotuner._bench` (an autotuner benchmarking one config) and `timed`
  when it happens inside a call of the function under test (`timed_call`).

Triton 3.6 and 3.9 expose `knobs.runtime.launch_enter_hook` and `kernel_load_end_hook` as
`HookChain`s; a plain attribute holding one callable (older builds) is chained by hand. A
Triton without a compile listener gets one warning and no capture: timing goes on.
"""
from __future__ import annotations

import contextlib
import functools
import sys
import threading
from typing import Any, Callable, Protocol

from ...common import log
from .variants import Variant, count_or_none, describe


class Listener(Protocol):
    """What the observer tells an attached capture (capture.IRCapture is one): a variant was
    compiled or loaded, a kernel was launched. Named here so that this module, below the
    capture, need not import it."""

    def _compiled(self, key: str, swept: bool, seconds: float | None = None) -> None: ...

    def _launched(self, key: str | None, name: str, swept: bool, timed: bool = False) -> None: ...

_warned: set[str] = set()


def warn_once(message: str) -> None:
    """One warning per distinct message per process: a missing hook is not news twice."""
    if message not in _warned:
        _warned.add(message)
        log.warning(f"WARNING {message}")


def compile_seconds(times) -> float | None:
    """Seconds of one compile from the listener's `times` (Triton's CompileTimes: µs of IR
    initialisation, each lowering stage and storing the results); None without them (an
    older Triton) or from a cache hit's (which measure only the lookup)."""
    try:
        stages = sum(int(us) for _, us in times.lowering_stages)
        return (int(times.ir_initialization) + stages + int(times.store_results)) / 1e6
    except (AttributeError, TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- sweep marking
# `Autotuner._bench` benchmarks exactly one config; everything launched or compiled inside
# it belongs to the sweep. So does the reset the autotuner does once after its sweep
# (`pre_hook(..., reset_only=True)`: `reset_to_zero` arguments zeroed, e.g. by a library's
# fill kernel), which a run that replays a pinned config never does: counted as a measured
# launch, it would be a kernel only the swept side has. The patch is process-wide and
# reference-counted so several captures (or a capture and a test) can coexist.
_sweep_depth = 0
_bench_patches: dict[type, Callable] = {}
_bench_users = 0


def in_sweep() -> bool:
    return _sweep_depth > 0


@contextlib.contextmanager
def sweeping():
    """Launches and compiles in the block belong to an autotune sweep (a config's benchmark,
    the tuner's reset after it)."""
    global _sweep_depth
    _sweep_depth += 1
    try:
        yield
    finally:
        _sweep_depth -= 1


def _swept(fn: Callable, *args, **kwargs):
    with sweeping():
        return fn(*args, **kwargs)


def _mark_reset(hook: Callable) -> Callable:
    """The autotuner's pre-hook with its `reset_only` calls (the reset after a sweep) marked
    as sweep."""
    @functools.wraps(hook)
    def pre_hook(*args, **kwargs):
        if kwargs.get("reset_only"):
            return _swept(hook, *args, **kwargs)
        return hook(*args, **kwargs)
    pre_hook.__zlh_sweep__ = True
    return pre_hook


def mark_reset(tuner) -> None:
    """The tuner's pre-hook marked (once) so that its reset after a sweep counts as sweep:
    from its first benchmark, or from the start of a sweep (a library tuner that fills its
    sweep from a cache of timings still resets)."""
    hook = getattr(tuner, "pre_hook", None)
    if callable(hook) and not getattr(hook, "__zlh_sweep__", False):
        with contextlib.suppress(AttributeError, TypeError):
            tuner.pre_hook = _mark_reset(hook)


def _mark_sweep(bench: Callable) -> Callable:
    @functools.wraps(bench)
    def _bench(self, *args, **kwargs):
        mark_reset(self)
        return _swept(bench, self, *args, **kwargs)
    _bench.__zlh_sweep__ = True
    return _bench


def _autotuner_classes() -> list[type]:
    try:
        from triton.runtime.autotuner import Autotuner  # heavy: imported only where used
    except Exception:  # noqa: BLE001 - no autotuner: nothing to mark
        return []
    found, todo = [Autotuner], [Autotuner]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    # The base class, plus subclasses that replace `_bench` themselves (a library tuner).
    return [c for c in found if c is Autotuner or "_bench" in vars(c)]


def _patch_bench() -> bool:
    global _bench_users
    classes = _autotuner_classes()
    for cls in classes:
        current = vars(cls).get("_bench")
        if current is not None and not getattr(current, "__zlh_sweep__", False):
            _bench_patches[cls] = current
            cls._bench = _mark_sweep(current)
    _bench_users += 1
    return bool(classes)


def _unpatch_bench() -> None:
    global _bench_users
    _bench_users = max(0, _bench_users - 1)
    if _bench_users:
        return
    for cls, original in list(_bench_patches.items()):
        if getattr(vars(cls).get("_bench"), "__zlh_sweep__", False):
            cls._bench = original
        del _bench_patches[cls]


# --------------------------------------------------------------------------- timed calls
# Launches inside a call of the function under test are the case's measured code; every
# other launch in the case window (input building, output digests, graph-capture set-up,
# an L2 flush) is set-up. A counter, not a flag: the wrapper may nest.
_timed_depth = 0


def in_timed() -> bool:
    return _timed_depth > 0


def timed_call(fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn` with its launches attributed to the function under test."""
    def call():
        global _timed_depth
        _timed_depth += 1
        try:
            return fn()
        finally:
            _timed_depth -= 1
    return call


# --------------------------------------------------------------------------- loaded binary
# Registers and spills are known only once the driver has loaded the binary:
# `CompiledKernel._init_handles` sets `n_regs` and `n_spills` (CUDA: CU_FUNC_ATTRIBUTE_NUM_REGS
# and CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES / 4; HIP alike) and then calls
# kernel_load_end_hook, whose arguments do not include the kernel. The kernel is the `self`
# of a calling frame a few levels up (the hook chain sits between), matched by its hash.
_LOAD_FRAMES = 8


def loaded_resources(hash: str) -> tuple[int | None, int | None]:
    """(n_regs, n_spills) of the CompiledKernel with this hash whose load is calling the
    hook, or (None, None) where no such caller is found (a simulated load, another Triton)."""
    try:
        frame = sys._getframe(1)
        for _ in range(_LOAD_FRAMES):
            if frame is None:
                break
            owner = frame.f_locals.get("self")
            if owner is not None and getattr(owner, "hash", None) == hash:
                return (count_or_none(getattr(owner, "n_regs", None)),
                        count_or_none(getattr(owner, "n_spills", None)))
            frame = frame.f_back
    except Exception:  # noqa: BLE001 - never break a kernel load; the values stay unknown
        pass
    return None, None


# --------------------------------------------------------------------------- hook plumbing
class _Hook:
    """One of Triton's hook slots: a HookChain (`add`/`remove`, Triton 3.6 and 3.9) or a
    plain attribute holding one callable (older builds), chained by hand."""

    def __init__(self, owner: Any, attr: str):
        self.owner, self.attr = owner, attr
        self.previous: Any = None
        self.installed: Callable | None = None
        self.is_chain = False

    def add(self, func: Callable) -> None:
        slot = getattr(self.owner, self.attr)
        self.is_chain = hasattr(slot, "add") and hasattr(slot, "remove")
        if self.is_chain:
            slot.add(func)
            self.installed = func
            return
        previous = slot

        def chained(*args, **kwargs):
            if previous is not None:
                previous(*args, **kwargs)
            if self.installed is chained:       # inert once removed
                func(*args, **kwargs)
        self.previous, self.installed = previous, chained
        setattr(self.owner, self.attr, chained)

    def remove(self) -> None:
        if self.installed is None:
            return
        slot = getattr(self.owner, self.attr)
        if self.is_chain:
            slot.remove(self.installed)
        elif slot is self.installed:
            setattr(self.owner, self.attr, self.previous)
        self.installed = None


def _slot(owner: Any, attr: str) -> _Hook | None:
    if owner is None or not hasattr(owner, attr):
        return None
    return _Hook(owner, attr)


# --------------------------------------------------------------------------- observer
class _Observer:
    """The process-wide half: one set of Triton hooks, shared by every active capture.

    Variants and function handles outlive a capture because Triton's in-memory kernel
    cache does: a kernel compiled and loaded while op 1 ran is launched by op 2 without
    compiling or loading again, so op 2's capture must still be able to name it."""

    def __init__(self):
        self.lock = threading.RLock()
        self.variants: dict[str, Variant] = {}
        self.by_function: dict[Any, str] = {}
        self.by_name: dict[str, set[str]] = {}
        self.loaded: dict[str, tuple[int | None, int | None]] = {}  # hash -> (regs, spills)
        self.captures: list[Listener] = []
        self.hooks: list[_Hook] = []
        self.compilation: Any = None
        self.listener: Callable | None = None
        self.listener_prev: Any = None
        self.bench_patched = False

    def attach(self, capture: Listener) -> bool:
        with self.lock:
            if not self.captures and not self._install():
                return False
            if capture not in self.captures:
                self.captures.append(capture)
            return True

    def detach(self, capture: Listener) -> None:
        with self.lock:
            if capture in self.captures:
                self.captures.remove(capture)
                if not self.captures:
                    self._uninstall()

    def _install(self) -> bool:
        try:
            import triton  # heavy, and absent where nothing compiles: imported only where used
            knobs = getattr(triton, "knobs", None)
        except Exception as exc:  # noqa: BLE001 - no Triton, no IR; timing goes on
            warn_once(f"IR capture off: triton not importable ({type(exc).__name__})")
            return False
        compilation = getattr(knobs, "compilation", None)
        runtime = getattr(knobs, "runtime", None)
        launch = _slot(runtime, "launch_enter_hook")
        if compilation is None or not hasattr(compilation, "listener") or launch is None:
            warn_once("IR capture off: this Triton has no triton.knobs.compilation.listener "
                      "/ knobs.runtime.launch_enter_hook; timing goes on without TTGIR")
            return False
        previous = compilation.listener

        def listener(**kwargs):
            if previous is not None:
                previous(**kwargs)
            if self.listener is listener:           # inert once uninstalled
                self.on_compile(**kwargs)
        self.compilation, self.listener_prev, self.listener = compilation, previous, listener
        compilation.listener = listener
        launch.add(self.on_launch)
        self.hooks = [launch]
        load = _slot(runtime, "kernel_load_end_hook")
        if load is not None:
            load.add(self.on_kernel_load)
            self.hooks.append(load)
        else:
            warn_once("IR capture: no kernel_load_end_hook in this Triton; launches are "
                      "matched by kernel name only")
        self.bench_patched = _patch_bench()
        if not self.bench_patched:
            warn_once("IR capture: no triton Autotuner; sweep launches cannot be told from "
                      "measured ones")
        return True

    def _uninstall(self) -> None:
        """Restore every hook; a listener someone chained on top of ours stays, inert."""
        if self.compilation is not None and self.compilation.listener is self.listener:
            self.compilation.listener = self.listener_prev
        self.listener = self.compilation = None
        for hook in self.hooks:
            hook.remove()
        self.hooks = []
        if self.bench_patched:
            _unpatch_bench()
            self.bench_patched = False

    # Triton's callbacks ------------------------------------------------------------
    def on_compile(self, *, src=None, metadata=None, metadata_group=None, times=None,
                   cache_hit=False, **_ignored) -> None:
        try:
            variant = describe(src, metadata or {}, metadata_group or {})
        except Exception as exc:  # noqa: BLE001 - never break a compile
            warn_once(f"IR capture: could not read a compiled variant ({type(exc).__name__}: "
                      f"{exc})")
            return
        if not variant.hash:
            return
        swept, seconds = in_sweep(), None if cache_hit else compile_seconds(times)
        with self.lock:
            known = self.variants.setdefault(variant.hash, variant)
            if known.shared is None:
                known.shared = variant.shared
            if variant.hash in self.loaded and known.n_regs is None:
                known.n_regs, known.n_spills = self.loaded[variant.hash]
            # A recompile (another op's private cache) puts the files elsewhere: keep the
            # newest path, the older one may be gone with its cache.
            known.ir_paths.update(variant.ir_paths)
            self.by_name.setdefault(known.kernel, set()).add(known.hash)
            for each in self.captures:
                each._compiled(known.hash, swept, seconds)

    def on_kernel_load(self, module, function, name, metadata_group, hash, *rest) -> None:
        """kernel_load_end_hook(module, function, name, metadata_group, hash); also keeps
        the loaded binary's registers and spills (see `loaded_resources`)."""
        if not hash:
            return
        regs, spills = loaded_resources(hash)
        with self.lock:
            if function is not None:
                self.by_function[function] = hash
            if regs is not None or spills is not None:
                self.loaded[hash] = (regs, spills)
                known = self.variants.get(hash)
                if known is not None:
                    known.n_regs, known.n_spills = regs, spills

    def on_launch(self, metadata) -> None:
        """launch_enter_hook(LazyDict): its `.data` holds name, function and stream
        (`.get()` would also run the kernel's launch_metadata function: not needed)."""
        data = getattr(metadata, "data", metadata)
        if not isinstance(data, dict):
            return
        swept, timed = in_sweep(), in_timed()
        with self.lock:
            key = self.by_function.get(data.get("function"))
            if key is None:
                candidates = self.by_name.get(str(data.get("name")), ())
                key = next(iter(candidates)) if len(candidates) == 1 else None
            for each in self.captures:
                each._launched(key, str(data.get("name", "?")), swept, timed)


observer = _Observer()
