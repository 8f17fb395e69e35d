"""One op's detail from the run directories of its two sides: per-shape intervals (the same
statistics `zlh ab` computes), the measured kernels whose code changed with their compiled
metadata (`ttgir/index.tsv`), the per-kernel time split (`kernel_split.tsv`, when a profiler
pass wrote one) and a side-by-side of the changed kernels' scrubbed TTGIR."""
from __future__ import annotations

import os
import statistics
from pathlib import Path

from ..ab.pairing import pair_rows
from ..common.errors import UsageError
from ..common.files import read_text
from ..compile.ir.fingerprint import compile_scrub, ir_root, read_index, scrub_text
# index.tsv columns shown per changed kernel, in this order, when the index has them (older
# roots lack the compiled-kernel ones: n_regs, n_spills, shared)
from ..compile.ir.kernel_meta import META_COLUMNS
from ..measure import stats
from ..store.reader import StoredRun, load_run
from ..telemetry import kernel_split
from .diff import side_by_side
from .model import Kernel, OpEntry, Shape, finite

SPLIT_COLUMNS = ("kernel", "time_us", "share")
MAX_SPLIT_ROWS = 60           # kernel rows per run shown
MAX_DIFF_KERNELS = 3            # changed kernels diffed per op
DIFF_BUDGET = 30_000            # characters of diff per op


def load(path) -> StoredRun | None:
    """The stored run at `path`, or None when there is none or it cannot be read."""
    if path is None or not Path(path).is_dir():
        return None
    try:
        return load_run(path)
    except UsageError:
        return None


def link(path, page_dir: Path) -> str:
    """`path` relative to the page's folder, in URL form."""
    return Path(os.path.relpath(Path(path).resolve(), page_dir.resolve())).as_posix()


def shape_label(op: str, variant: str, dtype: str, shape_detail: str, occurrence) -> str:
    """`variant dtype shape #occurrence`, the variant only where it is not the op itself."""
    label = " ".join(p for p in (variant if variant != op else "", dtype, shape_detail) if p)
    return label + (f" #{occurrence}" if occurrence else "")


def shapes(run_a: StoredRun, run_b: StoredRun) -> list[Shape]:
    """Every paired shape with its delta and interval (bootstrap over the samples, as zlh ab
    does for one round), its flags and throttled mark."""
    pairs, _ = pair_rows(run_a.rows, run_b.rows)
    found = stats.shape_stats([(ra.gems.samples_ms, rb.gems.samples_ms, ra.gems_ms, rb.gems_ms)
                               for ra, rb in pairs])
    out = []
    for (ra, rb), stat in zip(pairs, found):
        out.append(Shape(label=shape_label(ra.op, ra.variant, ra.dtype, ra.shape_detail,
                                           ra.occurrence),
                         delta=finite(stat.delta_pct), low=finite(stat.ci_low_pct),
                         high=finite(stat.ci_high_pct), a_ms=finite(ra.gems_ms),
                         b_ms=finite(rb.gems_ms), significant=bool(stat.significant),
                         flags=sorted({*ra.flags, *rb.flags}),
                         throttled=bool(ra.throttled or rb.throttled)))
    return out


def summarize(entry: OpEntry) -> None:
    """The op's median delta and range over its shapes, when the model has none."""
    deltas = [s.delta for s in entry.shapes if s.delta is not None]
    if deltas and entry.delta is None:
        entry.delta = statistics.median(deltas)
    if deltas and entry.low is None:
        entry.low, entry.high = min(deltas), max(deltas)


def fill(entry: OpEntry, path_a, path_b, page_dir: Path, ir_changed: bool,
         scrub=(), summary: bool = True) -> tuple:
    """The detail of `entry` from its two run directories (either may be missing); the runs
    read (A, B; None for a side not read). `summary`: fill the op's median and range from
    its shapes when it has none."""
    run_a, run_b = load(path_a), load(path_b)
    add_runs(entry, run_a, run_b, page_dir)
    if run_a is None or run_b is None:
        return run_a, run_b
    try:
        entry.shapes = shapes(run_a, run_b)
    except (ValueError, TypeError, ZeroDivisionError):
        entry.shapes = []
    if summary:
        summarize(entry)
    if ir_changed:
        add_kernels(entry, run_a.path, run_b.path, page_dir, scrub)
    return run_a, run_b


def add_runs(entry: OpEntry, run_a: StoredRun | None, run_b: StoredRun | None,
             page_dir: Path) -> None:
    """A link to each side's run directory that was read, and its kernel split if it has one."""
    for side, run in (("A", run_a), ("B", run_b)):
        if run is not None:
            entry.links.append((f"run {side}", link(run.path, page_dir)))
            split = read_split(run)
            if split:
                entry.split[side] = split


def add_kernels(entry: OpEntry, path_a: Path, path_b: Path, page_dir: Path, scrub=()) -> None:
    """The measured kernels whose code changed A->B and the diffs of the first of them."""
    index_a, index_b = read_index(path_a), read_index(path_b)      # each read once
    entry.changed_kernels = changed_kernels(path_a, path_b, index_a, index_b, page_dir)
    entry.diff_html = kernel_diffs(entry.changed_kernels, path_a, path_b, index_a, index_b,
                                   scrub)


def _measured(index: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r.get("shape", ""), r.get("kernel", "")): r for r in index
            if r.get("role", "measured") == "measured"}


def changed_kernels(path_a: Path, path_b: Path, index_a: list[dict], index_b: list[dict],
                    page_dir: Path) -> list[Kernel]:
    """The measured kernels (shape, name) whose hash differs A->B, or that one side lacks
    (`index_a`, `index_b`: the sides' index.tsv rows)."""
    measured_a, measured_b = _measured(index_a), _measured(index_b)
    out = []
    for key in sorted(measured_a.keys() | measured_b.keys()):
        ra, rb = measured_a.get(key, {}), measured_b.get(key, {})
        if ra.get("hash") and ra.get("hash") == rb.get("hash"):
            continue
        out.append(Kernel(shape=key[0], kernel=key[1],
                          a={c: ra[c] for c in META_COLUMNS if c in ra},
                          b={c: rb[c] for c in META_COLUMNS if c in rb},
                          file_a=_file_link(path_a, ra, page_dir),
                          file_b=_file_link(path_b, rb, page_dir)))
    return out


def _file_link(run: Path, row: dict, page_dir: Path) -> str | None:
    rel = row.get("file")
    if not rel or rel == "-":
        return None
    return link(ir_root(run) / rel, page_dir)


def kernel_diffs(kernels: list[Kernel], path_a: Path, path_b: Path, index_a: list[dict],
                 index_b: list[dict], scrub=()) -> str:
    """Side-by-side diffs of the first changed kernels whose TTGIR both sides kept
    (`index_a`, `index_b`: the sides' index.tsv rows)."""
    patterns = compile_scrub(list(scrub))        # the default patterns and the root's own
    parts, used = [], 0
    rows_a = {(r.get("shape"), r.get("kernel")): r for r in index_a}
    rows_b = {(r.get("shape"), r.get("kernel")): r for r in index_b}
    for k in kernels:
        if len(parts) >= MAX_DIFF_KERNELS or used >= DIFF_BUDGET:
            break
        text_a = _text(path_a, rows_a.get((k.shape, k.kernel)))
        text_b = _text(path_b, rows_b.get((k.shape, k.kernel)))
        if text_a is None or text_b is None:
            continue
        html = side_by_side(f"{k.shape} {k.kernel}", scrub_text(text_a, patterns),
                            scrub_text(text_b, patterns))
        if html:
            parts.append(html)
            used += len(html)
    return "".join(parts)


def _text(run: Path, row: dict | None) -> str | None:
    if not row or not row.get("file") or row["file"] == "-":
        return None
    try:
        return read_text(ir_root(run) / row["file"], errors="replace")
    except OSError:
        return None


def read_split(run: StoredRun) -> dict:
    """kernel_split.tsv of a run (`zlh bench --kernel-split`: a profiler pass's device time
    per kernel) as {"rows": [[case, kernel, calls, time_us, share]], "sums": [[case, sum of
    time_us, idle between kernels, device span, op_latency_us, what it is set beside, gap %]]}
    (kernel_split.case_sums; the run's timer for files that do not name one), at most
    MAX_SPLIT_ROWS rows; {} without a file or with another header."""
    rows = kernel_split.read_split(run.path)
    if not rows or not set(SPLIT_COLUMNS) <= set(rows[0]):
        return {}

    def label(row: dict) -> str:
        case = " ".join(row[c] for c in ("variant", "dtype", "shape") if row.get(c)) or "-"
        return case + (f" #{row['occurrence']}"
                       if row.get("occurrence") not in (None, "", "0") else "")
    table = [[label(r), r["kernel"], r.get("calls", "-"), _r3(finite(r["time_us"])),
              _r3(finite(r["share"]))] for r in rows[:MAX_SPLIT_ROWS]]
    caliber = run.info.get("caliber") if isinstance(run.info.get("caliber"), dict) else {}
    sums = [[label(c), c["kernels_us"], c["idle_us"], c["span_us"], c["op_latency_us"],
             "sum of kernels" if c["compared"] == "kernels" else "device span", c["gap_pct"]]
            for c in kernel_split.case_sums(rows, caliber.get("timer"))]
    return {"rows": table, "sums": sums}


def _r3(value):
    return None if value is None else round(value, 3)
