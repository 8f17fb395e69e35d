"""One run's IR capture: which compiled variants its cases launched, and their IR.

The runner's question is not "what did Triton compile" (an autotune sweep compiles dozens
of configs that never run again) but "what code did the numbers measure". So launches are
counted per (variant, case shape) and sorted into roles (see dump.py): a launch inside a
call of the function under test (`timed_call`) is measured, one elsewhere in the case window
(`begin_case` .. `end_case`) is set-up, one inside an autotuner's config benchmark belongs
to the sweep.

The IR lies in the Triton cache (the run points `TRITON_CACHE_DIR` at a private directory).
A variant's text is read when its case ends, the rest at dump time, so the dump survives a
cache removed after the last case. Launch counts are host-side launches: a device graph
replay does not go through Triton's launcher and is not counted, which is why capture and
eager calls are wrapped too.

Usage (runner):
    capture = IRCapture(run_dir / "ttgir")         # extra_stages=("ptx",) for more
    capture.install()                              # before the op's first kernel compiles
    per case: begin_case(shape, dtype); build inputs; time `capture.timed(fn)`; end_case()
    summary = capture.dump()                       # before the private Triton cache goes
    capture.uninstall()
"""
from __future__ import annotations

import atexit
import hashlib
import sys
from pathlib import Path
from typing import Callable, Sequence

from ...common.files import read_text
from .dump import (NO_CASE, OTHER, SETUP_DIR, SETUP_LAUNCH, SWEEP, TIMED, Observed, index_tsv,
                   naming_md, plan_dump, write_tree)
from .naming import shape_key
from .triton_hooks import observer, timed_call, warn_once
from .tuned_on import TuneOrigins
from .variants import IR_STAGES, Variant

DEFAULT_STAGE = "ttgir"


class IRCapture:
    def __init__(self, out_dir: Path, extra_stages: Sequence[str] = ()):
        self.out_dir = Path(out_dir)
        unknown = [s for s in extra_stages if s not in IR_STAGES]
        if unknown:
            raise ValueError(f"unknown IR stage {', '.join(unknown)}; known: "
                             f"{', '.join(IR_STAGES)}")
        self.stages = tuple(dict.fromkeys((DEFAULT_STAGE, *extra_stages)))
        self.hooks_ok = False
        self.compiled_in: dict[str, set[tuple[str, bool]]] = {}
        self.launches: dict[tuple[str, str], list[int]] = {}
        self.unattributed: dict[str, int] = {}
        self._texts: dict[tuple[str, str], str] = {}   # (hash, stage) -> text, read at case end
        self._case: tuple[str, str] | None = None
        self._case_hashes: set[str] = set()
        self._case_swept: set[str] = set()             # kernels the case's sweeps launched
        self.origins = TuneOrigins()
        self._case_dtypes: dict[tuple[str, str], set[str]] = {}
        self._shapes: dict[str, str] = {}              # shape key -> shape as given
        self._shape_keys: dict[str, str] = {}          # shape as given -> shape key
        self.compile_s = {False: 0.0, True: 0.0}       # swept -> seconds of compiles seen
        self.compiles_timed = 0                        # compiles that came with their times
        self._installed = False
        self._version = 0
        self._dumped_version = -1
        self._last_summary: dict | None = None

    @property
    def variants(self) -> dict[str, Variant]:
        """The variants this capture saw compiled or launched."""
        with observer.lock:
            seen = set(self.compiled_in) | {h for h, _ in self.launches}
            return {h: observer.variants[h] for h in seen if h in observer.variants}

    def stage_dir(self, stage: str) -> Path:
        return self.out_dir if stage == DEFAULT_STAGE else self.out_dir.parent / stage

    # ------------------------------------------------------------------ install
    def install(self) -> bool:
        """Chain the compile listener and the load/launch hooks, mark autotune sweeps,
        dump at interpreter exit. False (after one warning) where this Triton lacks the
        hooks: the run then has no IR, and timing goes on."""
        if not self._installed:
            self.hooks_ok = observer.attach(self)
            if self.hooks_ok:
                atexit.register(self._dump_at_exit)
                self._installed = True
        return self.hooks_ok

    def uninstall(self) -> None:
        if self._installed:
            observer.detach(self)
            atexit.unregister(self._dump_at_exit)
            self._installed = False

    # ------------------------------------------------------------------ cases
    @staticmethod
    def timed(fn: Callable[[], object]) -> Callable[[], object]:
        """`fn` (a call of the function under test) with its launches counted as measured."""
        return timed_call(fn)

    def begin_case(self, shape: str, dtype: str) -> None:
        """Launches from now until end_case() belong to a case of this shape."""
        shape = str(shape)
        with observer.lock:
            key = self._shape_keys.get(shape)
            if key is None:
                key = shape_key(shape)
                if key == SETUP_DIR:
                    key = f"shape{key}"
                if key in self._shapes and self._shapes[key] != shape:
                    key = f"{key}~{hashlib.sha1(shape.encode()).hexdigest()[:8]}"
                self._shapes[key], self._shape_keys[shape] = shape, key
            self._case = (key, str(dtype))
            self._case_swept = set()

    def end_case(self) -> list[str]:
        """Close the case and keep the IR of what it launched, so the dump no longer depends
        on the Triton cache directory still being there. Returns the case's marker lines:
        a config it ran that another case's sweep chose (tuned_on.py)."""
        with observer.lock:
            if self._case is None:
                return []
            shape, dtype = self._case
            measured = [observer.variants[h] for h in sorted(self._case_hashes)
                        if h in observer.variants and self.launches[(h, shape)][TIMED] > 0]
            lines = self.origins.case_ended(f"{dtype} {self._shapes[shape]}",
                                            self._case_swept, measured)
            self._case = None
            # A kernel compiled before any capture listened has no description: skip it.
            fresh = [(h, s) for h in self._case_hashes for s in self.stages
                     if (h, s) not in self._texts and h in observer.variants]
            self._case_hashes = set()
            paths = {(h, s): observer.variants[h].ir_paths.get(s) for h, s in fresh}
        for key, path in paths.items():
            text = _read(path)
            if text is not None:
                self._texts[key] = text
        return lines

    # ------------------------------------------------------------------ observer calls
    def _compiled(self, key: str, swept: bool, seconds: float | None = None) -> None:
        case = self._case
        self.compiled_in.setdefault(key, set()).add((case[0] if case else NO_CASE, swept))
        if seconds is not None:
            self.compile_s[swept] += seconds
            self.compiles_timed += 1
        self._version += 1

    def compile_times(self) -> dict:
        """Seconds Triton spent compiling kernels while this capture listened (its own
        `times`: the source-to-binary stages, not the JIT's Python side or the load), in
        autotune sweeps and outside them, and how many compiles they cover; {} when Triton
        gave no times."""
        with observer.lock:
            if not self.compiles_timed:
                return {}
            return {"kernel_compile_s": round(self.compile_s[False] + self.compile_s[True], 3),
                    "sweep_compile_s": round(self.compile_s[True], 3),
                    "compiles": self.compiles_timed}

    def _launched(self, key: str | None, name: str, swept: bool, timed: bool = False) -> None:
        if key is None:
            self.unattributed[name] = self.unattributed.get(name, 0) + 1
            return
        case = self._case
        shape = case[0] if case else NO_CASE
        counts = self.launches.setdefault((key, shape), [0, 0, 0, 0])
        if swept:
            counts[SWEEP] += 1
            if case is not None:
                self._case_swept.add(name)          # a launch's name is its variant's kernel
        elif case is None:
            counts[OTHER] += 1
        else:
            counts[TIMED if timed else SETUP_LAUNCH] += 1
            self._case_hashes.add(key)
            self._case_dtypes.setdefault((key, shape), set()).add(case[1])
        self._version += 1

    # ------------------------------------------------------------------ dump
    def _dump_at_exit(self) -> None:
        try:
            self.dump()
        except Exception as exc:  # noqa: BLE001 - exit must go on
            print(f"zlh: IR dump at exit failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    def measured_hashes(self) -> set[str]:
        with observer.lock:
            return {h for (h, _), c in self.launches.items() if c[TIMED] > 0}

    def dump(self) -> dict:
        """Write each stage's tree afresh (built beside it, then swapped in) and return the
        primary stage's summary (variants, measured/setup counts, files, sweep losers,
        convert_layout totals, hooks_ok, unattributed launches).

        Idempotent: with nothing new since the last dump, nothing is rewritten."""
        with observer.lock:
            if self._dumped_version == self._version and self._last_summary is not None \
                    and self.out_dir.is_dir():
                return dict(self._last_summary)
            version = self._version
            seen = Observed(self.variants, {h: set(v) for h, v in self.compiled_in.items()},
                            {k: list(v) for k, v in self.launches.items()},
                            {k: set(v) for k, v in self._case_dtypes.items()},
                            dict(self._shapes), sum(self.unattributed.values()))
        summary = None
        for stage in self.stages:
            texts = {h: self._texts.get((h, stage)) or _read(v.ir_paths.get(stage))
                     for h, v in seen.variants.items()}
            plan = plan_dump(seen, texts, stage, self.hooks_ok)
            extra = ({"index.tsv": index_tsv(plan.rows),
                      "naming.md": naming_md(plan.legends, seen.shapes, plan.summary)}
                     if stage == DEFAULT_STAGE else {})
            write_tree(self.stage_dir(stage), plan.files, extra)
            if stage == DEFAULT_STAGE:
                summary = dict(plan.summary, stages=list(self.stages), **self.compile_times())
        with observer.lock:
            self._dumped_version, self._last_summary = version, dict(summary)
        return summary


def _read(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return read_text(path)
    except OSError:
        return None


__all__ = ["IRCapture", "DEFAULT_STAGE", "warn_once"]
