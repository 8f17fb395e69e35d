"""The public `Case`: one measurement point of your own, for `harness.bench_cases` and
`zlh bench --cases`.

    Case(fn=my_softmax, baseline=torch.softmax_last, inputs=lambda: (x,),
         dtype="float16", shape="4096x4096")

`fn` is the function under test and `baseline` the reference (usually torch); both are
called with what `inputs()` returns: a tuple (positional arguments), a dict (keyword
arguments), a single value (one argument) or an `adapters.CaseInputs`. `inputs` is called
after zlh has seeded random, numpy and torch, so every run gets the same inputs. `dtype` and
`shape` label the row and, with `name`, are the key two runs are paired on. Optional:
`bytes` and `flops` per call (GB/s and TFLOP/s columns), `check` ("auto": compare with the
baseline within a per-dtype tolerance; a function `(out, ref)` raising AssertionError; None:
no check), `tolerance` (relative, for "auto").

`Case.sweep(...)` builds one case per (dtype, shape) from an input maker.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from harness.common.errors import UsageError

from ..base import CaseInputs

AUTO = "auto"
# Norm-wise relative error allowed by the "auto" check, by the output's dtype.
TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}
DEFAULT_TOLERANCE = 1e-5


@dataclass(frozen=True, kw_only=True)
class Case:
    fn: Callable[..., Any]
    baseline: Callable[..., Any]
    inputs: Callable[[], Any]
    dtype: str
    shape: Any
    name: str | None = None
    bytes: float | None = None
    flops: float | None = None
    check: Any = AUTO
    tolerance: float | None = None

    def __post_init__(self):
        for field_name in ("fn", "baseline", "inputs"):
            value = getattr(self, field_name)
            if not callable(value):
                raise UsageError(f"Case {field_name}: expected a callable, got "
                                 f"{_describe(value)}")
        object.__setattr__(self, "dtype", dtype_name(self.dtype))
        object.__setattr__(self, "shape", _shape(self.shape))
        if self.name is not None and (not isinstance(self.name, str) or not self.name):
            raise UsageError(f"Case name: expected a non-empty string, got {self.name!r}")
        for field_name in ("bytes", "flops", "tolerance"):
            value = getattr(self, field_name)
            if value is not None and not _positive(value):
                raise UsageError(f"Case {field_name}: expected a positive number, got {value!r}")
        if not (self.check in (AUTO, None) or callable(self.check)):
            raise UsageError(f"Case check: expected 'auto', None or a function (out, ref), "
                             f"got {self.check!r}")

    @property
    def shape_detail(self) -> str:
        return self.shape if isinstance(self.shape, str) else "x".join(map(str, self.shape))

    def build(self) -> CaseInputs:
        """The inputs as positional and keyword arguments."""
        made = self.inputs()
        if isinstance(made, CaseInputs):
            return made
        if isinstance(made, tuple):
            return CaseInputs(made)
        if isinstance(made, dict):
            return CaseInputs((), made)
        return CaseInputs((made,))

    def checker(self) -> Callable[[Any, Any], None] | None:
        if self.check is None or callable(self.check):
            return self.check
        return lambda out, ref: check_close(out, ref, self.tolerance)

    def metrics(self, inputs, torch_ms: float | None, gems_ms: float) -> dict:
        out = {}
        if self.bytes is not None:
            if torch_ms is not None:            # None: the baseline was not timed
                out["torch_gbps"] = self.bytes / (torch_ms * 1e-3) / 1e9
            out["gems_gbps"] = self.bytes / (gems_ms * 1e-3) / 1e9
        if self.flops is not None:
            out["tflops"] = self.flops / (gems_ms * 1e-3) / 1e12
        return out

    @classmethod
    def sweep(cls, *, fn, baseline, make_inputs: Callable[[Any, Any], Any],
              shapes: Sequence, dtypes: Sequence = ("float32",), name: str | None = None,
              bytes: Callable | None = None, flops: Callable | None = None,
              check: Any = AUTO, tolerance: float | None = None) -> list["Case"]:
        """One case per (dtype, shape): `make_inputs(shape, dtype)` builds the inputs
        (dtype as a torch.dtype); `bytes(shape, dtype)` / `flops(shape, dtype)` optional."""
        import torch  # heavy: imported only where used
        if isinstance(shapes, str) or not isinstance(shapes, Sequence) or not shapes:
            raise UsageError(f"Case.sweep shapes: expected a non-empty list, got {shapes!r}")
        if isinstance(dtypes, str) or not isinstance(dtypes, Sequence) or not dtypes:
            raise UsageError(f"Case.sweep dtypes: expected a non-empty list of dtypes (e.g. "
                             f"['float16']), got {dtypes!r}")
        cases = []
        for dtype in dtypes:
            torch_dtype = getattr(torch, dtype_name(dtype))
            for shape in shapes:
                cases.append(cls(
                    fn=fn, baseline=baseline, dtype=dtype, shape=shape, name=name,
                    inputs=lambda shape=shape, d=torch_dtype: make_inputs(shape, d),
                    bytes=bytes(shape, torch_dtype) if bytes else None,
                    flops=flops(shape, torch_dtype) if flops else None,
                    check=check, tolerance=tolerance))
        return cases


def dtype_name(dtype) -> str:
    """'float16' for "float16", torch.float16 or "torch.float16"."""
    import torch  # heavy: imported only where used
    text = str(dtype).removeprefix("torch.") if isinstance(dtype, (str, torch.dtype)) else ""
    if not text or not isinstance(getattr(torch, text, None), torch.dtype):
        raise UsageError(f"Case dtype: expected a torch dtype or its name (e.g. 'float16'), "
                         f"got {dtype!r}")
    return text


def check_close(out, ref, tolerance: float | None = None) -> None:
    """Raise AssertionError unless `out` matches `ref`: tensors of the same shape and dtype by
    norm-wise relative error (per-dtype tolerance unless given; integers and booleans
    exactly), sequences item by item, anything else by equality."""
    import torch  # heavy: imported only where used
    if isinstance(out, (tuple, list)) and isinstance(ref, (tuple, list)):
        if len(out) != len(ref):
            raise AssertionError(f"{len(out)} outputs, reference has {len(ref)}")
        for i, (o, r) in enumerate(zip(out, ref)):
            try:
                check_close(o, r, tolerance)
            except AssertionError as exc:
                raise AssertionError(f"output {i}: {exc}") from None
        return
    if isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor):
        _check_tensor(out, ref, tolerance)
    elif isinstance(out, torch.Tensor) or isinstance(ref, torch.Tensor):
        raise AssertionError(f"output is {_kind(out)}, reference is {_kind(ref)}")
    elif not out == ref:
        raise AssertionError(f"output {out!r} != reference {ref!r}")


def _check_tensor(out, ref, tolerance: float | None) -> None:
    import torch  # heavy: imported only where used
    if out.shape != ref.shape:
        raise AssertionError(f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if out.dtype != ref.dtype:
        raise AssertionError(f"dtype {str(out.dtype).removeprefix('torch.')} != reference "
                             f"{str(ref.dtype).removeprefix('torch.')}")
    if not (out.dtype.is_floating_point or out.dtype.is_complex):
        if not torch.equal(out.cpu(), ref.to(out.dtype).cpu()):
            raise AssertionError(f"{out.dtype} output differs from the reference")
        return
    limit = tolerance if tolerance is not None else TOLERANCE.get(
        str(out.dtype).removeprefix("torch."), DEFAULT_TOLERANCE)
    o, r = out.detach().cpu().to(torch.complex128 if out.is_complex() else torch.float64), \
        ref.detach().cpu().to(torch.complex128 if out.is_complex() else torch.float64)
    if torch.isnan(o).any() and not torch.equal(torch.isnan(o), torch.isnan(r)):
        raise AssertionError("output has NaN where the reference has none")
    o, r = torch.nan_to_num(o), torch.nan_to_num(r)
    error = float(torch.linalg.vector_norm(o - r)) / (float(torch.linalg.vector_norm(r)) or 1.0)
    if not error <= limit:
        raise AssertionError(f"relative error {error:.3g} > tolerance {limit:g}")


def _kind(value) -> str:
    """`a float32 tensor of shape (8,)`, `None`, `a tuple of 2`: what an output is, short."""
    import torch  # heavy: imported only where used
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype).removeprefix('torch.')} tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"


def _shape(shape) -> Any:
    if isinstance(shape, str) and shape.strip():
        return shape.strip()
    if isinstance(shape, Sequence) and not isinstance(shape, str) and \
            all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in shape):
        return [int(d) for d in shape]
    raise UsageError(f"Case shape: expected a label (e.g. '4096x4096') or a list of integers, "
                     f"got {shape!r}")


def _positive(value) -> bool:
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _describe(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}" if len(text) <= 60 else type(value).__name__
