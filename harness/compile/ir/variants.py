"""A compiled kernel variant, as Triton's compile listener describes it."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .naming import VariantParams, format_value

# Text stages a variant's IR can be kept for (the compile listener's metadata_group names
# one file per stage); `ttgir` is the default, where FlagTree's switches act.
IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn")
# Compile options that select a variant at the source level (autotune configs and launch
# kwargs set them); part of the stable id that names use as a last resort.
_STABLE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                   "launch_cooperative_grid", "launch_pdl", "ir_override")


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
    ir_paths: dict[str, str]         # stage ("ttir", "ttgir", "llir", "ptx", ...) -> file
    shared: int | None = None        # shared memory per block, bytes (compile metadata)
    n_regs: int | None = None        # registers per thread, known once the binary is loaded
    n_spills: int | None = None      # local memory per thread in 32-bit words (spills)
    arg_order: tuple[str, ...] = ()  # the kernel's argument names, declaration order

    @property
    def ttgir_path(self) -> str | None:
        return self.ir_paths.get("ttgir")

    def params(self) -> VariantParams:
        return VariantParams(key=self.hash, kernel=self.kernel, constexprs=self.constexprs,
                             num_warps=self.num_warps, num_stages=self.num_stages,
                             num_ctas=self.num_ctas, maxnreg=self.maxnreg, dtype=self.dtype,
                             spec=self.spec, stable_id=self.stable_id,
                             arg_order=self.arg_order)


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

    return Variant(hash=str(md.get("hash", "")), kernel=str(md.get("name") or
                                                            getattr(src, "name", "kernel")),
                   constexprs=constexprs, signature=signature, spec=spec,
                   num_warps=md.get("num_warps"), num_stages=md.get("num_stages"),
                   num_ctas=md.get("num_ctas"), maxnreg=md.get("maxnreg"), dtype=dtype,
                   stable_id=_stable_id(src, md), ir_paths=_ir_paths(metadata_group),
                   shared=count_or_none(md.get("shared")), arg_order=tuple(arg_names))


def count_or_none(value: Any) -> int | None:
    """A non-negative int from compile or load metadata, or None (absent, not a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _stable_id(src: Any, md: dict) -> str:
    """The source-level identity: equal for the same variant in any run, cache or process —
    the kernel's own source, signature, constants, specialisation and options. Not Triton's
    source hash: that covers the functions the kernel calls and, for a library's generated
    kernels, where the generated file lies (a per-process path), so two sides compiling the
    same variant would disagree."""
    fn = getattr(src, "fn", None)
    source = getattr(fn, "src", None)
    if not isinstance(source, str):      # an IRSource, or no source text: the cache hash
        try:
            source = src.hash()
        except Exception:  # noqa: BLE001
            source = md.get("hash", "")
    identity = [source, getattr(fn, "starting_line_number", None),
                sorted((str(k), str(v)) for k, v in (getattr(src, "signature", None)
                                                     or {}).items()),
                sorted((str(k), _named(v)) for k, v in (getattr(src, "constants", None)
                                                        or {}).items()),
                sorted((str(k), str(v)) for k, v in (getattr(src, "attrs", None)
                                                     or {}).items()),
                {k: md.get(k) for k in _STABLE_OPTIONS if k in md}]
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def _named(value: Any) -> Any:
    """A constant as plain data; a function passed as a constexpr by its qualified name
    (its repr would carry an address)."""
    fn = getattr(value, "fn", value)
    if callable(fn) and hasattr(fn, "__qualname__"):
        return fn.__qualname__
    return _plain(value)


def _ir_paths(metadata_group: dict) -> dict[str, str]:
    paths = {}
    for name, path in metadata_group.items():
        stage = str(name).rsplit(".", 1)[-1] if "." in str(name) else ""
        if stage in IR_STAGES:
            paths[stage] = str(path)
    return paths
