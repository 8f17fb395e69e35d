"""Record: the config each tuned call actually used, per (kernel, key).

After a call the recorder reads back `tuner.best_config`, the config this call launched,
and never infers it from keys added to the cache (a warm cache adds none).
"""
from __future__ import annotations

import atexit
import json
import sys
from pathlib import Path

from ...common.errors import one_line
from ...common.files import atomic_write_json
from .hooks import _NO_KEY, _CacheView, _TunerHook, _viewing
from .records import META_FILE, RECORDS_FILE, SCHEMA_VERSION, config_to_dict, key_str


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

    def install(self, support=None):
        super().install(support)
        if not self._at_exit:
            atexit.register(self._write_at_exit)
            self._at_exit = True
        return self

    def uninstall(self) -> None:
        super().uninstall()
        if self._at_exit:              # before writing: a failed write is reported once
            atexit.unregister(self._write_at_exit)
            self._at_exit = False
        if self._dirty:
            self.write()

    @property
    def records(self) -> dict:
        with self._lock:
            return json.loads(json.dumps(self._records))

    def _tuned_call(self, original, tuner, args, kwargs):
        view = _CacheView(tuner.cache, hook=self)
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
        import triton  # heavy, and absent where nothing compiles: imported only where used

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
