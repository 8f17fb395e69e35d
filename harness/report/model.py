"""The data of one report page, whatever the root's kind.

Every view (the HTML page, the terminal text, history) reads these records; the models per
kind (abroot.py, corpus.py, product.py) fill them. A number that is missing is None, never
NaN: the page's JSON and the terminal print it as a dash.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..common.fields import finite  # noqa: F401 - the report modules take it from here


@dataclass
class Side:
    label: str                      # "A", "B", or the batch's own name
    compiler: str = "-"             # `triton 3.6.0` (run.json's compiler)
    switch: str = "-"               # what set the side apart: its environment, interpreter


@dataclass
class Headline:
    kind: str
    title: str
    sides: list[Side] = field(default_factory=list)
    device: str = "-"
    cards: str = "-"                # the devices the root ran on
    caliber: str = "-"              # the caliber's values, one line
    started: str = "-"
    duration_s: float | None = None
    counts: dict[str, int] = field(default_factory=dict)    # per verdict / status / class
    delta_label: str = "median delta % (B faster > 0)"
    notes: list[str] = field(default_factory=list)


@dataclass
class Shape:
    label: str                      # dtype and shape
    delta: float | None = None
    low: float | None = None        # the interval zlh ab computes for this shape
    high: float | None = None
    a_ms: float | None = None
    b_ms: float | None = None
    significant: bool = False
    flags: list[str] = field(default_factory=list)
    throttled: bool = False


@dataclass
class Kernel:
    """One measured kernel whose code differs A->B, with the compiled kernel's metadata."""
    shape: str
    kernel: str
    a: dict = field(default_factory=dict)      # metadata column -> value, side A
    b: dict = field(default_factory=dict)
    file_a: str | None = None                  # relative link to the TTGIR file
    file_b: str | None = None


@dataclass
class OpEntry:
    op: str
    status: str                     # the verdict, status or class
    family: str = "-"
    delta: float | None = None      # median over shapes
    low: float | None = None        # the range over shapes (min, max)
    high: float | None = None
    kernels: str = "-"              # "3→3"
    convert_layout: str = "-"       # "6→6"
    elapsed_s: float | None = None
    notes: str = ""
    reason: str = ""
    noise: bool = False             # identical code: the range is a noise floor
    shapes: list[Shape] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)    # (label, relative href)
    changed_kernels: list[Kernel] = field(default_factory=list)
    split: dict[str, dict] = field(default_factory=dict)   # side -> runs.read_split()
    diff_html: str = ""             # the side-by-side TTGIR diff, already escaped
    extra: dict = field(default_factory=dict)                      # kind-specific lines


@dataclass
class Report:
    headline: Headline
    ops: list[OpEntry]
    telemetry: list[dict] = field(default_factory=list)    # telemetry.tsv points
    root: str = ""


def to_dict(obj) -> dict:
    return asdict(obj)


NOT_FINISHED = "NOT_FINISHED"      # counted for ops a root planned and has no result for


def listed(names, most: int = 5) -> str:
    """`a, b, c, d, e, … (3 more)`: the first `most` names, and how many were left out."""
    names = list(names)
    return ", ".join(names[:most]) + (f", … ({len(names) - most} more)" if len(names) > most
                                      else "")


def count(values) -> dict[str, int]:
    """Occurrences per value, most frequent first."""
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def arrow(a, b) -> str:
    """`a→b`, a dash for a side that has no value."""
    def cell(v):
        return "-" if v in (None, "", "-") else str(v)
    return f"{cell(a)}→{cell(b)}"
