"""Replay: force the recorded config for every recorded key; tune live, with a marker,
where that cannot be done."""
from __future__ import annotations

from pathlib import Path

from ...common.errors import one_line
from ...common.files import atomic_write_json
from ...common.markers import REPLAY_FALLBACK, marker
from .hooks import _NO_KEY, _CacheView, _TunerHook, _TunerState, _viewing
from .records import (COMPILE_FAILED, KEY_MISSING, META_FILE, NO_EVICT, SCHEMA_VERSION,
                      _key_token, config_from_dict, key_str, load_record_dir, records_digest)


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
        view = _CacheView(tuner.cache, force=lambda key: self._recorded_config(tuner, state, key),
                          hook=self)
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
