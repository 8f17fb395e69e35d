"""Names for dumped TTGIR variants: short, stable, and free of Triton.

One (shape, kernel) group holds the variants launched for one shape. A name must tell
them apart at a glance and must come out the same in every run that dumps the same
variants, because the IR fingerprint hashes relative paths: a name that depended on the
order of compilation, on the Triton cache key (which changes with the compiler build or
with a cache-invalidating switch) or on variants that were merely swept would make two
sides with identical code look different.

Rules, in order:

1. Keep only the parameters whose value differs inside the group. Constexprs come first
   in kernel-argument order, then `w<num_warps>s<num_stages>`, `c<num_ctas>`,
   `r<maxnreg>`. Multi-word constexpr names are shortened to their initials
   (`BLOCK_SIZE_M` -> `BSM`); two names that would shorten alike keep their full
   spelling. If nothing differs, the name is `w<num_warps>s<num_stages>`.
2. Names still shared are suffixed by dtype (`__fp16`), then by the argument
   specialisation that differs (`__EMdiv16`), then by a prefix of the variant's stable id.

Parameters and specialised arguments are named in the kernel's argument order, whatever
the order of the variants or their ids: two processes that compile the same variants name
them alike (the order once followed the variants sorted by stable id, which a library's
generated kernels do not share across processes, and the IR fingerprint then saw a change).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

# Launch parameters: (field, token letter).
LAUNCH_TOKENS = (("num_warps", "w"), ("num_stages", "s"), ("num_ctas", "c"), ("maxnreg", "r"))
MAX_NAME = 160
_UNSAFE = re.compile(r"[^A-Za-z0-9.+=-]+")


@dataclass(frozen=True)
class VariantParams:
    """What naming needs to know about one compiled variant.

    key: unique id of the compiled variant (the Triton cache hash).
    stable_id: digest of the source-level identity (kernel source, signature,
        specialisation, constexprs, launch options); equal for the same variant in
        any run, unlike the cache hash. Used for the last-resort suffix.
    constexprs: declared `tl.constexpr` parameters, in kernel-argument order.
    dtype: element types of the pointer arguments, e.g. "fp16" or "fp16_fp32".
    spec: argument specialisation, e.g. {"EM": "div16", "stride": "eq1"}.
    arg_order: the kernel's argument names in declaration order (constexprs included), or
        () where unknown.
    """
    key: str
    kernel: str = ""
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None
    num_ctas: int | None = None
    maxnreg: int | None = None
    dtype: str = ""
    spec: Mapping[str, str] = field(default_factory=dict)
    stable_id: str = ""
    arg_order: tuple[str, ...] = ()


def abbreviate(name: str) -> str:
    """`BLOCK_SIZE_M` -> `BSM`; a single-word name stays as it is."""
    parts = [p for p in name.split("_") if p]
    return "".join(p[0] for p in parts) if len(parts) > 1 else (parts[0] if parts else name)


def labels(names: Iterable[str]) -> dict[str, str]:
    """A short label per name; names whose abbreviations clash keep their full spelling."""
    names = list(dict.fromkeys(names))
    short = {n: abbreviate(n) for n in names}
    counts: dict[str, int] = {}
    for n in names:
        counts[short[n]] = counts.get(short[n], 0) + 1
    # A full name that equals another name's abbreviation is a clash too.
    taken = set(names)
    return {n: short[n] if counts[short[n]] == 1 and (short[n] == n or short[n] not in taken)
            else n for n in names}


def format_value(value: Any) -> str:
    """A value as a file-name fragment: bools as 1/0, anything else via str, made safe."""
    if isinstance(value, bool):
        text = "1" if value else "0"
    elif hasattr(value, "value") and not isinstance(value, (int, float, str)):
        text = str(getattr(value, "value"))      # tl.constexpr and friends
    else:
        text = str(value)
    return _UNSAFE.sub("-", text) or "none"


def safe_component(text: str, fallback: str = "_") -> str:
    """A single path component: no separators, no `.`/`..`, bounded length."""
    out = re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_")
    if out in ("", ".", ".."):
        out = fallback
    if len(out) > MAX_NAME:
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]
        out = f"{out[:MAX_NAME - 11]}~{digest}"
    return out


def shape_key(shape: str) -> str:
    """A directory name for a case's shape string: `(1024, 1024)` -> `1024x1024`,
    `1024x1024, dim=1` -> `1024x1024_dim=1`."""
    text = str(shape).strip()
    if re.fullmatch(r"[\[(]?\s*\d+(\s*,\s*\d+)*\s*,?\s*[\])]?", text):
        return "x".join(re.findall(r"\d+", text))
    text = re.sub(r"[\[\]()]", "", text)
    text = re.sub(r"\s*,\s*", "_", text)
    return re.sub(r"_+", "_", safe_component(text, fallback="scalar"))


def _token(label: str, value: Any) -> str:
    text = format_value(value)
    sep = "-" if label[-1:].isdigit() and text[:1].isdigit() else ""
    return f"{label}{sep}{text}"


def _differs(values: Sequence[Any]) -> bool:
    return len({repr(v) for v in values}) > 1


def _constexpr_order(group: Sequence[VariantParams]) -> list[str]:
    return _in_argument_order([name for v in group for name in v.constexprs], group,
                              lambda v: v.constexprs)


def _in_argument_order(names: Iterable[str], group: Sequence[VariantParams],
                       listed) -> list[str]:
    """`names` (each once) in the kernel's argument order (`x.0` after `x`'s place by its
    path); without an argument list, by the first place any variant's `listed(v)` gives a
    name, then by name — never by the variants' order or ids."""
    order = next((v.arg_order for v in group if v.arg_order), ())
    if order:
        index = {name: k for k, name in enumerate(order)}
        place = {n: index.get(n.split(".")[0], len(index)) for n in names}
    else:
        place = {}
        for v in group:
            for k, name in enumerate(listed(v)):
                place[name] = min(k, place.get(name, k))
    return sorted(dict.fromkeys(names), key=lambda n: (place.get(n, len(place)), n))


_MISSING = object()


def _base_names(group: Sequence[VariantParams]) -> tuple[dict[str, str], dict[str, str]]:
    """Rule 1. Returns (key -> base name, label -> full parameter name for the legend)."""
    differing = [n for n in _constexpr_order(group)
                 if _differs([v.constexprs.get(n, _MISSING) for v in group])]
    lab = labels(differing)
    launch = {f: _differs([getattr(v, f) for v in group]) for f, _ in LAUNCH_TOKENS}
    names = {}
    for v in group:
        tokens = [_token(lab[n], v.constexprs[n]) for n in differing if n in v.constexprs]
        if launch["num_warps"] or launch["num_stages"]:
            tokens.append(f"w{format_value(v.num_warps)}s{format_value(v.num_stages)}")
        for f, letter in LAUNCH_TOKENS[2:]:
            if launch[f]:
                tokens.append(f"{letter}{format_value(getattr(v, f))}")
        if not tokens:
            tokens = [f"w{format_value(v.num_warps)}s{format_value(v.num_stages)}"]
        names[v.key] = "_".join(tokens)
    return names, {lab[n]: n for n in differing}


def _collisions(names: Mapping[str, str]) -> list[list[str]]:
    by_name: dict[str, list[str]] = {}
    for key, name in names.items():
        by_name.setdefault(name, []).append(key)
    return [keys for keys in by_name.values() if len(keys) > 1]


def _spec_suffixes(members: Sequence[VariantParams]) -> tuple[dict[str, str], dict[str, str]]:
    args = _in_argument_order([a for v in members for a in v.spec], members, lambda v: v.spec)
    differing = [a for a in args if _differs([v.spec.get(a, "any") for v in members])]
    lab = labels(differing)
    return ({v.key: "".join(f"{lab[a]}{format_value(v.spec.get(a, 'any'))}" for a in differing)
             for v in members}, {lab[a]: a for a in differing})


def _merge_legend(legend: dict[str, str], more: Mapping[str, str]) -> None:
    for label, full in more.items():
        if label in legend and full not in legend[label].split(" / "):
            legend[label] += f" / {full}"
        else:
            legend.setdefault(label, full)


def _resolve(group: Sequence[VariantParams]) -> tuple[dict[str, str], dict[str, str]]:
    by_key = {v.key: v for v in group}
    names, legend = _base_names(group)
    # Rule 2a: dtype, only where it separates the colliding variants.
    for keys in _collisions(names):
        if _differs([by_key[k].dtype for k in keys]):
            for k in keys:
                names[k] += f"__{format_value(by_key[k].dtype or 'none')}"
    # Rule 2b: the specialisation that differs.
    for keys in _collisions(names):
        suffixes, spec_legend = _spec_suffixes([by_key[k] for k in keys])
        if len(set(suffixes.values())) > 1:
            _merge_legend(legend, spec_legend)
            for k in keys:
                names[k] += f"__{suffixes[k]}"
    # Rule 2c: shortest common-length prefix of the stable id (the cache hash if the
    # stable ids themselves are equal) that separates them.
    for keys in _collisions(names):
        ids = {k: by_key[k].stable_id or k for k in keys}
        if len(set(ids.values())) < len(keys):
            ids = {k: k for k in keys}
        width = 8
        while len({ids[k][:width] for k in keys}) < len(keys) and width < 64:
            width += 4
        for k in keys:
            names[k] += f"__{ids[k][:width]}"
    return {k: safe_component(n, fallback="variant") for k, n in names.items()}, legend


def name_variants(group: Sequence[VariantParams]) -> dict[str, str]:
    """key -> file stem for every variant of one (shape, kernel) group.

    The result depends only on the set of variants, not on their order."""
    return _resolve(list(group))[0]


def legend(group: Sequence[VariantParams]) -> dict[str, str]:
    """label -> full parameter or argument name, for the labels the names use."""
    return _resolve(list(group))[1]
