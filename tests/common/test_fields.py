"""harness.common.fields: the raising reader, the collecting checker and the dataclass check
agree on what a number is (booleans never are)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pytest

from harness.common.errors import InvalidValue, UsageError
from harness.common.fields import Checker, Fields, check_fields, is_finite_number, is_int


def test_predicates_refuse_booleans_and_non_finite_numbers():
    assert is_int(3) and not is_int(True) and not is_int(3.0)
    assert is_finite_number(2.5) and not is_finite_number(False)
    assert not is_finite_number(math.inf) and not is_finite_number("1")


def test_the_raising_reader_names_the_field():
    f = Fields({"n": True, "x": {"y": 2}}, "plan.json")
    with pytest.raises(UsageError, match=r"^plan.json: field n: expected an integer >= 0, got True$"):
        f.int("n", low=0)
    assert f.int("x.y") == 2


def test_the_checker_collects_every_violation():
    c = Checker()
    doc = {"name": "", "n": 1.5, "extra": 1, "path": "rel", "kind": "x"}
    c.keys(doc, {"name", "n", "path", "kind"}, "doc")
    assert c.text(doc, "name", "doc.name") is None
    assert c.number(doc, "n", "doc.n", integer=True) is None
    assert c.absolute(doc, "path", "doc.path") is None
    assert c.text(doc, "kind", "doc.kind", pattern=re.compile(r"[a-z]+$"), choices=["a"]) is None
    assert c.obj(doc, "missing", "doc.missing") is None
    assert c.problems == ["doc.extra: unknown field", "doc.name: must be a non-empty string",
                          "doc.n: must be an integer, got 1.5",
                          "doc.path: must be an absolute path, got 'rel'",
                          "doc.kind: 'x' is not one of a", "doc.missing: missing"]


def test_check_fields_raises_invalid_value():
    @dataclass
    class Thing:
        count: int = 1
        ms: float = 0.0

    check_fields(Thing(), {"count": 1}, ("ms",))
    with pytest.raises(InvalidValue, match=r"^Thing: count must be an integer >= 1, got True$"):
        check_fields(Thing(count=True), {"count": 1}, ("ms",))
    with pytest.raises(InvalidValue, match=r"^Thing: ms must be a finite number >= 0, got nan$"):
        check_fields(Thing(ms=math.nan), {"count": 1}, ("ms",))
