"""IR fingerprint: did two runs generate the same code?

sha256 over the sorted (relative path, scrubbed content) of the `.ttgir` files under a
run's `ttgir/` directory, and nothing else: an earlier tool also hashed its index and
legend, so two runs that compiled no kernel at all came out "identical". A tree with no
`.ttgir` has no fingerprint (None / "no IR"), never a hash.

Scrubbing removes what the switch under test stamps on the IR without changing the code.
FlagTree's RLC switch writes every RLC knob as a module attribute
(`"ttg.rlc-<knob>" = N : i32`); unscrubbed, 23 of 24 ops looked changed, scrubbed, 7 of
them were byte-identical. Source locations keep their file's name, line and column but lose
its directory: FlagGems writes generated kernels (every pointwise op) under its cache
directory, which an isolated tuner cache makes private to each run, so the same code from
two runs would otherwise differ in `loc("/tmp/.../code_cache/x.py":12:0)`. Recipes may add
patterns for other switches.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Iterable, Sequence

# The second pattern is the one sed line of the old scripts; the first one catches a stamp
# that is the last attribute of its dictionary (no trailing comma to take with it); the third
# drops source-file directories.
DEFAULT_SCRUB: tuple[str, ...] = (
    r', "ttg[.]rlc-[^"]*" = [0-9-]+ : i32(?=\s*\})',
    r'"ttg[.]rlc-[^"]*" = [0-9-]+ : i32, ?',
    r'(?<=")[^"]*/(?=[^"/]*":[0-9]+:[0-9]+)',   # directory of a source file:line:col
)
NO_IR = "no IR"
_CVT = re.compile(r"\bttg\.convert_layout\b")


def convert_layout_count(text: str) -> int:
    """Number of `ttg.convert_layout` ops in one TTGIR text."""
    return len(_CVT.findall(text))


def ttgir_root(path: str | Path) -> Path:
    """A run directory or its `ttgir/` directory -> the directory holding the IR tree."""
    path = Path(path)
    return path / "ttgir" if (path / "ttgir").is_dir() else path


def ttgir_files(path: str | Path) -> list[tuple[str, Path]]:
    """(relative posix path, file) of every `.ttgir`, in byte order (as `LC_ALL=C sort`)."""
    root = ttgir_root(path)
    if not root.is_dir():
        return []
    found = [(p.relative_to(root).as_posix(), p) for p in root.rglob("*.ttgir") if p.is_file()]
    return sorted(found, key=lambda item: item[0].encode("utf-8"))


def compile_scrub(extra: Iterable[str] = (), default: bool = True) -> list[re.Pattern]:
    """The default patterns (unless default=False) plus extra ones; a bad regex raises
    ValueError naming it."""
    patterns = list(DEFAULT_SCRUB if default else ()) + list(extra or ())
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"bad scrub pattern {pattern!r}: {exc}") from None
    return compiled


def scrub_text(text: str, patterns: Sequence[re.Pattern]) -> str:
    for pattern in patterns:
        text = pattern.sub("", text)
    return text


def fingerprint(path: str | Path, scrub: Iterable[str] | None = None,
                default_scrub: bool = True) -> str | None:
    """sha256 hex of the IR tree under `path` (a run dir or its ttgir dir), or None when
    it holds no `.ttgir`. `scrub`: patterns removed in addition to DEFAULT_SCRUB."""
    files = ttgir_files(path)
    if not files:
        return None
    patterns = compile_scrub(scrub or (), default=default_scrub)
    digest = hashlib.sha256()
    for rel, file in files:
        body = scrub_text(file.read_text(encoding="utf-8", errors="surrogateescape"),
                          patterns).encode("utf-8", errors="surrogateescape")
        # Length-prefixed, so no file boundary can be shifted without changing the hash.
        digest.update(f"{rel}\n{len(body)}\n".encode("utf-8"))
        digest.update(body)
    return digest.hexdigest()


def read_index(path: str | Path) -> list[dict[str, str]]:
    """Rows of `index.tsv` (under a run dir or its ttgir dir) as dicts keyed by header
    name; [] when there is no index."""
    index = ttgir_root(path) / "index.tsv"
    if not index.is_file():
        return []
    lines = index.read_text(encoding="utf-8").splitlines()
    if not lines:
        return []
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]
            if len(line.split("\t")) == len(header)]


def convert_layout_total(path: str | Path) -> int | None:
    """ttg.convert_layout over the variants with at least one measured launch, or None
    when there is no IR.

    From `index.tsv` (each measured variant once, however many shapes it ran in);
    without a usable index, summed over the dumped files."""
    files = ttgir_files(path)
    if not files:
        return None
    rows = read_index(path)
    if rows and {"status", "hash", "convert_layout"} <= rows[0].keys():
        counts = {r["hash"]: int(r["convert_layout"]) for r in rows
                  if r["status"] == "dumped" and r["convert_layout"].isdigit()}
        return sum(counts.values())
    return sum(convert_layout_count(f.read_text(encoding="utf-8", errors="replace"))
               for _, f in files)


def fingerprint_line(path: str | Path, scrub: Iterable[str] | None = None,
                     default_scrub: bool = True) -> tuple[str, int]:
    """What `zlh fingerprint RUN_DIR` prints and its exit status: (hash, 0), or
    ("no IR", 1) when the tree holds no `.ttgir`."""
    value = fingerprint(path, scrub, default_scrub)
    return (NO_IR, 1) if value is None else (value, 0)
