"""Curated shape sets derived from FlagGems' own shapes, and the check of a set's keys.

Rule (also written into every derived file's header):

* Sources: every entry of `benchmark/core_shapes.yaml` whose key FlagGems' lookup can reach
  (an `op_name` given to a Benchmark constructor, or a Benchmark class name), then, under its
  class name, every class that hard-codes its shapes (its own `set_shapes` or inline in
  `get_input_iter`) when those shapes are literal and the class has no entry yet. Keys that
  nothing reaches (YAML anchors, entries of renamed ops) are dropped and listed. Shapes
  holding a negative number (a `dim=-1` inside the tuple) are left out: zlh's shape files
  refuse negative numbers.
* Size of a shape: the product of its positive integers, nested lists flattened (booleans,
  strings and floats do not count). Shapes are sorted by size, ties in upstream order.
* `single`: the shape at position n // 2 of the n sorted shapes (the upper median): one
  representative, neither the launch-bound smallest nor the largest.
* `multi`: the shapes at positions k * n // 4 for k = 1, 2, 3 (the quartiles), duplicates
  dropped: at most three per key, all of them when there are three or fewer, always
  including the `single` shape.
"""
from __future__ import annotations

import ast
import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.common.documents import loads_yaml, yaml_problem
from harness.common.errors import one_line
from harness.common.files import read_text
from harness.common.memo import by_file

from ..base import Unsupported
from .classes import ROOT_CLASS, ClassIndex
from .corpus import Corpus

KINDS = ("single", "multi")
RULE = {
    "single": "one shape per key: the upper median (position n // 2) of the key's shapes "
              "sorted by size",
    "multi": "up to three shapes per key: positions k * n // 4, k = 1..3 (quartiles) of the "
             "key's shapes sorted by size",
}


@dataclass
class DerivedSet:
    kind: str
    entries: dict = field(default_factory=dict)   # key -> {"shapes", "shape_desc"?, "from"}
    dropped: list = field(default_factory=list)   # core_shapes keys nothing reaches
    source: str = ""


def size(shape) -> int:
    """Product of the positive integers in a (possibly nested) shape."""
    if isinstance(shape, bool):
        return 1
    if isinstance(shape, int):
        return max(shape, 1)
    if isinstance(shape, (list, tuple)):
        return math.prod(size(s) for s in shape if isinstance(s, (int, list, tuple)))
    return 1


def pick(shapes: list, kind: str) -> list:
    ordered = sorted(shapes, key=size)    # stable: ties keep upstream order
    n = len(ordered)
    if not n:
        return []
    positions = [n // 2] if kind == "single" else [k * n // 4 for k in (1, 2, 3)]
    return [ordered[i] for i in dict.fromkeys(positions)]


class KnownNames:
    """Every key FlagGems' shape lookup can reach in one or more checkouts."""

    def __init__(self, roots):
        self.names: set[str] = set()
        self.patterns: set[str] = set()
        self.classes: set[str] = set()
        self.indexes: list[ClassIndex] = []
        for root, repo in roots:
            index = ClassIndex.scan(root)
            self.indexes.append(index)
            self.classes |= index.benchmark_names()
            for node in Corpus.scan(root, repo, index=index).nodes:
                for name in node.op_names:
                    (self.patterns if "*" in name else self.names).add(name)

    def reaches(self, key: str) -> bool:
        return key in self.names or key in self.classes or \
            any(fnmatch.fnmatchcase(key, p) for p in self.patterns)


@by_file
def core_shapes(path: Path) -> dict:
    """The checkout's core_shapes.yaml as a mapping; Unsupported (one line) when it cannot be
    read or is not a mapping."""
    try:
        core = loads_yaml(read_text(path), unique_keys=False)   # as FlagGems reads it
    except OSError as exc:
        raise Unsupported(f"{path} cannot be read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise Unsupported(f"{path} is not valid YAML {yaml_problem(exc)}") from None
    except ValueError as exc:
        raise Unsupported(f"{path} cannot be read: {one_line(exc)}") from None
    if core is not None and not isinstance(core, dict):
        raise Unsupported(f"{path}: top level must be a mapping of op or class names")
    return core or {}


def derive(root: str | Path, kind: str, source: str = "") -> DerivedSet:
    root = Path(root)
    known = KnownNames([(root, "flaggems")])
    core = core_shapes(root / "benchmark" / "core_shapes.yaml")
    out = DerivedSet(kind, source=source)
    for key, entry in (core or {}).items():
        shapes = entry.get("shapes") if isinstance(entry, dict) else None
        if not known.reaches(str(key)) or not isinstance(shapes, list) or not shapes:
            out.dropped.append(str(key))
            continue
        derived = _entry(shapes, entry.get("shape_desc"), kind, "core_shapes")
        if derived is None:
            out.dropped.append(str(key))
        else:
            out.entries[str(key)] = derived
    index = known.indexes[0]
    for name in sorted(known.classes):
        found = index.hardcoded(name)
        if name in out.entries or found is None or not found.shapes or found.how == "none":
            continue
        derived = _entry(found.shapes, _class_desc(index, name), kind,
                         f"{found.owner}.{found.method}")
        if derived is not None:
            out.entries[name] = derived
    return out


def _negative(shape) -> bool:
    if isinstance(shape, (list, tuple)):
        return any(_negative(s) for s in shape)
    return isinstance(shape, int) and not isinstance(shape, bool) and shape < 0


def _entry(shapes, desc, kind, origin) -> dict | None:
    usable = [_plain(s) for s in shapes if not _negative(s)]
    if not usable:
        return None
    entry = {"shapes": pick(usable, kind), "from": origin}
    if desc:
        entry["shape_desc"] = str(desc)
    return entry


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def _class_desc(index: ClassIndex, name: str) -> str | None:
    for item in index.mro(name):
        if item.name == ROOT_CLASS:     # its "M, N" default says nothing about this class
            break
        for attr in ("shape_desc", "DEFAULT_SHAPE_DESC"):
            expr = item.attrs.get(attr)
            if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
                return expr.value
    return None


def render(derived: DerivedSet, command: str) -> str:
    """The shape file, flow-style shapes, with the rule and provenance in its header."""
    origin_counts = {"core": sum(e["from"] == "core_shapes" for e in derived.entries.values())}
    lines = [
        f"# zlh shape set '{derived.kind}': {RULE[derived.kind]}.",
        f"# Generated by: {command}",
        f"# From: {derived.source or 'a FlagGems checkout'}: benchmark/core_shapes.yaml "
        f"({origin_counts['core']} keys) and the literal shapes of classes that hard-code them "
        f"({len(derived.entries) - origin_counts['core']} keys, marked 'hard-coded').",
        "# Size of a shape = product of its positive integers; ties keep upstream order.",
        "# Keys: op names and benchmark class names, looked up as FlagGems does (op name, then",
        "# the class MRO). Regenerate after an upstream change; `zlh shapes check` lists keys",
        "# that no longer match anything.",
    ]
    if derived.dropped:
        lines.append(f"# Dropped (no op or class reaches them): {', '.join(derived.dropped)}")
    notes = {k: f"hard-coded in {e['from']}" for k, e in derived.entries.items()
             if e["from"] != "core_shapes"}
    return render_document(lines, derived.entries, notes)


def render_document(header: list[str], doc: dict, notes: dict | None = None) -> str:
    """A shape file: comment header, then one key per entry with flow-style shapes."""
    lines = list(header) + [""]
    for key, entry in doc.items():
        note = f"  # {notes[key]}" if notes and key in notes else ""
        lines.append(f"{_scalar(key)}:{note}")
        if entry.get("shape_desc"):
            lines.append(f"  shape_desc: {_scalar(entry['shape_desc'])}")
        lines.append("  shapes:")
        lines += [f"    - {_flow(shape)}" for shape in entry["shapes"]]
    return "\n".join(lines) + "\n"


def _flow(value) -> str:
    """One YAML value on one line (a bare scalar dumps with a document-end marker)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("...").strip()


_scalar = _flow


def unmatched(doc: dict, known: KnownNames) -> dict:
    """The entries of a shape document whose keys no op name or class reaches."""
    return {key: value for key, value in doc.items() if not known.reaches(str(key))}
