"""In-place functions: the output check and the output digest see the inputs as built."""
import copy

import torch

import harness
from harness.run.case import pristine_copy
from adapters.base import CaseInputs

FAST = {"warmup_ms": 1.0, "min_samples": 3, "min_time_ms": 0.0, "max_time_ms": 20.0}


def _inputs():
    return (torch.arange(8, dtype=torch.float32),)


def _bench(fn, baseline, tmp_path):
    case = harness.Case(fn=fn, baseline=baseline, inputs=_inputs, dtype="float32", shape=[8])
    return harness.bench_cases([case], op="inplace", out=str(tmp_path), echo=lambda _: None,
                               **FAST)


def test_a_correct_in_place_function_passes(tmp_path):
    run = _bench(lambda x: x.add_(1), lambda x: x + 1, tmp_path)
    assert [r.status for r in run.rows] == ["SUCCESS"], run.rows[0].markers
    # the digest is of the output computed from the inputs as built: 1..8
    assert run.rows[0].extra["output"][0]["sample"][:3] == [1.0, 2.0, 3.0]


def test_a_wrong_in_place_function_fails(tmp_path):
    run = _bench(lambda x: x.add_(2), lambda x: x + 1, tmp_path)
    assert [r.status for r in run.rows] == ["FAILED"] and run.rows[0].reason == "mismatch"


def test_an_in_place_baseline_is_judged_on_the_inputs_as_built(tmp_path):
    run = _bench(lambda x: x + 1, lambda x: x.add_(1), tmp_path)
    assert [r.status for r in run.rows] == ["SUCCESS"], run.rows[0].markers
    run = _bench(lambda x: x + 2, lambda x: x.add_(1), tmp_path / "b")
    assert [r.status for r in run.rows] == ["FAILED"]


def test_the_copy_keeps_views_strides_and_shared_storage():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    view = base[:, ::2]
    made = CaseInputs((view, base), {"k": base.t()})
    for copied in (pristine_copy(made),
                   # a tensor that refuses deepcopy (not a graph leaf) takes the other path
                   pristine_copy(CaseInputs((view, base, torch.ones(2, requires_grad=True) * 2),
                                            {"k": base.t()}))):
        v, b = copied.args[0], copied.args[1]
        assert v.stride() == view.stride() and torch.equal(v, view)
        assert v.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        assert b.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
        v.add_(100)
        assert torch.equal(base, torch.arange(24, dtype=torch.float32).reshape(4, 6))
        assert copied.kwargs["k"].stride() == (1, 6)
    assert copy.deepcopy(made) is not made
