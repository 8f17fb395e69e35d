"""TTGIR capture: which compiled variants ran in measured cases, and their IR.

The runner's question is not "what did Triton compile" (an autotune sweep compiles dozens
of configs that never run again) but "what code did the numbers measure". So:

- a compile listener (`triton.knobs.compilation.listener`, chained after any listener
  already set) records every compiled variant and where its TTGIR lies in the Triton
  cache;
- a kernel-load hook maps the loaded function handle to the variant's hash, and a
  launch-enter hook counts launches per (variant, case shape), classified as
  `measured` (inside begin_case/end_case), `sweep` (inside `Autotuner._bench`, i.e. while
  an autotuner benchmarks one config) or `other` (outside any case: input builders,
  checks run before the case began);
- `dump()` writes `ttgir/<shape>/<kernel>/<variant>.ttgir` for variants launched in
  measured cases only, `index.tsv` for every variant seen, and `naming.md`. It also runs
  at interpreter exit, so the IR of a run that crashed with an exception is kept.

The TTGIR lies in the Triton cache (the run points `TRITON_CACHE_DIR` at a private
directory). A measured variant's text is read when its case ends, the rest at dump time,
so the dump survives a cache removed after the last case. Launch counts are host-side
launches: a device graph replay does not go through Triton's launcher and is not counted,
which is why the runner marks the whole measured part of a case (first call included).

Variants and function handles are kept process-wide: Triton's in-memory kernel cache
lets a later op in the same process launch a kernel that compiled and loaded during an
earlier op, and that op's capture must still know it.

Triton 3.6 and 3.9 both expose `knobs.runtime.launch_enter_hook` and
`kernel_load_end_hook` as `HookChain`s; a plain attribute holding one callable (older
builds) is chained by hand. A Triton without a compile listener gets one warning and no
capture: timing goes on.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import sys
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .atomic import atomic_write_text
from .fingerprint import convert_layout_count
from .ir_naming import (VariantParams, format_value, legend, name_variants, safe_component,
                        shape_key)

NO_CASE = "-"
SWEEP_LOSER = "sweep loser"
DUMPED = "dumped"
NOT_MEASURED = "not measured"
TTGIR_MISSING = "ttgir missing"
INDEX_COLUMNS = ("shape", "kernel", "file", "status", "case_dtypes", "launches", "sweep_launches",
                 "other_launches", "num_warps", "num_stages", "num_ctas", "maxnreg",
                 "constexprs", "specialization", "signature", "convert_layout", "hash")
# Compile options that select a variant at the source level (autotune configs and launch
# kwargs set them); part of the stable id that names use as a last resort.
_STABLE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                   "launch_cooperative_grid", "launch_pdl", "ir_override")

_warned: set[str] = set()


def warn_once(message: str) -> None:
    """One warning per distinct message per process: a missing hook is not news twice."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


# --------------------------------------------------------------------------- sweep marking
# `Autotuner._bench` benchmarks exactly one config; everything launched or compiled inside
# it belongs to the sweep. The patch is process-wide and reference-counted so several
# captures (or a capture and a test) can coexist.
_sweep_depth = 0
_bench_patches: dict[type, Callable] = {}
_bench_users = 0


def in_sweep() -> bool:
    return _sweep_depth > 0


def _mark_sweep(bench: Callable) -> Callable:
    @functools.wraps(bench)
    def _bench(self, *args, **kwargs):
        global _sweep_depth
        _sweep_depth += 1
        try:
            return bench(self, *args, **kwargs)
        finally:
            _sweep_depth -= 1
    _bench.__zlh_sweep__ = True
    return _bench


def _autotuner_classes() -> list[type]:
    try:
        from triton.runtime.autotuner import Autotuner
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


# --------------------------------------------------------------------------- variants
@dataclass
class Variant:
    """One compiled kernel variant, as the compile listener saw it."""
    hash: str
    kernel: str
    constexprs: dict[str, Any]
    signature: dict[str, str]
    spec: dict[str, str]
    num_warps: int | None
    num_stages: int | None
    num_ctas: int | None
    maxnreg: int | None
    dtype: str
    stable_id: str
    ttgir_path: str | None

    def params(self) -> VariantParams:
        return VariantParams(key=self.hash, kernel=self.kernel, constexprs=self.constexprs,
                             num_warps=self.num_warps, num_stages=self.num_stages,
                             num_ctas=self.num_ctas, maxnreg=self.maxnreg, dtype=self.dtype,
                             spec=self.spec, stable_id=self.stable_id)


def _plain(value: Any) -> Any:
    """Constexpr values as plain data (tl.constexpr, tl.dtype -> their value / name)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    inner = getattr(value, "value", None)
    if inner is not None and isinstance(inner, (bool, int, float, str)):
        return inner
    return str(value)


def _attr_tag(name: str, value: Any) -> str:
    if name == "tt.divisibility":
        return f"div{value}"
    return f"{name.rsplit('.', 1)[-1]}{format_value(value)}"


def describe(src: Any, metadata: dict, metadata_group: dict) -> Variant:
    """A Variant from the compile listener's arguments (ASTSource or IRSource).

    Constants whose argument is declared `tl.constexpr` are constexprs; the others are
    specialisations Triton made on its own (an int equal to 1, a None), reported with the
    divisibility attributes as the variant's specialisation."""
    md = dict(metadata)
    fn = getattr(src, "fn", None)
    arg_names = list(getattr(fn, "arg_names", None) or [])
    declared = set(getattr(fn, "constexprs", None) or [])

    def arg_name(path) -> str:
        if isinstance(path, str):
            return path
        path = tuple(path)
        head = arg_names[path[0]] if path and path[0] < len(arg_names) else str(path[0])
        return head + "".join(f".{i}" for i in path[1:])

    def path_of(key) -> tuple:
        if isinstance(key, str):
            return (arg_names.index(key),) if key in arg_names else (len(arg_names),)
        return tuple(key)

    constexprs: dict[str, Any] = {}
    spec: dict[str, str] = {}
    constants = getattr(src, "constants", None) or {}
    for path, value in sorted(((path_of(k), v) for k, v in constants.items()),
                              key=lambda kv: kv[0]):
        if path and path[0] in declared:
            constexprs[arg_name(path)] = _plain(value)
        else:
            spec[arg_name(path)] = "none" if value is None else f"eq{format_value(_plain(value))}"
    attrs = getattr(src, "attrs", None) or {}
    for path, pairs in sorted(((path_of(k), v) for k, v in attrs.items()),
                              key=lambda kv: kv[0]):
        tags = "".join(_attr_tag(str(p[0]), p[1]) for p in pairs if len(p) == 2)
        if tags:
            spec[arg_name(path)] = tags
    signature = {str(k): str(v) for k, v in (getattr(src, "signature", None) or {}).items()
                 if v != "constexpr"}
    pointers = [t[1:] for t in signature.values() if t.startswith("*")]
    dtype = "_".join(dict.fromkeys(pointers))

    try:
        source_id = src.hash()
    except Exception:  # noqa: BLE001 - no source identity: fall back to the cache hash
        source_id = md.get("hash", "")
    options = {k: md.get(k) for k in _STABLE_OPTIONS if k in md}
    stable = json.dumps([source_id, options], sort_keys=True, default=str)
    ttgir = next((p for name, p in metadata_group.items() if str(name).endswith(".ttgir")),
                 None)
    return Variant(hash=str(md.get("hash", "")), kernel=str(md.get("name") or
                                                            getattr(src, "name", "kernel")),
                   constexprs=constexprs, signature=signature, spec=spec,
                   num_warps=md.get("num_warps"), num_stages=md.get("num_stages"),
                   num_ctas=md.get("num_ctas"), maxnreg=md.get("maxnreg"), dtype=dtype,
                   stable_id=hashlib.sha256(stable.encode()).hexdigest(),
                   ttgir_path=str(ttgir) if ttgir else None)


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
        self.captures: list["IRCapture"] = []
        self.hooks: list[_Hook] = []
        self.compilation: Any = None
        self.listener: Callable | None = None
        self.listener_prev: Any = None
        self.bench_patched = False

    def attach(self, capture: "IRCapture") -> bool:
        with self.lock:
            if not self.captures and not self._install():
                return False
            if capture not in self.captures:
                self.captures.append(capture)
            return True

    def detach(self, capture: "IRCapture") -> None:
        with self.lock:
            if capture in self.captures:
                self.captures.remove(capture)
                if not self.captures:
                    self._uninstall()

    def _install(self) -> bool:
        try:
            import triton
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
    def on_compile(self, *, src=None, metadata=None, metadata_group=None, **_ignored) -> None:
        try:
            variant = describe(src, metadata or {}, metadata_group or {})
        except Exception as exc:  # noqa: BLE001 - never break a compile
            warn_once(f"IR capture: could not read a compiled variant ({type(exc).__name__}: "
                      f"{exc})")
            return
        if not variant.hash:
            return
        swept = in_sweep()
        with self.lock:
            known = self.variants.setdefault(variant.hash, variant)
            if known.ttgir_path is None:
                known.ttgir_path = variant.ttgir_path
            self.by_name.setdefault(known.kernel, set()).add(known.hash)
            for capture in self.captures:
                capture._compiled(known.hash, swept)

    def on_kernel_load(self, module, function, name, metadata_group, hash, *rest) -> None:
        """kernel_load_end_hook(module, function, name, metadata_group, hash)."""
        if function is not None and hash:
            with self.lock:
                self.by_function[function] = hash

    def on_launch(self, metadata) -> None:
        """launch_enter_hook(LazyDict): its `.data` holds name, function and stream
        (`.get()` would also run the kernel's launch_metadata function: not needed)."""
        data = getattr(metadata, "data", metadata)
        if not isinstance(data, dict):
            return
        swept = in_sweep()
        with self.lock:
            key = self.by_function.get(data.get("function"))
            if key is None:
                candidates = self.by_name.get(str(data.get("name")), ())
                key = next(iter(candidates)) if len(candidates) == 1 else None
            for capture in self.captures:
                capture._launched(key, str(data.get("name", "?")), swept)


_observer = _Observer()


# --------------------------------------------------------------------------- capture
class IRCapture:
    """One run's view: which variants its cases launched, and the dump of their TTGIR.

    Usage (runner):
        capture = IRCapture(run_dir / "ttgir")
        capture.install()                      # before the op's first kernel compiles
        per case: begin_case(shape, dtype); <the measured calls>; end_case()
        summary = capture.dump()               # before the private Triton cache goes
        capture.uninstall()
    """

    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)
        self.hooks_ok = False
        # hash -> {(shape, compiled during a sweep)}
        self.compiled_in: dict[str, set[tuple[str, bool]]] = {}
        # (hash, shape) -> [measured, sweep, other]
        self.launches: dict[tuple[str, str], list[int]] = {}
        self.unattributed: dict[str, int] = {}
        self._texts: dict[str, str] = {}             # TTGIR read once its variant was measured
        self._case: tuple[str, str] | None = None
        self._case_hashes: set[str] = set()
        self._case_dtypes: dict[tuple[str, str], set[str]] = {}
        self._shapes: dict[str, str] = {}            # shape key -> shape as given
        self._shape_keys: dict[str, str] = {}        # shape as given -> shape key
        self._installed = False
        self._version = 0
        self._dumped_version = -1
        self._last_summary: dict | None = None

    @property
    def variants(self) -> dict[str, Variant]:
        """The variants this capture saw compiled or launched."""
        with _observer.lock:
            seen = set(self.compiled_in) | {h for h, _ in self.launches}
            return {h: _observer.variants[h] for h in seen if h in _observer.variants}

    # ------------------------------------------------------------------ install
    def install(self) -> bool:
        """Chain the compile listener and the load/launch hooks, mark autotune sweeps,
        dump at interpreter exit. False (after one warning) where this Triton lacks the
        hooks: the run then has no IR, and timing goes on."""
        if not self._installed:
            self.hooks_ok = _observer.attach(self)
            if self.hooks_ok:
                atexit.register(self._dump_at_exit)
                self._installed = True
        return self.hooks_ok

    def uninstall(self) -> None:
        if self._installed:
            _observer.detach(self)
            atexit.unregister(self._dump_at_exit)
            self._installed = False

    # ------------------------------------------------------------------ cases
    def begin_case(self, shape: str, dtype: str) -> None:
        """Launches from now until end_case() are measured launches of this shape."""
        shape = str(shape)
        with _observer.lock:
            key = self._shape_keys.get(shape)
            if key is None:
                key = shape_key(shape)
                if key in self._shapes and self._shapes[key] != shape:
                    key = f"{key}~{hashlib.sha1(shape.encode()).hexdigest()[:8]}"
                self._shapes[key], self._shape_keys[shape] = shape, key
            self._case = (key, str(dtype))

    def end_case(self) -> None:
        """Close the case and keep the TTGIR of what it measured, so the dump no longer
        depends on the Triton cache directory still being there."""
        with _observer.lock:
            self._case = None
            fresh = [h for h in self._case_hashes if h not in self._texts]
            self._case_hashes = set()
            paths = {h: _observer.variants[h].ttgir_path for h in fresh}
        for h, path in paths.items():
            text = _read(path)
            if text is not None:
                self._texts[h] = text

    # ------------------------------------------------------------------ observer calls
    def _compiled(self, key: str, swept: bool) -> None:
        case = self._case
        self.compiled_in.setdefault(key, set()).add((case[0] if case else NO_CASE, swept))
        self._version += 1

    def _launched(self, key: str | None, name: str, swept: bool) -> None:
        if key is None:
            self.unattributed[name] = self.unattributed.get(name, 0) + 1
            return
        case = self._case
        shape = case[0] if case else NO_CASE
        counts = self.launches.setdefault((key, shape), [0, 0, 0])
        if swept:
            counts[1] += 1
        elif case is not None:
            counts[0] += 1
            self._case_hashes.add(key)
            self._case_dtypes.setdefault((key, shape), set()).add(case[1])
        else:
            counts[2] += 1
        self._version += 1

    # ------------------------------------------------------------------ dump
    def _dump_at_exit(self) -> None:
        try:
            self.dump()
        except Exception as exc:  # noqa: BLE001 - exit must go on
            print(f"zlh: TTGIR dump at exit failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)

    def measured_hashes(self) -> set[str]:
        with _observer.lock:
            return {h for (h, _), c in self.launches.items() if c[0] > 0}

    def dump(self) -> dict:
        """Write ttgir/ afresh (built beside it, then swapped in) and return
        {variants, measured_variants, dumped, sweep_losers, convert_layout_total,
        hooks_ok, unattributed_launches}.

        Idempotent: with nothing new since the last dump, nothing is rewritten."""
        with _observer.lock:
            if self._dumped_version == self._version and self._last_summary is not None \
                    and self.out_dir.is_dir():
                return dict(self._last_summary)
            version = self._version
            variants = self.variants
            compiled_in = {h: set(v) for h, v in self.compiled_in.items()}
            launches = {k: list(v) for k, v in self.launches.items()}
            case_dtypes = {k: set(v) for k, v in self._case_dtypes.items()}
            shapes = dict(self._shapes)
            unattributed = dict(self.unattributed)

        texts = {h: self._texts.get(h) or _read(v.ttgir_path) for h, v in variants.items()}
        cvt = {h: (convert_layout_count(t) if t is not None else None) for h, t in texts.items()}

        # Files: one (shape, kernel) group per shape, measured variants only.
        groups: dict[tuple[str, str], list[Variant]] = {}
        for (h, shape), counts in launches.items():
            if counts[0] > 0 and h in variants and texts[h] is not None:
                groups.setdefault((shape, variants[h].kernel), []).append(variants[h])
        files: dict[tuple[str, str], str] = {}          # (hash, shape) -> relative path
        legends: list[tuple[str, str, dict]] = []
        for (shape, kernel), members in sorted(groups.items()):
            params = [m.params() for m in members]
            names = name_variants(params)
            for m in members:
                files[(m.hash, shape)] = (f"{shape}/{safe_component(kernel, 'kernel')}/"
                                          f"{names[m.hash]}.ttgir")
            used = {k: v for k, v in legend(params).items() if k != v}
            if used:
                legends.append((shape, kernel, used))

        rows = []
        for h, v in variants.items():
            compiled = compiled_in.get(h, set())
            # A row per shape the variant ran or was swept in; a shape where it was only
            # compiled (its launches came later, elsewhere) is not worth a row of zeros.
            shapes_seen = ({s for (hh, s) in launches if hh == h}
                           | {s for s, swept in compiled if swept}
                           or {s for s, _ in compiled} or {NO_CASE})
            for shape in sorted(shapes_seen):
                counts = launches.get((h, shape), [0, 0, 0])
                if counts[0] > 0:
                    status = DUMPED if (h, shape) in files else TTGIR_MISSING
                elif counts[1] > 0 or (shape, True) in compiled:
                    status = SWEEP_LOSER
                else:
                    status = NOT_MEASURED
                file = files.get((h, shape)) or {
                    SWEEP_LOSER: "(sweep loser, not dumped)",
                    NOT_MEASURED: "(not launched in a measured case)",
                    TTGIR_MISSING: "(ttgir missing from the Triton cache)"}[status]
                rows.append({
                    "shape": shape, "kernel": v.kernel, "file": file, "status": status,
                    "case_dtypes": ",".join(sorted(case_dtypes.get((h, shape), ()))) or "-",
                    "launches": counts[0], "sweep_launches": counts[1],
                    "other_launches": counts[2], "num_warps": v.num_warps,
                    "num_stages": v.num_stages, "num_ctas": v.num_ctas, "maxnreg": v.maxnreg,
                    "constexprs": ",".join(f"{k}={_cell(x)}" for k, x in v.constexprs.items()),
                    "specialization": ",".join(f"{k}:{x}" for k, x in v.spec.items()),
                    "signature": ",".join(f"{k}:{x}" for k, x in v.signature.items()),
                    "convert_layout": cvt[h], "hash": h,
                })
        rows.sort(key=lambda r: (r["shape"], r["kernel"], r["status"] != DUMPED, r["file"],
                                 r["hash"]))

        measured = {h for (h, _), c in launches.items() if c[0] > 0 and h in variants}
        swept = {h for (h, _), c in launches.items() if c[1] > 0} | \
                {h for h, places in compiled_in.items() if any(sw for _, sw in places)}
        summary = {
            "variants": len(variants),
            "measured_variants": len(measured),
            "dumped": len(files),
            "sweep_losers": len((swept & set(variants)) - measured),
            "convert_layout_total": sum(cvt[h] or 0 for h in measured),
            "hooks_ok": self.hooks_ok,
            "unattributed_launches": sum(unattributed.values()),
        }
        self._write_tree({path: texts[h] for (h, _), path in files.items()}, rows, legends,
                         shapes, summary)
        with _observer.lock:
            self._dumped_version, self._last_summary = version, dict(summary)
        return summary

    def _write_tree(self, files: dict[str, str], rows: list[dict], legends, shapes,
                    summary) -> None:
        """Build the tree beside out_dir and swap it in: no stale name from an earlier
        dump survives, and a reader never sees half a tree."""
        parent = self.out_dir.parent
        parent.mkdir(parents=True, exist_ok=True)
        tmp = parent / f".{self.out_dir.name}.new-{os.getpid()}"
        old = parent / f".{self.out_dir.name}.old-{os.getpid()}"
        for stale in (tmp, old):
            shutil.rmtree(stale, ignore_errors=True)
        tmp.mkdir()
        for rel, text in sorted(files.items()):
            atomic_write_text(tmp / rel, text)
        atomic_write_text(tmp / "index.tsv", _index_tsv(rows))
        atomic_write_text(tmp / "naming.md", _naming_md(legends, shapes, summary))
        if self.out_dir.exists():
            os.replace(self.out_dir, old)
        os.replace(tmp, self.out_dir)
        shutil.rmtree(old, ignore_errors=True)
def _read(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return None


def _cell(value: Any) -> str:
    text = "-" if value is None else str(value)
    return text.replace("\t", " ").replace("\n", " ")


def _index_tsv(rows: list[dict]) -> str:
    lines = ["\t".join(INDEX_COLUMNS)]
    lines += ["\t".join(_cell(r[c]) for c in INDEX_COLUMNS) for r in rows]
    return "\n".join(lines) + "\n"


def _naming_md(legends, shapes: dict[str, str], summary: dict) -> str:
    out = [
        "# TTGIR variant names",
        "",
        "Layout: `ttgir/<shape>/<kernel>/<variant>.ttgir`, one file per variant launched in",
        "a measured case of that shape. `index.tsv` lists every compiled variant with all its",
        "parameters; look its columns up by header name.",
        "",
        "A variant name keeps only the parameters whose value differs among the variants of",
        "its (shape, kernel) directory:",
        "",
        "- `<LABEL><value>`: a `tl.constexpr` parameter; multi-word names are shortened to",
        "  their initials (`BLOCK_SIZE_M` -> `BSM`, table below); booleans are `1`/`0`.",
        "- `w<N>s<M>`: num_warps N, num_stages M (also the whole name when nothing differs);",
        "  `c<N>`: num_ctas; `r<N>`: maxnreg.",
        "- Names still shared get `__<dtype>` (pointer element types, e.g. `__fp16`), then",
        "  `__<arg><spec>` for the argument specialisation that differs (`div16` = pointer or",
        "  integer divisible by 16, `eq1` = integer specialised to 1, `any` = not specialised),",
        "  then `__<id>`: a prefix of the variant's source-level id.",
        "",
        "Statuses in index.tsv: `dumped` (launched in a measured case; file written),",
        "`sweep loser` (compiled or launched only while the autotuner benchmarked configs;",
        "not dumped), `not measured` (launched only outside measured cases, e.g. by an input",
        "builder; not dumped), `ttgir missing` (measured, but its TTGIR was gone from the",
        "Triton cache). `launches` counts host launches in measured cases; device graph",
        "replays are not counted. Shape `-` means outside any case.",
        "",
        f"Variants compiled: {summary['variants']}; files: {summary['dumped']}; sweep losers: "
        f"{summary['sweep_losers']}; ttg.convert_layout over measured variants: "
        f"{summary['convert_layout_total']}.",
    ]
    if shapes:
        out += ["", "## Shapes", "", "| directory | case shape |", "|---|---|"]
        out += [f"| `{k}` | `{v}` |" for k, v in sorted(shapes.items())]
    if legends:
        out += ["", "## Abbreviations", "", "| shape | kernel | label | parameter |",
                "|---|---|---|---|"]
        for shape, kernel, used in legends:
            out += [f"| `{shape}` | `{kernel}` | `{k}` | `{v}` |" for k, v in sorted(used.items())]
    return "\n".join(out) + "\n"
