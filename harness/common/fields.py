"""Checking typed fields: of a JSON object zlh wrote and reads back (a plan, an op's outcome,
a manifest) and of a harness type built in code (`Measurement`, `StoppingRule`). The one
place that says what a number, an integer or a string field is; three ways to report:

* `Fields(doc, where)` reads one field at a time and raises at the first bad one. A file
  edited by hand or damaged on disk must end in one line that names the file, the field and
  what was expected, never in a TypeError deep inside the command: UsageError(`<where>: field
  <name>: expected <what>, got <value>`). A dotted name (`produced_by.tasks`) reads a field of
  a nested object; when an object on the way is missing or of another type, the field itself
  is reported missing. A reader with its own wording overrides `error`.
* `Checker()` collects every violation instead (`<path>: <message>` in `problems`), for a
  document whose author wants all its mistakes at once (a product manifest).
* `check_fields(obj, ints, numbers)` checks a dataclass's own fields, raising InvalidValue
  (`<Type>: <name> must be ...`): a UsageError that is also the ValueError code written
  against these types catches.

The predicates `is_number`, `is_finite_number` and `is_int` are what every check above means
by a number: booleans are never numbers.
"""
from __future__ import annotations

import math
import numbers
import re

from .errors import InvalidValue, UsageError

_MISSING = object()


class Fields:
    def __init__(self, doc: dict, where: str):
        self.doc, self.where = doc, where

    def error(self, name: str, what: str, value) -> UsageError:
        """The UsageError for field `name`: expected `what`, got `value`."""
        shown = "nothing" if value is _MISSING else repr(value)[:60]
        where = f"{self.where}: " if self.where else ""
        return UsageError(f"{where}field {name}: expected {what}, got {shown}")

    @staticmethod
    def missing(value) -> bool:
        """Whether `value`, as `error` gets it, stands for a field that is not there."""
        return value is _MISSING

    def get(self, name: str, default=_MISSING):
        value = _lookup(self.doc, name, default)
        if value is _MISSING:
            raise self.error(name, "a value", value)
        return value

    def str(self, name: str, default=_MISSING, empty: bool = True) -> str:
        value = self.get(name, default)
        if not isinstance(value, str) or (not empty and not value):
            raise self.error(name, "a string" if empty else "a non-empty string", value)
        return value

    def int(self, name: str, default=_MISSING, low: int | None = None,
            high: int | None = None) -> int:
        value = self.get(name, default)
        if not is_int(value) or \
                (low is not None and value < low) or (high is not None and value > high):
            bounds = (f" from {low} to {high}" if low is not None and high is not None else
                      f" >= {low}" if low is not None else
                      f" <= {high}" if high is not None else "")
            raise self.error(name, "an integer" + bounds, value)
        return value

    def number(self, name: str, default=_MISSING, low: float | None = None) -> float:
        value = self.get(name, default)
        if not is_finite_number(value) or (low is not None and value < low):
            raise self.error(name, "a finite number" + (f" >= {low:g}" if low is not None
                                                        else ""), value)
        return float(value)

    def bool(self, name: str, default=_MISSING) -> bool:
        value = self.get(name, default)
        if not isinstance(value, bool):
            raise self.error(name, "true or false", value)
        return value

    def strs(self, name: str, default=_MISSING) -> list[str]:
        return self._list(name, default, lambda v: isinstance(v, str), "a list of strings")

    def numbers(self, name: str, default=_MISSING) -> list[float]:
        """A list of finite numbers (booleans are not numbers)."""
        return self._list(name, default, is_finite_number, "a list of finite numbers")

    def objects(self, name: str, default=_MISSING) -> list[dict]:
        return self._list(name, default, lambda v: isinstance(v, dict), "a list of objects")

    def _list(self, name: str, default, accepts, what: str) -> list:
        value = self.get(name, default)
        if not isinstance(value, list) or not all(accepts(v) for v in value):
            raise self.error(name, what, value)
        return list(value)

    def object(self, name: str, default=_MISSING) -> dict:
        value = self.get(name, default)
        if not isinstance(value, dict):
            raise self.error(name, "an object", value)
        return value

    def str_map(self, name: str, default=_MISSING) -> dict[str, str]:
        """An object whose keys and values are all strings (e.g. id -> sha256)."""
        value = self.get(name, default)
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in value.items()):
            raise self.error(name, "an object of strings", value)
        return dict(value)

    def at(self, name: str, index: int) -> "Fields":
        """The fields of the index-th object of list `name`."""
        return Fields(self.doc[name][index], f"{self.where}: {name}[{index}]")


def is_number(value) -> bool:
    """A real number (an int or float, numpy's included), not a bool: what a stored numeric
    field must be before it is formatted or compared."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite_number(value) -> bool:
    """A real number, finite, and not a bool."""
    return is_number(value) and math.isfinite(value)


def finite(value) -> float | None:
    """A float from a number or a cell's text, or None for anything that is not a finite
    number (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return None
    return float(value) if math.isfinite(value) else None


def is_int(value) -> bool:
    """A Python int, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_fields(obj, ints: dict, numbers: tuple) -> None:
    """InvalidValue unless each of `ints` (name -> minimum) is an int (not a bool) at least
    its minimum and each of `numbers` a finite real number >= 0 (a dataclass's fields)."""
    kind = type(obj).__name__
    for name, low in ints.items():
        value = getattr(obj, name)
        if not is_int(value) or value < low:
            raise InvalidValue(f"{kind}: {name} must be an integer >= {low}, got {value!r}")
    for name in numbers:
        value = getattr(obj, name)
        if not is_finite_number(value) or value < 0:
            raise InvalidValue(f"{kind}: {name} must be a finite number >= 0, got {value!r}")


def _lookup(doc, name: str, default):
    """doc[name]; for a dotted name absent as a key, the path through nested objects."""
    if not isinstance(doc, dict):
        return default
    if name in doc or "." not in name:
        return doc.get(name, default)
    head, _, rest = name.partition(".")
    return _lookup(doc.get(head), rest, default)


class Checker:
    """Collects violations while reading typed fields; each names its field path
    (`protocol.cells[1].role: ...`). A reader returns the value, or None after recording
    why it is not one."""

    def __init__(self):
        self.problems: list[str] = []

    def bad(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def keys(self, doc: dict, known: set, where: str) -> None:
        for key in sorted(set(doc) - known):
            self.bad(f"{where}.{key}" if where else key, "unknown field")

    def obj(self, doc: dict, key: str, where: str, optional: bool = False) -> dict | None:
        value = doc.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, dict):
            self.bad(where, "must be an object" if key in doc else "missing")
            return None
        return value

    def text(self, doc: dict, key: str, where: str, optional: bool = False,
             pattern: re.Pattern | None = None, choices=None) -> str | None:
        value = doc.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            self.bad(where, "must be a non-empty string" if key in doc else "missing")
            return None
        if pattern is not None and not pattern.match(value):
            self.bad(where, f"{value!r} does not match {pattern.pattern}")
            return None
        if choices is not None and value not in choices:
            self.bad(where, f"{value!r} is not one of {', '.join(choices)}")
            return None
        return value

    def strings(self, doc: dict, key: str, where: str, optional: bool = False
                ) -> list[str] | None:
        value = doc.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, list) or not value or \
                not all(isinstance(v, str) and v.strip() for v in value):
            self.bad(where, "must be a non-empty list of non-empty strings"
                     if key in doc else "missing")
            return None
        if len(set(value)) != len(value):
            self.bad(where, "has duplicates")
        return value

    def number(self, doc: dict, key: str, where: str, optional: bool = False,
               integer: bool = False, low: float | None = None, high: float | None = None,
               strict_low: bool = False):
        value = doc.get(key)
        if value is None and optional:
            return None
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or \
                (isinstance(value, float) and not math.isfinite(value)):
            kind = "an integer" if integer else "a finite number"
            self.bad(where, f"must be {kind}, got {value!r}" if key in doc else "missing")
            return None
        if low is not None and (value <= low if strict_low else value < low):
            self.bad(where, f"must be {'>' if strict_low else '>='} {low:g}, got {value!r}")
        if high is not None and value > high:
            self.bad(where, f"must be <= {high:g}, got {value!r}")
        return value

    def absolute(self, doc: dict, key: str, where: str, optional: bool = True) -> str | None:
        value = self.text(doc, key, where, optional=optional)
        if value is not None and not value.startswith("/"):
            self.bad(where, f"must be an absolute path, got {value!r}")
            return None
        return value
