"""Reading typed fields out of a JSON document while collecting violations, each one line
naming its field path (`protocol.cells[1].role: ...`)."""
from __future__ import annotations

import math
import re


class Checker:
    """Collects violations while reading typed fields; each names its field path."""

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
