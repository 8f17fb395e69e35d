"""IR fingerprint: did two runs generate the same code?

sha256 over the sorted (relative path, scrubbed content) of the measured IR files of one
stage (`ttgir/**/*.ttgir` by default), and nothing else: an earlier tool also hashed its
index and legend, so two runs that compiled no kernel at all came out "identical". A tree
with no IR file has no fingerprint (None / "no IR"), never a hash. Set-up kernels (under
`_setup/`) are fingerprinted on their own (`part="setup"`): a change that touches only them
is visible as such and never reads as a change of the op's code.

Scrubbing removes what the switch under test stamps on the IR without changing the code.
FlagTree's RLC switch writes every RLC knob as a module attribute
(`"ttg.rlc-<knob>" = N : i32`); unscrubbed, 23 of 24 ops looked changed, scrubbed, 7 of
them were byte-identical. Source locations keep their file's name, line and column but lose
its directory: a library that writes generated kernels under a per-run cache directory would
otherwise differ in `loc("/tmp/.../code_cache/x.py":12:0)` between two runs of the same code.
A hex digest of 16 or more digits in that file's name goes too: FlagGems names a generated
pointwise kernel's file after its scalar function's Triton cache key
(`pointwise_dynamic_<sha256>_copysign_func_kernel_rank_1_bptr_t512.py`), and that key
differed between the two sides of a `TRITON_F32_DEFAULT` screen whose kernels were
byte-identical but for those names (copysign_, copysign_out read IR_CHANGED). A process id
in that name goes as well (`pid_<N>`, `pid-<N>`): FlagGems names some generated kernels'
files after the process that wrote them (`index_add_rank_2_pid_548.py`; index_add,
index_copy, scatter_add, masked index_put), so the two sides' processes made index_add,
index_add_, index_copy and index_copy_ read IR_CHANGED over identical code. Other stages
name the file their own way (STAGE_SCRUB): PTX and AMDGCN in a `.file` directive, comments
and DWARF sections (the path as bytes or strings: the sections go whole), LLVM IR in DIFile.
Recipes may add patterns for other switches. The patterns are applied until the text stops
changing, so the result does not depend on their order (a stamp removed by one pattern can
expose another's match).
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ...common.files import read_text
from ...common.tsv import read_tsv_rows

# What a generated kernel's file name carries that is not code: a hex digest of 16 or more
# digits, a process id. Each stage's patterns below take these where it names its file.
_NAME_TOKENS = (r'(?<=[_.\-"])[0-9a-f]{16,}',        # a digest (a cache key)
                r'(?<=pid[_-])[0-9]+')                 # a process id


def _in_file_names(context: str, flags: str = "") -> tuple[str, ...]:
    """The name tokens, each where `context` (a lookahead up to a stage's end of the name)
    follows."""
    return tuple(f"{flags}{token}(?={context})" for token in _NAME_TOKENS)


DEFAULT_SCRUB: tuple[str, ...] = (
    r', "ttg[.]rlc-[^"]*" = [0-9-]+ : i32(?=\s*\})',   # a stamp closing its dictionary
    r'"ttg[.]rlc-[^"]*" = [0-9-]+ : i32, ?',          # a stamp followed by another entry
    r'(?<=\{)\s*"ttg[.]rlc-[^"]*" = [0-9-]+ : i32\s*(?=\})',  # a stamp alone in its dictionary
    r'(?<=")[^"]*/(?=[^"/]*":[0-9]+:[0-9]+)',         # directory of a source file:line:col
    *_in_file_names(r'[^"/]*":[0-9]+:[0-9]+'),        # that file's name: digest, process id
)
# Where PTX and AMDGCN name source files ((?m): a directive is a line amid the text): a
# `.file` directive, with the directory in the path or as a string of its own, its name's
# digest and process id, the comments (file:line:col after each `.loc`) and the DWARF
# sections (the path as bytes or strings). Comments and debug data are not code.
_FILE_DIRECTIVE = (r'(?m)(?<=")[^"\n]*/(?=[^"/\n]*"[ \t]*$)',   # .file 1 "/tmp/.../x.py"
                   r'(?m)"[^"\n]*"[ \t]+(?="[^"\n]*"[ \t]*$)',  # .file 1 "/tmp/..." "x.py"
                   *_in_file_names(r'[^"/\n]*"[ \t]*$', "(?m)"))
STAGE_SCRUB: dict[str, tuple[str, ...]] = {
    "llir": (r'(?<=directory: ")[^"]*',               # DIFile(..., directory: "/tmp/...")
             *_in_file_names(r'[^"/\n]*", directory: "')),       # its filename's tokens
    "ptx": (*_FILE_DIRECTIVE,
            r'(?m)[ \t]*//[^"\n]*$',                                 # a comment
            r'\.section\s+\.debug_\w+\s*\{[^{}]*\}'),                # .section .debug_x { }
    "amdgcn": (*_FILE_DIRECTIVE,
               r'(?m)[ \t]*;[^"\n]*$',                                # a comment
               r'(?ms)^[ \t]*\.section[ \t]+\.debug_\w+.*?'         # up to the next section
               r'(?=^[ \t]*\.(?:section|text|data|amdgpu_metadata)\b|\Z)'),
}
NO_IR = "no IR"
SETUP_DIR = "_setup"
MEASURED, SETUP = "measured", "setup"
_CVT = re.compile(r"\bttg\.convert_layout\b")
_MAX_PASSES = 16


def convert_layout_count(text: str) -> int:
    """Number of `ttg.convert_layout` ops in one TTGIR text."""
    return len(_CVT.findall(text))


def ir_root(path: str | Path, stage: str = "ttgir") -> Path:
    """A run directory or its stage directory -> the directory holding the IR tree."""
    path = Path(path)
    return path / stage if (path / stage).is_dir() else path


ttgir_root = ir_root


def ir_files(path: str | Path, stage: str = "ttgir", part: str = MEASURED
             ) -> list[tuple[str, Path]]:
    """(relative posix path, file) of one part's IR files, in byte order (`LC_ALL=C sort`)."""
    if part not in (MEASURED, SETUP):
        raise ValueError(f"unknown IR part {part!r}")
    root = ir_root(path, stage)
    if not root.is_dir():
        return []
    found = []
    for file in root.rglob(f"*.{stage}"):
        rel = file.relative_to(root).as_posix()
        if file.is_file() and (rel.startswith(SETUP_DIR + "/") == (part == SETUP)):
            found.append((rel, file))
    # byte order of the names; a name that is not UTF-8 sorts by its own bytes
    return sorted(found, key=lambda item: item[0].encode("utf-8", "surrogateescape"))


def ttgir_files(path: str | Path) -> list[tuple[str, Path]]:
    return ir_files(path, "ttgir", MEASURED)


def compile_scrub(extra: Iterable[str] = (), default: bool = True) -> list[re.Pattern]:
    """The default patterns (unless default=False) plus extra ones; a bad regex raises
    ValueError naming it."""
    patterns = list(DEFAULT_SCRUB if default else ()) + list(extra or ())
    compiled = []
    for pattern in patterns:
        why = pattern_problem(pattern)
        if why is not None:
            shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
            raise ValueError(f"bad scrub pattern {shown!r}: {why}")
        compiled.append(re.compile(pattern))
    return compiled


def pattern_problem(pattern: str) -> str | None:
    """Why the regex engine refuses `pattern`, or None. Beside re.error: OverflowError (a
    repeat count past the engine's limit, `a{99999999999}`) and RecursionError (groups
    nested thousands deep)."""
    try:
        compiled = re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        return str(exc) or type(exc).__name__
    if compiled.fullmatch(""):
        # `.*` would blank every line, so every IR would fingerprint alike (NO_IR_DIFF for
        # any change); '' removes nothing
        return ("it matches the empty string, so it removes everything a line holds or "
                "nothing; write what to remove (`+` rather than `*`)")
    return None


def scrub_text(text: str, patterns: Sequence[re.Pattern]) -> str:
    """Every pattern removed, repeatedly, until the text no longer changes."""
    for _ in range(_MAX_PASSES):
        before = text
        for pattern in patterns:
            text = pattern.sub("", text)
        if text == before:
            break
    return text


def fingerprint(path: str | Path, scrub: Iterable[str] | None = None,
                default_scrub: bool = True, stage: str = "ttgir",
                part: str = MEASURED, keep: Callable[[str], bool] | None = None) -> str | None:
    """sha256 hex of one part of a stage's IR tree under `path` (a run dir or its stage
    dir), or None when it holds no file. `scrub`: patterns removed besides DEFAULT_SCRUB;
    `keep`: only the files whose relative path it accepts."""
    files = [(rel, f) for rel, f in ir_files(path, stage, part) if keep is None or keep(rel)]
    if not files:
        return None
    extra = (*(STAGE_SCRUB.get(stage, ()) if default_scrub else ()), *(scrub or ()))
    patterns = compile_scrub(extra, default=default_scrub)
    digest = hashlib.sha256()
    for rel, file in files:
        body = scrub_text(read_text(file, errors="surrogateescape"),
                          patterns).encode("utf-8", errors="surrogateescape")
        # Length-prefixed, so no file boundary can be shifted without changing the hash.
        digest.update(f"{rel}\n{len(body)}\n".encode("utf-8", errors="surrogateescape"))
        digest.update(body)
    return digest.hexdigest()


def read_index(path: str | Path) -> list[dict[str, str]]:
    """Rows of `index.tsv` (under a run dir or its ttgir dir) as dicts keyed by header
    name; [] when there is no index, or one that is not text (a damaged index: readers fall
    back to the IR files themselves)."""
    return read_tsv_rows(ir_root(path) / "index.tsv")


def missing_ir_files(path: str | Path) -> int:
    """How many TTGIR files the run's `ttgir/index.tsv` says were dumped but are not there (a
    root copied without its `.ttgir` files): its fingerprint would not be its code's."""
    root = ir_root(path)
    return sum(1 for row in read_index(path)
               if row.get("status") == "dumped" and row.get("file") not in (None, "", "-")
               and not (root / row["file"]).is_file())


def convert_layout_total(path: str | Path, part: str = MEASURED) -> int | None:
    """ttg.convert_layout over one part's variants, or None when that part has no IR.

    From `index.tsv` (each variant once, however many shapes it ran in); without a usable
    index, summed over the dumped files."""
    files = ir_files(path, "ttgir", part)
    if not files:
        return None
    rows = read_index(path)
    if rows and {"role", "hash", "convert_layout"} <= rows[0].keys():
        counts = {r["hash"]: int(r["convert_layout"]) for r in rows
                  if r["role"] == part and _count_text(r["convert_layout"])}
        return sum(counts.values())
    return sum(convert_layout_count(read_text(f, errors="replace"))
               for _, f in files)


def _count_text(text: str) -> bool:
    """Whether an index cell is a count zlh wrote (ASCII digits: `isdigit` alone takes
    superscripts that `int` refuses)."""
    return text.isascii() and text.isdigit()


def fingerprint_line(path: str | Path, scrub: Iterable[str] | None = None,
                     default_scrub: bool = True, stage: str = "ttgir",
                     part: str = MEASURED) -> tuple[str, int]:
    """What `zlh fingerprint RUN_DIR` prints and its exit status: (hash, 0), or
    ("no IR", 1) when the tree holds no file of that part."""
    value = fingerprint(path, scrub, default_scrub, stage, part)
    return (NO_IR, 1) if value is None else (value, 0)
