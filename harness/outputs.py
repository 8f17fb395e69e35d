"""A compact fingerprint of what the function under test returned, for the A/B output gate.

A faster but wrong compiler must not read as a win. Every case stores, per output tensor, its
dtype and shape, a float64 norm, and a fixed strided sample of its elements; two runs with the
same seed must agree on these within a per-dtype tolerance.
"""
from __future__ import annotations

import math

SAMPLE = 256
# (relative, absolute) tolerance per dtype, for element samples and norms.
TOLERANCE = {"float64": (1e-9, 1e-12), "float32": (1e-5, 1e-6), "float16": (1e-3, 1e-4),
             "bfloat16": (1.6e-2, 1e-3)}
DEFAULT_TOLERANCE = (1e-3, 1e-4)


def digest(value) -> list | None:
    """Per tensor in the output (nested tuples/lists walked in order): a small summary."""
    import torch
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
    out = []
    for tensor in tensors:
        flat = tensor.detach().reshape(-1)
        entry = {"dtype": str(tensor.dtype).replace("torch.", ""), "shape": list(tensor.shape)}
        if flat.numel() and (flat.is_floating_point() or flat.is_complex() or
                             flat.dtype in (torch.int8, torch.int16, torch.int32, torch.int64,
                                            torch.uint8, torch.bool)):
            data = flat.to(torch.complex128 if flat.is_complex() else torch.float64)
            if flat.is_complex():
                data = torch.view_as_real(data).reshape(-1)
            step = max(1, data.numel() // SAMPLE)
            entry["norm"] = float(torch.linalg.vector_norm(torch.nan_to_num(data)).cpu())
            entry["nan"] = int(torch.isnan(data).sum().cpu())
            entry["sample"] = [float(v) for v in data[::step][:SAMPLE].cpu().tolist()]
        out.append(entry)
    return out


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= atol + rtol * abs(b)


def compare(a: list | None, b: list | None) -> str | None:
    """None when the outputs agree, else a one-line reason."""
    if a is None or b is None:
        return None if a is b else "output recorded on one side only"
    if len(a) != len(b):
        return f"{len(a)} output tensors vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        where = f"output {i}" if len(a) > 1 else "output"
        if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            return f"{where}: {x['dtype']}{x['shape']} vs {y['dtype']}{y['shape']}"
        if x.get("nan", 0) != y.get("nan", 0):
            return f"{where}: {x.get('nan', 0)} NaN vs {y.get('nan', 0)}"
        rtol, atol = TOLERANCE.get(x["dtype"], DEFAULT_TOLERANCE)
        if "norm" in x and not _close(x["norm"], y["norm"], rtol, atol):
            return f"{where}: norm {x['norm']:.6g} vs {y['norm']:.6g}"
        bad = [j for j, (u, v) in enumerate(zip(x.get("sample", []), y.get("sample", [])))
               if not _close(u, v, rtol, atol * max(1.0, abs(v)))]
        if bad:
            j = bad[0]
            return (f"{where}: {len(bad)} of {len(x['sample'])} sampled elements differ "
                    f"(first: {x['sample'][j]:.6g} vs {y['sample'][j]:.6g})")
    return None
