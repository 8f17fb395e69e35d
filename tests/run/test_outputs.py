import torch

from harness.run import outputs


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


def test_reordered_float32_reduction_agrees_but_lost_precision_does_not():
    """Another tile order of the same matmul is not a wrong result; TF32-like rounding of the
    inputs (10-bit mantissa) is, and so is one element off by 1% of the output's scale."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 4096, generator=g)
    b = torch.randn(4096, 256, generator=g)
    ref = a @ b
    reordered = sum(a[:, k:k + 96] @ b[k:k + 96] for k in range(0, 4096, 96))
    assert not torch.equal(ref, reordered)
    assert outputs.compare(outputs.digest(reordered), outputs.digest(ref)) is None

    def tf32(t):
        return (t.view(torch.int32) & ~0x1FFF).view(torch.float32)
    lossy = tf32(a) @ tf32(b)
    reason = outputs.compare(outputs.digest(lossy), outputs.digest(ref))
    assert reason and ("norm" in reason or "sampled elements differ" in reason)
    one_off = ref.clone()
    one_off.view(-1)[0] += 0.01 * float(ref.square().mean().sqrt())
    assert "1 of 256 sampled elements differ" in outputs.compare(outputs.digest(one_off),
                                                                 outputs.digest(ref))


def test_an_infinity_is_never_within_tolerance_of_anything_else():
    plus = torch.tensor([1.0, float("inf"), 2.0])
    minus = torch.tensor([1.0, float("-inf"), 2.0])
    assert "sampled elements differ" in outputs.compare(outputs.digest(minus),
                                                        outputs.digest(plus))


def test_complex_outputs_scale_by_their_real_values():
    z = torch.randn(64, dtype=torch.complex64)
    d = outputs.digest(z)
    assert d[0]["elements"] == 128
    assert outputs.compare(outputs.digest(z * (1 + 1e-6)), d) is None
    assert outputs.compare(outputs.digest(z * 1.01), d) is not None
