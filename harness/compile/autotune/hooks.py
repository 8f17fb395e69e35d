"""The tuner hook machinery: a cache view per tuned call, and the run() patch.

For the length of one tuned call the tuner's `cache` is replaced by a `_CacheView`, which

- notes the key the tuner itself looked up (so key computation stays the tuner's own, in
  every Triton and library version), and
- on replay, answers "cached" with the recorded config for a recorded key, even when the
  real cache already holds another one. The real cache is never written with a forced
  config: a library's persistent tuner cache may be a table where the first writer wins,
  so a write would not take effect there and would leak into later, unrelated runs.

The `run()` of Triton's `Autotuner`, of every loaded subclass that overrides it, and of the
tuner classes an adapter names (`adapters.TunerSupport`) is wrapped; subclasses of `_TunerHook`
decide what one tuned call does (record.py, replay.py).
"""
from __future__ import annotations

import contextlib
import functools
import threading
import time
import weakref

from ..ir.triton_hooks import mark_reset
from .budget import split, sweep_budget
from .records import kernel_name

UNCONTROLLED_FIELDS = {"autotune_mode": "uncontrolled"}
_NO_KEY = object()
_active_hook = None


class _CacheView:
    """Stands in for a tuner's `cache` during one call.

    `force(key)` returns the config to serve for a key, or None to defer to the real cache.
    Writes always go to the real cache; `served` is the forced config handed out, if any.
    """

    def __init__(self, base, force=None, hook=None):
        self.base = base
        self.force = force
        self.last_key = _NO_KEY
        self.served = None
        self.hook = hook
        self.sweep = None          # its start (perf_counter) while the tuner sweeps
        self.held = contextlib.ExitStack()     # what the sweep holds (while_sweeping)
        self.tuner = None          # the tuner whose cache this is (set by _viewing)

    def _forced(self, key):
        self.last_key = key
        return self.force(key) if self.force is not None else None

    def __contains__(self, key):
        found = self._forced(key) is not None or key in self.base
        if not found and self.hook is not None and self.sweep is None:
            self.hook._sweep_begins(self)       # a miss: the tuner times its configs now
        return found

    def __getitem__(self, key):
        config = self._forced(key)
        if config is None:
            return self.base[key]
        self.served = config
        return config

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __setitem__(self, key, value):
        self.base[key] = value

    def __getattr__(self, name):        # table_name, model, ... of a FlagGems ConfigCache
        try:
            base = self.__dict__["base"]
        except KeyError:
            raise AttributeError(name) from None
        return getattr(base, name)


@contextlib.contextmanager
def _viewing(tuner, view: _CacheView):
    tuner.cache, view.tuner = view, tuner
    try:
        yield view
    finally:
        if view.sweep is not None:
            view.hook._sweep_ends(view)
        # The tuner may have replaced its cache during the call (FlagGems does on a change
        # of benchmark protocol); keep that replacement.
        if tuner.__dict__.get("cache") is view:
            tuner.cache = view.base


class _TunerState:
    """What a hook remembers per tuner instance: its kernel name and per-key memos."""

    def __init__(self, name: str):
        self.name = name
        self.memo: dict = {}


def _autotuner_class():
    from triton.runtime.autotuner import Autotuner  # heavy: imported only where used
    return Autotuner


def _subclasses(cls):
    found, todo = [], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        if sub not in found:
            found.append(sub)
            todo.extend(sub.__subclasses__())
    return found


class _TunerHook:
    """Patches `run()` of the tuner classes; subclasses decide what one tuned call does.

    One hook at a time per process: record and replay in one process would fight over the
    same methods.
    """

    mode = "uncontrolled"

    def __init__(self):
        self.sweep_s = 0.0          # time of the tuned calls that swept
        self.sweep_wait_s = 0.0     # the part of it spent waiting to enter `while_sweeping`
        # entered for each sweep's length (a context manager factory; the run's: its
        # device's lock held exclusive, run/phases.py `sweeping`), or None
        self.while_sweeping = None
        self.sweep_ms = None        # device ms per config of a sweep (None: the tuner's own)
        self._originals: dict[type, object] = {}
        self._tuners = weakref.WeakKeyDictionary()
        self._lock = threading.RLock()
        self._case_markers: list[str] = []
        self._case_seen: set = set()

    # -- installation --------------------------------------------------------------------

    def install(self, support=None):
        """Patch Triton's Autotuner and every loaded subclass that overrides run(), plus the
        tuner classes of `support` (an `adapters.TunerSupport`) and their subclasses, then
        let the adapter reset the dispatch caches that would bypass the tuner. Tuner
        classes imported after this call are not hooked: import them first."""
        self._activate()
        autotuner = _autotuner_class()
        for cls in [autotuner, *_subclasses(autotuner)]:
            self._patch(cls)
        if support is not None:
            for tuner_cls in support.classes:
                for cls in [tuner_cls, *_subclasses(tuner_cls)]:
                    self._patch(cls)
            if support.reset is not None:
                support.reset()
        return self

    def uninstall(self) -> None:
        """Put every patched run() back."""
        global _active_hook
        for cls, original in self._originals.items():
            setattr(cls, "run", original)
        self._originals.clear()
        if _active_hook is self:
            _active_hook = None

    @property
    def installed(self) -> bool:
        return _active_hook is self

    def _activate(self):
        global _active_hook
        if _active_hook is not None and _active_hook is not self:
            raise RuntimeError(f"an autotune {_active_hook.mode} hook is already installed")
        _active_hook = self

    def _patch(self, cls) -> None:
        original = cls.__dict__.get("run")
        if original is None or cls in self._originals:
            return
        if getattr(original, "_zlh_autotune_hook", None) is not None:
            raise RuntimeError(f"{cls.__qualname__}.run is already hooked by another "
                               "autotune hook that was never uninstalled")
        hook = self

        @functools.wraps(original)
        def run(tuner, *args, **kwargs):
            cache = getattr(tuner, "__dict__", {}).get("cache")
            if cache is None or isinstance(cache, _CacheView):
                # No instance cache to view, or nested (a subclass calling super().run()).
                return original(tuner, *args, **kwargs)
            return hook._tuned_call(original, tuner, args, kwargs)

        run._zlh_autotune_hook = hook
        self._originals[cls] = original
        cls.run = run

    def _state(self, tuner) -> _TunerState:
        try:
            state = self._tuners.get(tuner)
        except TypeError:
            return _TunerState(kernel_name(tuner))
        if state is None:
            state = _TunerState(kernel_name(tuner))
            self._tuners[tuner] = state
        return state

    def _tuned_call(self, original, tuner, args, kwargs):
        raise NotImplementedError

    def _sweep_begins(self, view: _CacheView) -> None:
        """A miss: the tuner times its configs now (on the device, inside `while_sweeping`
        where the run gives one — its device's lock held exclusive —; each config compiles
        with the lock let go, compile/aside.py)."""
        view.sweep = time.perf_counter()
        if self.while_sweeping is not None:
            view.held.enter_context(self.while_sweeping())
            self.sweep_wait_s += time.perf_counter() - view.sweep
        if view.tuner is not None:
            mark_reset(view.tuner)     # a library tuner may fill its sweep from a cache
            if self.sweep_ms is not None:      # --sweep-ms: a shorter budget per config
                view.held.enter_context(sweep_budget(view.tuner, *split(self.sweep_ms)))

    def _sweep_ends(self, view: _CacheView) -> None:
        view.held.close()
        self.sweep_s += time.perf_counter() - view.sweep
        view.sweep = None

    # -- per-case markers -----------------------------------------------------------------

    def begin_case(self) -> None:
        """Start collecting markers for a new case (call before its first launch)."""
        self._case_markers = []
        self._case_seen = set()

    def take_markers(self) -> list[str]:
        """Marker lines raised since begin_case(), once each; the list is then emptied."""
        lines, self._case_markers, self._case_seen = self._case_markers, [], set()
        return lines

    def run_fields(self) -> dict:
        """Fields for run.json: autotune_mode and, per mode, record or fallback counts."""
        return dict(UNCONTROLLED_FIELDS)


class Unhooked(_TunerHook):
    """`--no-autotune-hooks`: nothing is patched; the library tunes as it does on its own
    (autotune_mode uncontrolled, no record)."""

    def install(self, support=None):
        return self

    def uninstall(self) -> None:
        pass
