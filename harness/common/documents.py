"""JSON and YAML documents a person wrote or a disk may have damaged, parsed strictly.

Three things the parsers accept without a word are refused here:

* a key given twice in one object or mapping: the parser keeps the last value and the first
  is lost (a shape file naming `mm:` twice measures only the second list);
* a document nested deeper than any zlh reads (`MAX_DEPTH`), or a YAML alias that refers to
  itself (`a: &x [*x]`): the parser, or the code walking the result, would end in a
  RecursionError instead of a message.

* a number that is not finite (`NaN`, `Infinity`, `1e999`): zlh writes null for a number it
  lacks, so one is damage (NotFinite names the field).

Each is a ValueError with one line; every reader already turns a ValueError into its own
`zlh: FILE …` line and exit code.
"""
from __future__ import annotations

import json
import math
from typing import Any

import yaml

MAX_DEPTH = 64          # zlh's deepest document (a product manifest) nests 6 levels
MAX_VALUES = 5_000_000  # values a document may expand to; far above any file zlh reads


class NotFinite(ValueError):
    """A number that is not finite (NaN, Infinity, 1e999) in a JSON document: `field` is its
    path (`wall_s`, `rows[0].a_ms`)."""

    def __init__(self, field: str, value: float):
        self.field = field
        shown = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        super().__init__(f"field {field}: expected a finite number, got {shown} (zlh writes "
                         f"none: the file was edited or damaged)")


def loads_json(text: str, *, constants: bool = False) -> Any:
    """json.loads, refusing duplicate keys, deep nesting and, unless `constants`, every number
    that is not finite — the NaN and Infinity literals strict JSON has not, and numbers too
    large for a float (1e999) — with NotFinite naming the field. zlh writes none (it writes
    null for a number it does not have), so one in a file zlh reads is damage."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_pairs)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    check_depth(value)
    if not constants:
        check_finite(value)
    return value


def check_finite(value: Any, path: str = "") -> None:
    """NotFinite for the first float in `value` (walked in document order) that is not
    finite."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotFinite(path or "(the document)", value)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_finite(item, f"{path}[{index}]")


def loads_yaml(text: str, unique_keys: bool = True) -> Any:
    """yaml.safe_load, refusing duplicate keys, deep nesting and aliases to themselves.
    YAML syntax errors stay yaml.YAMLError (their readers name the line). `unique_keys=False`
    reads a file another program owns as that program does (the last value of a key wins)."""
    try:
        value = yaml.load(text, Loader=_UniqueKeyLoader if unique_keys  # noqa: S506 - safe
                          else yaml.SafeLoader)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    check_depth(value)
    return value


def yaml_problem(exc: Exception) -> str:
    """One line for a YAML error: `at line N: <problem>`."""
    mark = getattr(exc, "problem_mark", None)
    at = f"at line {mark.line + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
    return f"{at}{problem}"


def check_depth(value: Any) -> None:
    """ValueError when containers nest deeper than MAX_DEPTH, contain themselves, or expand
    (YAML aliases repeat a node wherever they stand) to more than MAX_VALUES values. Each
    container is walked once, however many aliases refer to it."""
    if _walk(value, 0, (), {})[0] > MAX_VALUES:
        raise ValueError(f"expands to more than {MAX_VALUES:,} values (YAML aliases that "
                         f"repeat a node many times over)")


def _walk(value: Any, depth: int, path: tuple, seen: dict) -> tuple[int, int]:
    """(values, levels) `value` stands for once every alias is expanded."""
    if not isinstance(value, (dict, list, tuple)):
        return 1, 0
    if id(value) in path:
        raise ValueError("a YAML alias refers to the node that contains it")
    if id(value) not in seen:
        if depth >= MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
        items = value.values() if isinstance(value, dict) else value
        parts = [_walk(item, depth + 1, path + (id(value),), seen) for item in items]
        seen[id(value)] = (min(1 + sum(p[0] for p in parts), MAX_VALUES + 1),
                           1 + max((p[1] for p in parts), default=0))
    size, levels = seen[id(value)]
    if depth + levels > MAX_DEPTH:         # the same node again, reached deeper
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return size, levels


def _unique_pairs(pairs) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object (the first would be "
                             f"lost)")
        out[key] = value
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader whose mappings refuse a key given twice."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue                # `<<: *base` may be overridden on purpose
            key = self.construct_object(key_node, deep=True)
            try:
                line = seen.get(key)
            except TypeError:           # an unhashable key: SafeLoader says so itself
                break
            if line is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice (first at line {line}; the "
                                f"first would be lost)", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)
