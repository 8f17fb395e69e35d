"""Each side compiles an op's kernels once per A/B, not once per round.

A side's first run of an op keeps its Triton compile cache past its end
(`--keep-compile-cache`: <run out>/.compile-cache-<stamp>); that side's later runs of the op
load from it (`--compile-cache DIR`). Triton's cache key covers the kernel's source, the
compile options, the compiler's own hash and its environment switches, so a hit is the binary
this run would have compiled: each side's runs still use that side's compiler (its own cache,
never the other side's), and every run still loads the binary anew in its own process and
captures its IR (the compile listener reports cache hits). What a round saves is the compile
itself (seconds per kernel), which a round re-did for nothing. The kept caches go when the
op's rounds end (`drop`), with what a run asked to keep one left where an interrupt or a crash
stopped it before it was known; a first run that kept none (it failed before compiling) leaves
the next one to keep its own."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

from ..compile.caches import KEPT_PREFIX, remove_kept
from ..run.options import BenchOptions


class SideCaches:
    """The kept compile cache of every (op, side) of an A/B (both sides may run at once)."""

    def __init__(self):
        self._kept: dict[tuple[str, str], Path] = {}
        self._keeping: dict[str, set[Path]] = {}    # op: the run folders asked to keep one
        self._lock = threading.Lock()

    def options(self, op: str, side: str, options: BenchOptions) -> BenchOptions:
        """A run's options: load from the side's kept cache, or keep this run's."""
        if options.compile_cache or options.keep_compile_cache:
            return options                       # the caller chose already
        with self._lock:
            kept = self._kept.get((op, side))
            if (kept is None or not kept.is_dir()) and options.out:
                self._keeping.setdefault(op, set()).add(Path(options.out))
        if kept is not None and kept.is_dir():
            return options.replace(compile_cache=str(kept))
        return options.replace(keep_compile_cache=True)

    def ran(self, op: str, side: str, out: Path) -> None:
        """After a run writing under `out`: the cache it kept, if it was asked to keep one."""
        with self._lock:
            known = self._kept.get((op, side))
            if known is not None and known.is_dir():
                return
            kept = sorted(Path(out).glob(KEPT_PREFIX + "*"), key=lambda p: p.stat().st_mtime)
            if kept:
                self._kept[(op, side)] = kept[-1]
                for stale in kept[:-1]:          # an attempt's before it
                    shutil.rmtree(stale, ignore_errors=True)

    def drop(self, op: str) -> None:
        """The op's kept caches, removed (its rounds are over), also those of runs that were
        stopped before `ran` (an interrupt, a crash)."""
        with self._lock:
            gone = [key for key in self._kept if key[0] == op]
            folders = [self._kept.pop(key) for key in gone]
            outs = self._keeping.pop(op, ())
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        for out in outs:
            remove_kept(out)
