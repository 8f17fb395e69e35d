"""Continuous telemetry beside the work it watches: a reusable context manager.

    from harness.telemetry import watch

    with watch(directory, backend, devices=0, interval_s=5.0) as watcher:
        ...                      # the work: a bench, an A/B, a batch, one card of a campaign
    watcher.summary()            # for run.json / a report: samples, clock spread, error

`watch(directory, backend, devices, interval_s, env)`:

* `directory` — where `telemetry.tsv` (format: `harness.telemetry.tsv`) or, when nothing can be
  read, `telemetry.err` (the reason, one line per device) is written. Created if missing.
* `backend` — a `backends.Backend`; `devices` — one logical index or a list of them (a
  campaign watching several cards passes them all: one file, a `device` column).
* `interval_s` — seconds between samples; 0 (or less) turns telemetry off: no thread, no file.
* `env` — the environment the watched work sees (its visibility variable decides which
  physical device a logical index is); default: this process's. Pass the children's when
  the work runs in child processes with another visibility.

The watcher samples at start, every `interval_s`, and once more at exit, from a daemon thread
that sleeps in `Event.wait` (no GIL held) and whose reads are NVML calls through ctypes (the
GIL is released while the driver answers; nothing synchronises the device) or a vendor tool
in a child process. Its own host cost per sample is written in the `cost_us` column. Nothing
here raises into the watched work: a failure becomes a line in `telemetry.err`, and the work
runs exactly as it would without telemetry.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

import backends

from backends.telemetry import TelemetryUnavailable

from . import tsv

MAX_FAILURES = 3        # consecutive failed reads after which a device is no longer sampled


class TelemetryWatcher:
    def __init__(self, directory, backend, devices: int | Sequence[int] = 0,
                 interval_s: float = 5.0, env: Mapping[str, str] | None = None):
        self.directory = Path(directory)
        self.backend = backend
        self.devices = [devices] if isinstance(devices, int) else list(devices)
        self.interval_s = float(interval_s)
        self.env = env
        self.sources: list[tuple[int, str, object]] = []     # (logical, physical, source)
        self.errors: list[str] = []
        self.points = 0
        self._failures: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.directory / tsv.FILE

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0

    # ---- life cycle ---------------------------------------------------------------------------
    def start(self) -> "TelemetryWatcher":
        if not self.enabled:
            return self
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._open_sources()
            if self.sources:
                with open(self.path, "a", encoding="utf-8") as handle:
                    if handle.tell() == 0:
                        handle.write(tsv.header())
                self._thread = threading.Thread(target=self._loop, name="zlh-telemetry",
                                                daemon=True)
                self._thread.start()
        except Exception as exc:  # noqa: BLE001 - telemetry never costs the work
            self._error(f"telemetry could not start: {type(exc).__name__}: {exc}")
        return self

    def stop(self) -> None:
        """Take the last sample and end the thread (at most a few seconds for a stuck tool)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15.0)
            self._thread = None
        for _, _, source in self.sources:
            try:
                source.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "TelemetryWatcher":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # ---- sampling -----------------------------------------------------------------------------
    def _open_sources(self) -> None:
        for index in self.devices:
            try:
                physical = self.backend.physical_device(index, self.env)
                source = self.backend.telemetry_source(index, self.env)
            except TelemetryUnavailable as exc:
                self._error(f"device {index}: telemetry unavailable: {exc}")
                continue
            self.sources.append((index, physical, source))

    def _loop(self) -> None:
        while True:
            self.sample_once()
            if self._stop.wait(self.interval_s):
                break
        self.sample_once()

    def sample_once(self) -> None:
        """One line per sampled device (public for tests and for one-off snapshots)."""
        lines = []
        for index, physical, source in list(self.sources):
            started = time.perf_counter()
            try:
                sample = source.read()
            except Exception as exc:  # noqa: BLE001 - a reason in telemetry.err, never a raise
                self._failed(index, physical, source, exc)
                continue
            self._failures[index] = 0
            cost_us = (time.perf_counter() - started) * 1e6
            lines.append(tsv.line(time.time(), index, physical, sample,
                                  getattr(source, "name", "?"), cost_us))
        if lines:
            with self._lock, open(self.path, "a", encoding="utf-8") as handle:
                handle.writelines(lines)
            self.points += len(lines)

    def _failed(self, index: int, physical: str, source, exc: Exception) -> None:
        count = self._failures.get(index, 0) + 1
        self._failures[index] = count
        self._error(f"device {index} ({physical}): read failed: {type(exc).__name__}: {exc}")
        if count >= MAX_FAILURES:
            self.sources = [s for s in self.sources if s[0] != index]
            self._error(f"device {index}: {MAX_FAILURES} failed reads in a row; no longer "
                        f"sampled")

    def _error(self, text: str) -> None:
        self.errors.append(text)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with self._lock, open(self.directory / tsv.ERROR_FILE, "a", encoding="utf-8") as h:
                h.write(text + "\n")
        except OSError:
            pass

    # ---- what was seen ------------------------------------------------------------------------
    def summary(self) -> dict:
        """For run.json: where the file is, the interval, errors and the clock summary."""
        if not self.enabled:
            return {"interval_s": self.interval_s, "file": None, "error": "off"}
        out = {"interval_s": self.interval_s,
               "file": tsv.FILE if self.path.exists() else None,
               "error": "; ".join(self.errors) or None,
               "devices": {str(i): p for i, p, _ in self.sources}}
        out.update(tsv.summarize(tsv.read(self.path)))
        return out


def watch(directory, backend, devices: int | Sequence[int] = 0, interval_s: float = 5.0,
          env: Mapping[str, str] | None = None) -> TelemetryWatcher:
    """A `TelemetryWatcher`, to be used as a context manager (see the module's docstring)."""
    return TelemetryWatcher(directory, backend, devices, interval_s, env)


def snapshot(backend, index: int, env: Mapping[str, str] | None = None) -> dict | None:
    """One pinned sample now, as a dict (run.json's telemetry before/after); None when the
    backend has no telemetry here."""
    try:
        source = backend.telemetry_source(index, env)
    except TelemetryUnavailable:
        return None
    try:
        sample = source.read().to_dict()
        sample["physical"] = backend.physical_device(index, env)
        return sample
    except Exception:  # noqa: BLE001
        return None
    finally:
        try:
            source.close()
        except Exception:  # noqa: BLE001
            pass


def watch_for(directory, backend_name: str | None, device: int | None, interval_s: float,
              env: Mapping[str, str] | None = None) -> TelemetryWatcher:
    """A watcher for work that runs in child processes (`zlh ab`, batches): the backend by
    name (None: the one `zlh bench` would detect) and the logical device the children use
    (None: the first visible, 0). An unknown backend leaves the children to report it."""
    try:
        backend = backends.backend_for(backend_name)
    except backends.UnknownBackend:
        return TelemetryWatcher(directory, None, [], 0.0, env)
    return TelemetryWatcher(directory, backend, device if device is not None else 0,
                            interval_s, env)
