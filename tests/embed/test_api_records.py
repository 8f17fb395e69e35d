"""The exported record types refuse garbage with a one-line zlh error naming the type and
the field, when an embedding tool calls their from_dict / constructor directly."""
from __future__ import annotations

import pytest

from harness import ABReport, ABRow, Caliber, Measurement, Row, UsageError
from harness.common.errors import InvalidValue
from harness.store.results import SUCCESS

CALIBER = dict(backend="cpu", device="cpu", timer="host", bench_level="core",
               shape_mode="default", tuner_cache="none", repeat=1, l2_policy="none",
               warmup_ms=5.0, stopping={"min_samples": 5}, autotune_mode="record",
               ir_capture=True, ir_stage="ttgir", seed=0)


def _row() -> Row:
    m = Measurement((1.0, 1.1, 0.9), "host", calls_per_sample=2, warmup_calls=3,
                    repeats=(1.0, 1.05))
    return Row(op="add", dtype="float32", shape=[4], shape_detail="[4]", status=SUCCESS,
               torch=m, gems=m, metrics={"tflops": 1.5}, markers=["x"], variant="v")


def _raises(kind, call, *words):
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return info.value


# ---- valid input round-trips as before ------------------------------------------------
def test_valid_records_round_trip_unchanged():
    cal = Caliber(**CALIBER)
    assert Caliber.from_dict(cal.to_dict()) == cal
    assert Caliber.from_dict({"backend": "cpu"}).repeat == "<missing>"   # older runs
    assert Caliber.from_dict({}, fallback={"seed": 7}).seed == 7
    row = _row()
    assert Row.from_dict(row.to_dict()).to_dict() == row.to_dict()
    m = row.torch
    assert Measurement.from_dict(m.to_dict()) == Measurement(
        tuple(float(f"{v:.6g}") for v in m.samples_ms), "host", 2, 3, repeats=(1.0, 1.05))
    ab = ABRow("", "float32", "[4]", 0, 1.0, 0.9, delta_pct=11.1, significant=True,
               direction=1)
    assert ABRow.from_dict(ab.__dict__ | {}) == ab
    report = ABReport("add", {}, {"A": {}, "B": {}}, [ab])
    assert ABReport.from_dict(report.to_dict()) == report


# ---- Caliber --------------------------------------------------------------------------
def test_caliber_from_dict_refuses_garbage():
    _raises(UsageError, lambda: Caliber.from_dict(5), "Caliber", "expected an object", "5")
    _raises(UsageError, lambda: Caliber.from_dict(CALIBER | {"backend": 5}),
            "Caliber: field backend: expected a string, got 5")
    _raises(UsageError, lambda: Caliber.from_dict(CALIBER | {"repeat": 0}),
            "Caliber", "field repeat", "integer >= 1")
    _raises(UsageError, lambda: Caliber.from_dict(CALIBER | {"stopping": [1]}),
            "Caliber", "field stopping", "an object")
    _raises(UsageError, lambda: Caliber.from_dict(CALIBER | {"warmup_ms": -1}),
            "Caliber", "field warmup_ms", "finite number")
    _raises(UsageError, lambda: Caliber.from_dict({}, fallback={"seed": "x"}),
            "Caliber", "field seed", "integer")
    _raises(UsageError, lambda: Caliber.from_dict({}, fallback=3), "Caliber", "fallback")


# ---- Row ------------------------------------------------------------------------------
def test_row_from_dict_refuses_garbage():
    good = _row().to_dict()
    _raises(UsageError, lambda: Row.from_dict(5), "Row", "expected an object")
    _raises(UsageError, lambda: Row.from_dict({}), "Row: field op", "got nothing")
    _raises(UsageError, lambda: Row.from_dict(good | {"status": "OK"}),
            "Row", "field status", "SUCCESS or FAILED or SKIPPED")
    _raises(UsageError, lambda: Row.from_dict(good | {"occurrence": -1}),
            "Row", "field occurrence", ">= 0")
    _raises(UsageError, lambda: Row.from_dict(good | {"markers": "x"}),
            "Row", "field markers", "list of strings")
    _raises(UsageError, lambda: Row.from_dict(good | {"tflops": "fast"}),
            "Row", "field tflops", "finite number")
    _raises(UsageError, lambda: Row.from_dict(good | {"torch": 3}),
            "Row", "field torch", "an object")
    _raises(UsageError, lambda: Row.from_dict(good | {"gems": {"timer": "host"}}),
            "Row", "field gems.samples_ms", "got nothing")
    bad = good | {"gems": good["gems"] | {"samples_ms": [1.0, -2.0]}}
    _raises(UsageError, lambda: Row.from_dict(bad), "Row", "gems.samples_ms", "latencies")


# ---- Measurement ----------------------------------------------------------------------
def test_measurement_constructor_refuses_garbage():
    err = _raises(InvalidValue, lambda: Measurement([], "host"), "Measurement", "samples_ms")
    assert isinstance(err, ValueError)          # code catching ValueError still works
    _raises(InvalidValue, lambda: Measurement((), "host"), "Measurement", "samples_ms",
            "non-empty")
    _raises(InvalidValue, lambda: Measurement(("1",), "host"), "Measurement", "samples_ms")
    _raises(InvalidValue, lambda: Measurement((float("nan"),), "host"), "samples_ms")
    _raises(InvalidValue, lambda: Measurement((-1.0,), "host"), "samples_ms", ">= 0")
    _raises(InvalidValue, lambda: Measurement((1.0,), 5), "Measurement", "timer")
    _raises(InvalidValue, lambda: Measurement((1.0,), "host", calls_per_sample=0),
            "Measurement", "calls_per_sample", "integer >= 1")
    _raises(InvalidValue, lambda: Measurement((1.0,), "host", warmup_calls=1.5),
            "Measurement", "warmup_calls")
    _raises(InvalidValue, lambda: Measurement((1.0,), "host", repeats=(None,)),
            "Measurement", "repeats")
    _raises(InvalidValue, lambda: Measurement((1.0,), "host", clocks=(5,)),
            "Measurement", "clocks")
    _raises(InvalidValue, lambda: Measurement((1.0,), "host", undersampled="no"),
            "Measurement", "undersampled")


def test_measurement_from_dict_refuses_garbage():
    good = {"samples_ms": [1.0, 2.0], "timer": "host"}
    _raises(UsageError, lambda: Measurement.from_dict(None), "Measurement",
            "expected an object")
    _raises(UsageError, lambda: Measurement.from_dict({}), "Measurement: field samples_ms",
            "got nothing")
    _raises(UsageError, lambda: Measurement.from_dict(good | {"samples_ms": []}),
            "Measurement", "field samples_ms", "at least one sample")
    _raises(UsageError, lambda: Measurement.from_dict(good | {"timer": 3}),
            "Measurement", "field timer", "string")
    _raises(UsageError, lambda: Measurement.from_dict(good | {"calls_per_sample": 0}),
            "Measurement", "field calls_per_sample", ">= 1")
    _raises(UsageError, lambda: Measurement.from_dict(good | {"clocks": [5]}),
            "Measurement", "field clocks")
    _raises(UsageError, lambda: Measurement.from_dict(
        good | {"clocks": [{"sm_clock_mhz": "fast"}]}), "Measurement", "field clocks",
        "clock readings")
    _raises(UsageError, lambda: Measurement.from_dict(good | {"fallback": 1}),
            "Measurement", "field fallback", "string")


# ---- ABReport / ABRow -----------------------------------------------------------------
def test_ab_records_from_dict_refuse_garbage():
    row = {"variant": "", "dtype": "float32", "shape_detail": "[4]", "occurrence": 0,
           "a_ms": 1.0, "b_ms": 0.9}
    _raises(UsageError, lambda: ABReport.from_dict({}), "ABReport: field op")
    _raises(UsageError, lambda: ABReport.from_dict([]), "ABReport", "expected an object")
    _raises(UsageError, lambda: ABReport.from_dict({"op": "add", "rows": 5}),
            "ABReport", "field rows", "a list")
    _raises(UsageError, lambda: ABReport.from_dict({"op": "add", "rows": [5]}),
            "ABReport: rows[0]", "expected an object")
    _raises(UsageError, lambda: ABReport.from_dict({"op": "add", "sides": {"A": {}}}),
            "ABReport", "field B")
    _raises(UsageError, lambda: ABRow.from_dict({}), "ABRow: field variant")
    _raises(UsageError, lambda: ABRow.from_dict(row | {"a_ms": "slow"}),
            "ABRow", "field a_ms", "finite number")
    _raises(UsageError, lambda: ABRow.from_dict(row | {"direction": 2}),
            "ABRow", "field direction", "-1, 0 or 1")

