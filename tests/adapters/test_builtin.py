import pytest
import torch

import backends
from adapters import get_adapter
from adapters.builtin import SLOW_ENV, relative_error
from harness.run.case import seed_everything
from harness.run.shapes import ShapeFile


@pytest.fixture
def cpu():
    backend = backends.get_backend("cpu")
    backend.activate(0)
    return backend


@pytest.mark.parametrize("op", ["add", "softmax", "mm"])
@pytest.mark.parametrize("slow", ["0", "1"])
def test_builtin_kernels_match_torch_under_the_interpreter(op, slow, cpu, monkeypatch):
    monkeypatch.setenv(SLOW_ENV, slow)
    adapter = get_adapter("builtin")
    cases = list(adapter.cases(op, ["float32", "float16"], None, "core", cpu, "cpu"))
    assert len(cases) == 4
    for case in cases:
        seed_everything(0)
        inputs = case.build()
        out = case.under_test(*inputs.args)
        ref = case.baseline(*inputs.args)
        case.check(out, ref)                   # raises on a wrong result
        assert case.info["slow"] is (slow == "1")


def test_check_catches_a_wrong_result(cpu):
    case = next(get_adapter("builtin").cases("add", ["float32"], None, "core", cpu, "cpu"))
    inputs = case.build()
    with pytest.raises(AssertionError, match="relative error"):
        case.check(case.under_test(*inputs.args) + 1, case.baseline(*inputs.args))


def test_relative_error_treats_nan_as_infinite():
    assert relative_error(torch.tensor([float("nan")]), torch.tensor([1.0])) == float("inf")


def test_shape_file_entries_are_used(cpu):
    adapter = get_adapter("builtin")
    doc = {"mm": {"shapes": [[8, 16, 24]], "shape_desc": "M, N, K"}}
    (case,) = adapter.cases("mm", ["float32"], ShapeFile("s.yaml", "0" * 64, doc), "core", cpu,
                            "cpu")
    a, b = case.build().args
    assert a.shape == (8, 24) and b.shape == (24, 16)
    assert adapter.shapes_used("mm") == {"mm": {"shapes": [[8, 16, 24]], "shape_desc": "M, N, K"}}


def test_comprehensive_level_adds_shapes(cpu):
    adapter = get_adapter("builtin")
    core = list(adapter.cases("add", ["float32"], None, "core", cpu, "cpu"))
    more = list(adapter.cases("add", ["float32"], None, "comprehensive", cpu, "cpu"))
    assert len(more) > len(core)
