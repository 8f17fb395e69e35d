import torch

from harness import outputs


def test_identical_outputs_agree_including_infinities():
    x = torch.tensor([1.0, float("inf"), -float("inf"), 2.0], dtype=torch.float16)
    assert outputs.compare(outputs.digest(x), outputs.digest(x.clone())) is None


def test_float_outputs_within_tolerance_agree_and_beyond_do_not():
    x = torch.randn(1000, dtype=torch.bfloat16)
    assert outputs.compare(outputs.digest(x), outputs.digest(x * (1 + 2 ** -9))) is None
    reason = outputs.compare(outputs.digest(x), outputs.digest(x * 1.5))
    assert reason and ("norm" in reason or "sampled" in reason)


def test_integer_outputs_must_match_exactly():
    idx = torch.arange(5000)
    other = idx.clone()
    other[::19] += 2
    assert outputs.compare(outputs.digest((idx,)), outputs.digest((idx,))) is None
    assert "sampled elements differ" in outputs.compare(outputs.digest(idx), outputs.digest(other))


def test_shape_dtype_nan_and_count_differences():
    a = outputs.digest((torch.zeros(4), torch.zeros(2)))
    assert "2 output tensors vs 1" == outputs.compare(a, outputs.digest(torch.zeros(4)))
    assert "float32[4] vs float32[5]" in outputs.compare(outputs.digest(torch.zeros(4)),
                                                          outputs.digest(torch.zeros(5)))
    nan = torch.tensor([float("nan"), 1.0])
    assert "nan" in outputs.compare(outputs.digest(nan), outputs.digest(torch.tensor([0.0, 1.0])))
    assert outputs.digest(3) is None and outputs.compare(None, None) is None


def test_digest_is_small_for_large_outputs():
    d = outputs.digest(torch.randn(3_000_000))
    assert len(d[0]["sample"]) == outputs.SAMPLE and d[0]["norm"] > 0
