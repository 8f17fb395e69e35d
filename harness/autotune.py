"""Autotune record / replay, in-process.

Two runs of the same code can autotune to different configs, and that difference swamps the
change under test. So side A records the config each tuned call actually used, per
(kernel, key), and side B forces exactly those configs.

How it hooks in: the `run()` of Triton's `Autotuner` (and of every loaded subclass that
overrides it, FlagGems' `LibTuner` among them) is wrapped. For the length of one call the
tuner's `cache` is replaced by a `_CacheView`, which

- notes the key the tuner itself looked up (so key computation stays the tuner's own, in
  every Triton and FlagGems version), and
- on replay, answers "cached" with the recorded config for a recorded key, even when the
  real cache already holds another one. The real cache is never written with a forced
  config: FlagGems' `ConfigCache` is a SQL table where the first writer wins, so a write
  would not take effect there and would leak into later, unrelated runs.

After a call, the recorder reads back `tuner.best_config`, the config this call launched,
and never infers it from keys added to the cache (a warm cache adds none).

FlagGems' `LibEntry` sits outside the tuner and, after the first call per argument
signature, launches its cached kernel without calling the tuner at all. Installing a hook
therefore clears every LibEntry dispatch cache, so the next call goes through the tuner.
Install before the first launch of the run.

Files, under the run directory:

    autotune/records.json   {"schema_version": 1, "kernels": {kernel: {key: config}}}
    autotune/meta.json      {"schema_version": 1, "mode": "record", "backend": ..., ...}
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import hashlib
import importlib
import inspect
import json
import numbers
import os
import sys
import threading
import weakref
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .atomic import atomic_write_json
from .errors import UsageError, one_line
from .markers import REPLAY_FALLBACK, marker

SCHEMA_VERSION = 1
RECORDS_FILE = Path("autotune") / "records.json"
META_FILE = Path("autotune") / "meta.json"
KEY_MISSING = "key_missing"
COMPILE_FAILED = "compile_failed"
NO_EVICT = "_no_evict"
LIBENTRY_MODULE = "flag_gems.utils.libentry"

UNCONTROLLED_FIELDS = {"autotune_mode": "uncontrolled"}

# Config fields kept in a record besides kwargs, in the order Triton's Config takes them.
_CONFIG_FIELDS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "ir_override")
_NO_KEY = object()
_active_hook = None


# ---------------------------------------------------------------------------------------
# Serialisation


def key_str(key) -> str:
    """A tuning key as a deterministic JSON-safe string, e.g. "(64, 64, 'torch.float16')".

    Record and replay both derive it from the key the tuner looked up, so they match as long
    as the tuner computes the same key (the same shape, dtypes and key strategy).
    """
    items = key if isinstance(key, tuple) else (key,)
    return repr(tuple(_plain(item) for item in items))


def _plain(value):
    """A key element as a plain Python value whose repr does not vary between runs."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "dtype") and hasattr(value, "shape"):      # a tensor used as a key
        return f"tensor({value.dtype}, {tuple(value.shape)})"
    return str(value)


def _key_token(key) -> str:
    """The key as one marker token: elements joined with '/', e.g. 64/64/torch.float16."""
    items = key if isinstance(key, tuple) else (key,)
    return "/".join(str(_plain(item)) for item in items) or "-"


def kernel_name(tuner) -> str:
    """A stable name for the kernel under a tuner: module and qualified name of the Python
    function at the bottom of the wrapper chain (Autotuner -> Heuristics -> JITFunction ->
    function). Stable across processes, unlike object ids or cache hashes."""
    fn, depth = tuner, 0
    while not inspect.isfunction(fn) and hasattr(fn, "fn") and depth < 16:
        fn, depth = fn.fn, depth + 1
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}.{name}"


def config_to_dict(config) -> dict:
    """A triton.Config as JSON. A pre_hook cannot be stored, only flagged: replay takes it
    back from the kernel's own config with the same parameters."""
    out = {"kwargs": _json_safe(dict(config.kwargs))}
    for name in _CONFIG_FIELDS:
        value = getattr(config, name, None)
        if value is not None or name in ("num_warps", "num_stages", "num_ctas"):
            out[name] = _json_safe(value)
    out["pre_hook"] = getattr(config, "pre_hook", None) is not None
    return out


def _json_safe(value):
    return json.loads(json.dumps(value, default=str))


def _comparable(entry: dict) -> dict:
    """A record without the pre_hook flag and without unset fields, for matching."""
    return {k: v for k, v in entry.items() if k != "pre_hook" and v is not None}


def config_from_dict(entry: dict, candidates=()):
    """Rebuild a recorded config.

    A candidate (the tuner's own configs) with the same parameters is returned itself, so
    its pre_hook comes along, as FlagGems' LibTuner does for configs read from its SQL cache.
    Raises ValueError when the config cannot be represented here: it had a pre_hook and no
    candidate matches, or it sets a field this Triton's Config does not take.
    """
    import triton

    want = _comparable(entry)
    for candidate in candidates:
        if _comparable(config_to_dict(candidate)) == want:
            return candidate
    if entry.get("pre_hook"):
        raise ValueError("the recorded config had a pre_hook and none of the kernel's "
                         "configs has the same parameters")
    accepted = inspect.signature(triton.Config.__init__).parameters
    fields = {}
    for name in _CONFIG_FIELDS:
        value = entry.get(name)
        if value is None:
            continue
        if name not in accepted:
            raise ValueError(f"this Triton's Config has no {name} (recorded {name}={value})")
        fields[name] = value
    return triton.Config(dict(entry.get("kwargs", {})), **fields)


# ---------------------------------------------------------------------------------------
# The cache view and the run() patch


class _CacheView:
    """Stands in for a tuner's `cache` during one call.

    `force(key)` returns the config to serve for a key, or None to defer to the real cache.
    Writes always go to the real cache; `served` is the forced config handed out, if any.
    """

    def __init__(self, base, force=None):
        self.base = base
        self.force = force
        self.last_key = _NO_KEY
        self.served = None

    def _forced(self, key):
        self.last_key = key
        return self.force(key) if self.force is not None else None

    def __contains__(self, key):
        return self._forced(key) is not None or key in self.base

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
    tuner.cache = view
    try:
        yield view
    finally:
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
    from triton.runtime.autotuner import Autotuner
    return Autotuner


def _subclasses(cls):
    found, todo = [], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        if sub not in found:
            found.append(sub)
            todo.extend(sub.__subclasses__())
    return found


def clear_libentry_caches(module) -> int:
    """Empty the dispatch cache of every LibEntry of a libentry module; returns how many.

    Uses the module's own `clear_libentry_dispatch_cache` where it has one."""
    entry_cls = getattr(module, "LibEntry", None)
    if entry_cls is None:
        return 0
    clear = getattr(module, "clear_libentry_dispatch_cache", None)
    count = 0
    for obj in gc.get_objects():
        # type(), not isinstance(): the latter reads __class__, which some lazy or
        # deprecated module attributes turn into warnings or errors.
        if not issubclass(type(obj), entry_cls):
            continue
        if clear is not None:
            clear(obj)
        else:
            for cache in getattr(obj, "kernel_cache", ()):
                cache.clear()
            cpu_cache = getattr(obj, "_cpu_cache", None)
            if cpu_cache is not None:
                cpu_cache.clear()
        count += 1
    return count


class _TunerHook:
    """Patches `run()` of the tuner classes; subclasses decide what one tuned call does.

    One hook at a time per process: record and replay in one process would fight over the
    same methods.
    """

    mode = "uncontrolled"

    def __init__(self):
        self._originals: dict[type, object] = {}
        self._tuners = weakref.WeakKeyDictionary()
        self._lock = threading.RLock()
        self._case_markers: list[str] = []
        self._case_seen: set = set()

    # -- installation --------------------------------------------------------------------

    def install(self, import_flag_gems: bool = False):
        """Patch Triton's Autotuner and every loaded subclass that overrides run().

        FlagGems' libentry module is picked up when already imported, or imported here when
        `import_flag_gems` (set FlagGems' cache env first: it opens its tuner DB on import);
        a FlagGems without that module is hooked through Triton's Autotuner alone.
        Tuner classes imported after this call are not hooked: import them first.
        """
        self._activate()
        autotuner = _autotuner_class()
        for cls in [autotuner, *_subclasses(autotuner)]:
            self._patch(cls)
        module = sys.modules.get(LIBENTRY_MODULE)
        if module is None and import_flag_gems:
            try:
                module = importlib.import_module(LIBENTRY_MODULE)
            except ImportError:     # a FlagGems without LibTuner: Triton's Autotuner only
                module = None
        if module is not None:
            self.install_libtuner(module)
        return self

    def install_libtuner(self, module):
        """Hook a libentry-like module: patch `module.LibTuner.run` and clear the dispatch
        cache of its LibEntry objects, so their next call reaches the tuner."""
        self._activate()
        tuner_cls = getattr(module, "LibTuner", None)
        if tuner_cls is not None:
            for cls in [tuner_cls, *_subclasses(tuner_cls)]:
                self._patch(cls)
        clear_libentry_caches(module)
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


# ---------------------------------------------------------------------------------------
# Record


class AutotuneRecorder(_TunerHook):
    """Records kernel -> key -> the config each tuned call used.

    `write()` rewrites both files atomically; it also runs at interpreter exit (a case that
    crashes the process still leaves what was recorded) and at `uninstall()`.
    """

    mode = "record"

    def __init__(self, out_dir, meta: dict):
        super().__init__()
        self.out_dir = Path(out_dir)
        self.meta = dict(meta)
        self._records: dict[str, dict[str, dict]] = {}
        self._conflicts: list[str] = []
        self._dirty = True          # an empty record is still a record run
        self._at_exit = False

    def install(self, import_flag_gems: bool = False):
        super().install(import_flag_gems)
        if not self._at_exit:
            atexit.register(self._write_at_exit)
            self._at_exit = True
        return self

    def uninstall(self) -> None:
        super().uninstall()
        if self._dirty:
            self.write()
        if self._at_exit:
            atexit.unregister(self._write_at_exit)
            self._at_exit = False

    @property
    def records(self) -> dict:
        with self._lock:
            return json.loads(json.dumps(self._records))

    def _tuned_call(self, original, tuner, args, kwargs):
        view = _CacheView(tuner.cache)
        with _viewing(tuner, view):
            result = original(tuner, *args, **kwargs)
        if view.last_key is not _NO_KEY:
            config = getattr(tuner, "best_config", None)
            if config is not None:
                self._note(tuner, view.last_key, config)
        return result

    def _note(self, tuner, key, config) -> None:
        state = self._state(tuner)
        try:
            if state.memo.get(key) is config:       # fast path: launches after the first
                return
        except TypeError:
            pass
        entry = config_to_dict(config)
        with self._lock:
            kernel = self._records.setdefault(state.name, {})
            text = key_str(key)
            previous = kernel.get(text)
            if previous != entry:
                if previous is not None:
                    self._conflicts.append(f"{state.name} {text}")
                kernel[text] = entry
                self._dirty = True
        try:
            state.memo[key] = config
        except TypeError:
            pass

    def write(self) -> None:
        import triton

        with self._lock:
            records = json.loads(json.dumps(self._records))
            conflicts = list(self._conflicts)
            self._dirty = False
        meta = {"schema_version": SCHEMA_VERSION, **self.meta, "mode": "record"}
        meta["versions"] = {"triton": triton.__version__, **dict(meta.get("versions") or {})}
        meta["kernels"] = len(records)
        meta["keys"] = sum(len(keys) for keys in records.values())
        if conflicts:
            meta["conflicts"] = conflicts
        atomic_write_json(self.out_dir / RECORDS_FILE,
                          {"schema_version": SCHEMA_VERSION, "kernels": records})
        atomic_write_json(self.out_dir / META_FILE, meta)

    def _write_at_exit(self) -> None:
        if self._dirty:
            try:
                self.write()
            except Exception as exc:    # exiting anyway: say so, never mask the exit
                print(f"autotune records not written: {one_line(exc)}", file=sys.stderr)

    def run_fields(self) -> dict:
        with self._lock:
            keys = sum(len(k) for k in self._records.values())
            return {"autotune_mode": "record",
                    "autotune_records": {"kernels": len(self._records), "keys": keys}}


# ---------------------------------------------------------------------------------------
# Replay


def records_digest(record_dir) -> str | None:
    """sha256 of a record run's records file: what "pinned to the same record" compares, so
    a run directory copied to another machine or moved keeps its identity. None when the
    run has no records file."""
    path = Path(record_dir) / RECORDS_FILE
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def load_record_dir(record_dir, backend: str) -> tuple[dict, dict]:
    """(meta, records) of a record run, or UsageError with a one-line reason."""
    path = Path(record_dir)
    where = f"--replay {path}"
    if not path.is_dir():
        raise UsageError(f"{where}: no such run directory")
    meta = _read_json(path / META_FILE, where)
    if meta is None:
        if _run_json_mode(path) == "replay":
            raise UsageError(f"{where}: that run replayed configs itself; "
                             "replay from the record run it replayed")
        raise UsageError(f"{where}: not a record run (no {META_FILE.as_posix()})")
    mode = meta.get("mode")
    if mode == "replay":
        raise UsageError(f"{where}: that run replayed configs from {meta.get('replay_from')}; "
                         "replay from that record run instead")
    if mode != "record":
        raise UsageError(f"{where}: not a record run (autotune mode {mode!r})")
    recorded = meta.get("backend")
    if recorded != backend:
        raise UsageError(f"{where}: recorded on backend {recorded}, this run is on backend "
                         f"{backend}; replay across backends is refused")
    records = _read_json(path / RECORDS_FILE, where)
    if records is None:
        raise UsageError(f"{where}: record run has no {RECORDS_FILE.as_posix()}")
    if not isinstance(records.get("kernels"), dict):
        raise UsageError(f"{where}: {RECORDS_FILE.as_posix()} has no 'kernels' table")
    return meta, records


def _read_json(path: Path, where: str):
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{where}: cannot read {path.name}: {one_line(exc)}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: {path.name} is not a JSON object")
    return data


def _run_json_mode(path: Path):
    try:
        return json.loads((path / "run.json").read_text(encoding="utf-8")).get("autotune_mode")
    except (OSError, ValueError, AttributeError):
        return None


class AutotuneReplayer(_TunerHook):
    """Forces the recorded config for every recorded key; tunes live, with a marker, where
    it cannot: `key_missing` (never recorded) or `compile_failed` (the recorded config fails
    to build or run here; `_no_evict` when the tuner's cache holds an entry for the key that
    it cannot drop, so the fallback config came from that cache, not from a fresh tune).

    Writes no records.
    """

    mode = "replay"

    def __init__(self, record_dir, backend: str):
        super().__init__()
        self.record_dir = Path(record_dir)
        self.backend = backend
        self.meta, records = load_record_dir(record_dir, backend)
        self.records_sha256 = records_digest(record_dir)
        self._records: dict = records["kernels"]
        self._broken: dict[tuple, tuple[str, str | None]] = {}   # (kernel, key) -> reason
        self._counted: set = set()
        self.fallback_counts: dict[str, int] = {}

    def _recorded_config(self, tuner, state: _TunerState, key):
        """The config to force for this key, or None (not recorded, or known broken)."""
        try:
            if key in state.memo:
                return state.memo[key]
        except TypeError:
            pass
        text = key_str(key)
        config = None
        entry = self._records.get(state.name, {}).get(text)
        if entry is not None and (state.name, text) not in self._broken:
            try:
                config = config_from_dict(entry, getattr(tuner, "configs", ()))
            except ValueError as exc:
                self._broken[(state.name, text)] = (COMPILE_FAILED, str(exc))
        try:
            state.memo[key] = config
        except TypeError:
            pass
        return config

    def _tuned_call(self, original, tuner, args, kwargs):
        state = self._state(tuner)
        view = _CacheView(tuner.cache, force=lambda key: self._recorded_config(tuner, state, key))
        try:
            with _viewing(tuner, view):
                result = original(tuner, *args, **kwargs)
        except Exception as exc:
            if view.served is None:
                raise
            # The forced config failed to compile or run: drop it, tune live.
            key = view.last_key
            reason = COMPILE_FAILED if _evict(tuner.cache, key) else COMPILE_FAILED + NO_EVICT
            text = key_str(key)
            self._broken[(state.name, text)] = (reason, one_line(exc))
            try:
                state.memo[key] = None
            except TypeError:
                pass
            self._fallback(reason, state.name, key, one_line(exc))
            return original(tuner, *args, **kwargs)
        if view.last_key is not _NO_KEY and view.served is None:
            key = view.last_key
            reason, detail = self._broken.get((state.name, key_str(key)), (KEY_MISSING, None))
            self._fallback(reason, state.name, key, detail)
        return result

    def _fallback(self, reason: str, kernel: str, key, detail: str | None) -> None:
        text = key_str(key)
        with self._lock:
            ident = (reason, kernel, text)
            if ident not in self._counted:
                self._counted.add(ident)
                self.fallback_counts[reason] = self.fallback_counts.get(reason, 0) + 1
            if ident in self._case_seen:
                return
            self._case_seen.add(ident)
            self._case_markers.append(marker(REPLAY_FALLBACK, detail=detail, reason=reason,
                                             kernel=kernel, key=_key_token(key)))

    def write_meta(self, out_dir) -> None:
        """Mark a run directory as a replay run, so that replaying it is refused with a
        pointer to the original record run. Writes no records."""
        atomic_write_json(Path(out_dir) / META_FILE, {
            "schema_version": SCHEMA_VERSION, "mode": "replay",
            "replay_from": str(self.record_dir.resolve()), "backend": self.backend,
            "provider": self.meta.get("provider"), "op": self.meta.get("op"),
            "fallbacks": dict(self.fallback_counts)})

    def run_fields(self) -> dict:
        counts = {KEY_MISSING: 0, COMPILE_FAILED: 0, **self.fallback_counts}
        return {"autotune_mode": "replay", "autotune_replay_from": str(self.record_dir),
                "autotune_replay_records_sha256": self.records_sha256,
                "autotune_fallbacks": counts}


def _evict(cache, key) -> bool:
    """Drop a key from a tuner's real cache. False when the cache holds it and cannot drop
    it (FlagGems' ConfigCache has no deletion), so a retry reads that entry back."""
    try:
        if key not in cache:
            return True
        del cache[key]
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------
# Compiler and tuner caches


def cache_env(run_dir, isolate_tuner: bool, environ=None) -> dict:
    """Environment for a run's caches; set it before importing triton-using code or flag_gems.

    Returns {"env": {VAR: value, or None to unset}, "tuner_cache": caliber string,
    "private_dirs": [directories to delete after the run unless the caches are kept]}.

    Triton's compile cache (and its autotune disk cache) goes to a private directory, so
    every run compiles (and every compile is seen). FlagGems' tuner DB is shared by default:
    it lives in $FLAGGEMS_DB_URL, else $FLAGGEMS_CACHE_DIR/config_cache, else
    ~/.flaggems/config_cache, and a warm DB picks configs without measuring. Isolating it
    points FLAGGEMS_CACHE_DIR at a private directory and unsets FLAGGEMS_DB_URL, which
    would otherwise win.
    """
    environ = os.environ if environ is None else environ
    run_dir = Path(run_dir).resolve()
    triton_dir = run_dir / ".triton_cache"
    env: dict[str, str | None] = {"TRITON_CACHE_DIR": str(triton_dir)}
    private = [str(triton_dir)]
    if isolate_tuner:
        gems_dir = run_dir / ".flaggems_cache"
        env["FLAGGEMS_CACHE_DIR"] = str(gems_dir)
        env["FLAGGEMS_DB_URL"] = None
        private.append(str(gems_dir))
        tuner_cache = "isolated"
    else:
        url = environ.get("FLAGGEMS_DB_URL")
        if url:
            where = _redact_url(url)
        else:
            root = environ.get("FLAGGEMS_CACHE_DIR") or str(Path.home() / ".flaggems")
            where = str(Path(root) / "config_cache")
        tuner_cache = f"shared({where})"
    return {"env": env, "tuner_cache": tuner_cache, "private_dirs": private}


def apply_env(env: dict, environ=None) -> None:
    """Set the variables of `cache_env(...)["env"]`; a None value unsets."""
    environ = os.environ if environ is None else environ
    for name, value in env.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value


def _redact_url(url: str) -> str:
    """A DB URL without its password, fit for run.json."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return url
