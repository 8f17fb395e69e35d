"""A compact fingerprint of what the function under test returned, for the A/B output gate.

A faster but wrong compiler must not read as a win. Every case stores, per output tensor, its
dtype and shape, a float64 norm, and a fixed strided sample of its elements; two runs with the
same seed must agree on these within a per-dtype tolerance.

A float element passes when |a - b| <= rtol * max(|b|, rms), rms being the output's root mean
square: a compiler may legitimately reorder a reduction (another tile size, split-K), which
moves elements near zero by more than their own size but never by much against the output's
scale. The rtol values sit above reordering noise (float32 matmul, K = 4096, different tiles:
up to ~3e-5) and below a real loss of precision (TF32 instead of IEEE float32: ~1e-3).
Integer and boolean outputs must match exactly.
"""
from __future__ import annotations

import math

SAMPLE = 256
# relative tolerance per dtype, for element samples (see above) and norms
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2}
DEFAULT_TOLERANCE = 2e-3


def digest(value) -> list | None:
    """Per tensor in the output (nested tuples/lists walked in order): a small summary.

    The sample is taken before any conversion, and the norm is accumulated in chunks, so a
    large output costs no more than a few MB of extra memory."""
    import torch  # heavy: imported only where used
    tensors = []

    def walk(item):
        if isinstance(item, torch.Tensor):
            tensors.append(item)
        elif isinstance(item, (list, tuple)):
            for sub in item:
                walk(sub)
    walk(value)
    if not tensors:
        return None
    return [_tensor_digest(t) for t in tensors]


def _tensor_digest(tensor) -> dict:
    import torch  # heavy: imported only where used
    entry = {"dtype": str(tensor.dtype).replace("torch.", ""), "shape": list(tensor.shape)}
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if not flat.numel():
        return entry
    entry["elements"] = flat.numel()
    step = max(1, flat.numel() // SAMPLE)
    entry["sample"] = [float(v) for v in flat[::step][:SAMPLE].to(torch.float64).cpu().tolist()]
    if flat.is_floating_point():
        norm_sq, nan, inf = 0.0, 0, 0
        for chunk in flat.split(1 << 22):
            data = chunk.to(torch.float64)
            finite = torch.isfinite(data)
            is_nan = int(torch.isnan(data).sum())
            nan += is_nan
            inf += int((~finite).sum()) - is_nan
            norm_sq += float(torch.where(finite, data, 0.0).square().sum())
        entry.update(norm=math.sqrt(norm_sq), nan=nan, inf=inf)
    return entry


def _close(a: float, b: float, tol: float) -> bool:
    if a == b:                 # equal values, infinities included
        return True
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):      # unequal, and no tolerance covers an infinity
        return False
    return abs(a - b) <= tol


def _rms(entry: dict) -> float:
    # `elements` counts real values (a complex element is two); older digests lack it
    total = entry.get("elements", math.prod(entry["shape"]))
    count = total - entry.get("nan", 0) - entry.get("inf", 0)
    return entry["norm"] / math.sqrt(count) if count > 0 else 0.0


def compare(a: list | None, b: list | None) -> str | None:
    """None when the outputs agree, else a one-line reason (also for a digest that is not
    of the shape zlh writes: a damaged results file cannot vouch for its outputs)."""
    try:
        return _compare(a, b)
    except (TypeError, KeyError, ValueError, AttributeError, IndexError):
        return "output digest damaged (not as zlh writes it): the outputs cannot be compared"


def _compare(a, b) -> str | None:
    if a is None or b is None:
        return None if a is b else "output recorded on one side only"
    if len(a) != len(b):
        return f"{len(a)} output tensors vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        where = f"output {i}" if len(a) > 1 else "output"
        if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            return f"{where}: {x['dtype']}{x['shape']} vs {y['dtype']}{y['shape']}"
        for kind in ("nan", "inf"):
            if x.get(kind, 0) != y.get(kind, 0):
                return f"{where}: {x.get(kind, 0)} {kind} vs {y.get(kind, 0)}"
        if "norm" in x:
            rtol = TOLERANCE.get(x["dtype"], DEFAULT_TOLERANCE)
            if not _close(x["norm"], y["norm"], rtol * abs(y["norm"])):
                return f"{where}: norm {x['norm']:.6g} vs {y['norm']:.6g}"
            scale = _rms(y)
        else:                  # integers and booleans (indices, masks): exact
            rtol, scale = 0.0, 0.0
        bad = [j for j, (u, v) in enumerate(zip(x.get("sample", []), y.get("sample", [])))
               if not _close(u, v, rtol * max(abs(v), scale))]
        if bad:
            j = bad[0]
            return (f"{where}: {len(bad)} of {len(x['sample'])} sampled elements differ "
                    f"(first: {x['sample'][j]:.6g} vs {y['sample'][j]:.6g})")
    return None
