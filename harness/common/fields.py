"""Typed fields of a JSON object zlh wrote and reads back (a plan, an op's outcome).

A file edited by hand or damaged on disk must end in one line that names the file, the field
and what was expected, never in a TypeError deep inside the command. `Fields(doc, where)`
reads one field at a time, raising UsageError(`<where>: field <name>: expected <what>, got
<value>`). A dotted name (`produced_by.tasks`) reads a field of a nested object; when an
object on the way is missing or of another type, the field itself is reported missing. A
reader with its own wording overrides `error`.
"""
from __future__ import annotations

import math
import numbers

from .errors import UsageError

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
        if isinstance(value, bool) or not isinstance(value, int) or \
                (low is not None and value < low) or (high is not None and value > high):
            bounds = (f" from {low} to {high}" if low is not None and high is not None else
                      f" >= {low}" if low is not None else
                      f" <= {high}" if high is not None else "")
            raise self.error(name, "an integer" + bounds, value)
        return value

    def number(self, name: str, default=_MISSING, low: float | None = None) -> float:
        value = self.get(name, default)
        if not _finite_number(value) or (low is not None and value < low):
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
        return self._list(name, default, _finite_number, "a list of finite numbers")

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


def _finite_number(value) -> bool:
    """A real number, finite, and not a bool."""
    return is_number(value) and math.isfinite(value)


def _lookup(doc, name: str, default):
    """doc[name]; for a dotted name absent as a key, the path through nested objects."""
    if not isinstance(doc, dict):
        return default
    if name in doc or "." not in name:
        return doc.get(name, default)
    head, _, rest = name.partition(".")
    return _lookup(doc.get(head), rest, default)
