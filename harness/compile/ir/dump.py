"""What an IR capture writes: the tree of IR files, `index.tsv` and `naming.md`.

Roles, per (variant, shape): `measured` (launched by a call of the function under test),
`setup` (launched in the case window outside those calls: input building, graph-capture
set-up, a flush), `sweep loser` (compiled or launched only while an autotuner benchmarked
configs), `not measured` (launched only outside any case). Measured variants are written as
`<shape>/<kernel>/<variant>.<stage>`, setup variants as `_setup/<shape>/<kernel>/...`;
names are chosen within each role separately, so a set-up kernel never renames a measured
one. Sweep losers and unmeasured variants are listed, never written.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ...common.files import atomic_write_text
from ...common.tsv import tsv_cell, tsv_text
from .fingerprint import convert_layout_count
from .naming import legend, name_variants, safe_component
from .variants import Variant

NO_CASE = "-"
SETUP_DIR = "_setup"
MEASURED, SETUP, SWEEP_LOSER, NOT_MEASURED = "measured", "setup", "sweep loser", "not measured"
DUMPED, MISSING, NOT_DUMPED = "dumped", "ir missing", "not dumped"
# Launch counters kept per (variant, shape), in this order.
TIMED, SETUP_LAUNCH, SWEEP, OTHER = range(4)
INDEX_COLUMNS = ("shape", "kernel", "role", "status", "file", "case_dtypes", "launches",
                 "setup_launches", "sweep_launches", "other_launches", "num_warps", "num_stages",
                 "num_ctas", "maxnreg", "n_regs", "n_spills", "shared", "constexprs",
                 "specialization", "signature", "convert_layout", "hash")
# Resource columns whose value may be unknown (not loaded here, a backend without it): an
# empty cell, never a guess.
RESOURCE_COLUMNS = ("n_regs", "n_spills", "shared")


@dataclass
class Observed:
    """A snapshot of what one capture saw, taken under the observer's lock."""
    variants: dict[str, Variant]
    compiled_in: dict[str, set[tuple[str, bool]]]      # hash -> {(shape, during a sweep)}
    launches: dict[tuple[str, str], list[int]]         # (hash, shape) -> counters
    case_dtypes: dict[tuple[str, str], set[str]]
    shapes: dict[str, str]                             # shape key -> shape as given
    unattributed: int = 0


@dataclass
class DumpPlan:
    files: dict[str, str] = field(default_factory=dict)     # relative path -> text
    rows: list[dict] = field(default_factory=list)
    legends: list[tuple[str, str, str, dict]] = field(default_factory=list)
    summary: dict = field(default_factory=dict)


def role_of(counts: list[int], swept_here: bool) -> str:
    if counts[TIMED] > 0:
        return MEASURED
    if counts[SETUP_LAUNCH] > 0:
        return SETUP
    if counts[SWEEP] > 0 or swept_here:
        return SWEEP_LOSER
    return NOT_MEASURED


def plan_dump(seen: Observed, texts: dict[str, str | None], stage: str,
              hooks_ok: bool) -> DumpPlan:
    """Files, index rows, legends and the summary for one stage."""
    roles = {key: role_of(counts, (key[1], True) in seen.compiled_in.get(key[0], set()))
             for key, counts in seen.launches.items()}
    plan = DumpPlan()
    paths: dict[tuple[str, str], str] = {}
    for role, prefix in ((MEASURED, ""), (SETUP, f"{SETUP_DIR}/")):
        groups: dict[tuple[str, str], list[Variant]] = {}
        for (h, shape), r in roles.items():
            if r == role and h in seen.variants and texts.get(h) is not None:
                groups.setdefault((shape, seen.variants[h].kernel), []).append(seen.variants[h])
        for (shape, kernel), members in sorted(groups.items()):
            params = [m.params() for m in members]
            names = name_variants(params)
            for m in members:
                rel = f"{prefix}{shape}/{safe_component(kernel, 'kernel')}/{names[m.hash]}.{stage}"
                paths[(m.hash, shape)] = rel
                plan.files[rel] = texts[m.hash]
            used = {k: v for k, v in legend(params).items() if k != v}
            if used:
                plan.legends.append((role, shape, kernel, used))
    cvt = {h: convert_layout_count(t) if t is not None and stage == "ttgir" else None
           for h, t in texts.items()}
    plan.rows = _index_rows(seen, roles, paths, cvt)
    plan.summary = _summary(seen, roles, paths, cvt, hooks_ok, stage)
    return plan


def _index_rows(seen: Observed, roles, paths, cvt) -> list[dict]:
    rows = []
    for h, v in seen.variants.items():
        compiled = seen.compiled_in.get(h, set())
        # A row per shape the variant ran or was swept in; a shape where it was only
        # compiled (its launches came later, elsewhere) is not worth a row of zeros.
        shapes_seen = ({s for (hh, s) in seen.launches if hh == h}
                       | {s for s, swept in compiled if swept}
                       or {s for s, _ in compiled} or {NO_CASE})
        for shape in sorted(shapes_seen):
            counts = seen.launches.get((h, shape), [0, 0, 0, 0])
            role = roles.get((h, shape)) or role_of(counts, (shape, True) in compiled)
            dumpable = role in (MEASURED, SETUP)
            status = (DUMPED if (h, shape) in paths else MISSING) if dumpable else NOT_DUMPED
            rows.append({
                "shape": shape, "kernel": v.kernel, "role": role, "status": status,
                "file": paths.get((h, shape), "-"),
                "case_dtypes": ",".join(sorted(seen.case_dtypes.get((h, shape), ()))) or "-",
                "launches": counts[TIMED], "setup_launches": counts[SETUP_LAUNCH],
                "sweep_launches": counts[SWEEP], "other_launches": counts[OTHER],
                "num_warps": v.num_warps, "num_stages": v.num_stages, "num_ctas": v.num_ctas,
                "maxnreg": v.maxnreg,
                **{c: "" if getattr(v, c) is None else getattr(v, c) for c in RESOURCE_COLUMNS},
                "constexprs": ",".join(f"{k}={tsv_cell(x, '-')}"
                                       for k, x in v.constexprs.items()),
                "specialization": ",".join(f"{k}:{x}" for k, x in v.spec.items()),
                "signature": ",".join(f"{k}:{x}" for k, x in v.signature.items()),
                "convert_layout": cvt.get(h), "hash": h,
            })
    order = {MEASURED: 0, SETUP: 1, SWEEP_LOSER: 2, NOT_MEASURED: 3}
    rows.sort(key=lambda r: (r["shape"], order[r["role"]], r["kernel"], r["file"], r["hash"]))
    return rows


def _summary(seen: Observed, roles, paths, cvt, hooks_ok: bool, stage: str) -> dict:
    by_role: dict[str, set[str]] = {}
    for (h, _), role in roles.items():
        if h in seen.variants:
            by_role.setdefault(role, set()).add(h)
    measured, setup = by_role.get(MEASURED, set()), by_role.get(SETUP, set()) - by_role.get(
        MEASURED, set())
    swept = {h for h, places in seen.compiled_in.items() if any(sw for _, sw in places)}
    swept |= by_role.get(SWEEP_LOSER, set())
    return {
        "stage": stage,
        "variants": len(seen.variants),
        "measured_variants": len(measured),
        "setup_variants": len(setup),
        "dumped": sum(1 for (h, _), p in paths.items() if not p.startswith(SETUP_DIR + "/")),
        "setup_dumped": sum(1 for p in paths.values() if p.startswith(SETUP_DIR + "/")),
        "sweep_losers": len((swept & set(seen.variants)) - measured - setup),
        "convert_layout_total": sum(cvt.get(h) or 0 for h in measured),
        "setup_convert_layout_total": sum(cvt.get(h) or 0 for h in setup),
        "hooks_ok": hooks_ok,
        "unattributed_launches": seen.unattributed,
    }


def write_tree(out_dir: Path, files: dict[str, str], extra: dict[str, str]) -> None:
    """Build the tree beside out_dir and swap it in: no stale name from an earlier dump
    survives, and a reader never sees half a tree. A failure removes the half-built copy."""
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".{out_dir.name}.new-{os.getpid()}"
    old = parent / f".{out_dir.name}.old-{os.getpid()}"
    for stale in (tmp, old):
        shutil.rmtree(stale, ignore_errors=True)
    try:
        tmp.mkdir()
        for rel, text in sorted({**files, **extra}.items()):
            atomic_write_text(tmp / rel, text)
        if out_dir.exists():
            os.replace(out_dir, old)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def index_tsv(rows: list[dict]) -> str:
    return tsv_text(INDEX_COLUMNS, rows, none="-")


def naming_md(legends, shapes: dict[str, str], summary: dict) -> str:
    stage = summary.get("stage", "ttgir")
    out = [
        f"# {stage.upper()} variant names",
        "",
        f"Layout: `{stage}/<shape>/<kernel>/<variant>.{stage}`, one file per variant launched by",
        "the function under test in a case of that shape (role `measured`), and",
        f"`{stage}/{SETUP_DIR}/<shape>/<kernel>/<variant>.{stage}` for kernels launched in the",
        "case outside those calls (role `setup`: input building, graph-capture set-up, a flush).",
        "`index.tsv` lists every compiled variant with all its parameters; look its columns",
        "up by header name. The IR fingerprint covers measured files only; set-up files have",
        "a fingerprint of their own.",
        "",
        "A variant name keeps only the parameters whose value differs among the variants of",
        "its (role, shape, kernel) directory:",
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
        "Roles in index.tsv: `measured`, `setup` (both written), `sweep loser` (compiled or",
        "launched only while the autotuner benchmarked configs), `not measured` (launched only",
        "outside any case). Status: `dumped`, `ir missing` (its file was gone from the Triton",
        "cache), `not dumped`. `launches` counts host launches by the function under test;",
        "device graph replays are not counted. Shape `-` means outside any case.",
        "",
        f"Variants compiled: {summary['variants']}; measured: {summary['measured_variants']}; "
        f"set-up: {summary['setup_variants']}; files: {summary['dumped']} measured + "
        f"{summary['setup_dumped']} set-up; sweep losers: {summary['sweep_losers']}; "
        f"ttg.convert_layout over measured variants: {summary['convert_layout_total']}.",
    ]
    if shapes:
        out += ["", "## Shapes", "", "| directory | case shape |", "|---|---|"]
        out += [f"| `{k}` | `{v}` |" for k, v in sorted(shapes.items())]
    if legends:
        out += ["", "## Abbreviations", "", "| role | shape | kernel | label | parameter |",
                "|---|---|---|---|---|"]
        for role, shape, kernel, used in legends:
            out += [f"| {role} | `{shape}` | `{kernel}` | `{k}` | `{v}` |"
                    for k, v in sorted(used.items())]
    return "\n".join(out) + "\n"
