"""The builtin adapter: three Triton kernels written here, each against its torch reference.

It lets zlh run and be tested without FlagGems, on a GPU or on the CPU through Triton's
interpreter. It needs a Triton: the installed compiler build, or `pip install 'zlh[triton]'`.
`ZLH_BUILTIN_SLOW=1` (read when cases are built) makes every kernel do more work for the same
result, for demonstrating A/B comparisons.
"""
from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import torch

from harness.common.errors import UsageError

from ..base import Adapter, Case, CaseInputs, MissingShapes
from .faults import FAULT_OPS, fault_case

SLOW_ENV = "ZLH_BUILTIN_SLOW"
FLOAT_DTYPES = ("float16", "bfloat16", "float32")
# Triton's interpreter computes through numpy, which has no bfloat16.
INTERPRETER_DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class OpSpec:
    name: str
    shape_desc: str
    shapes: dict            # level -> list of shapes (device / interpreter variants below)
    interpreter_shapes: dict
    make: Callable          # (shape, dtype, device) -> CaseInputs
    reference: Callable     # torch baseline
    kernel: str             # wrapper name in kernels.py
    tolerance: dict         # dtype -> max relative error (norm-wise)
    bytes_moved: Callable   # (shape, element_size) -> bytes
    flops: Callable | None = None
    rank: int | None = None  # sizes a shape must have (None: any number)


def _elems(shape) -> int:
    return int(math.prod(shape))


OPS = {
    "add": OpSpec(
        name="add", shape_desc="shape",
        shapes={"core": [[4096], [1048576], [16777216], [64, 512, 512]],
                "comprehensive": [[1024, 1024, 1024], [268435456], [1000003]]},
        interpreter_shapes={"core": [[1000], [4096]], "comprehensive": [[3, 333]]},
        make=lambda shape, dtype, device: CaseInputs(
            (torch.randn(shape, dtype=dtype, device=device),
             torch.randn(shape, dtype=dtype, device=device))),
        reference=torch.add, kernel="add",
        tolerance={"float32": 1e-6, "float16": 1e-3, "bfloat16": 8e-3},
        bytes_moved=lambda shape, size: 3 * _elems(shape) * size,
    ),
    "softmax": OpSpec(
        name="softmax", shape_desc="M, N",
        shapes={"core": [[1024, 256], [1024, 1024], [4096, 4096], [16384, 1024]],
                "comprehensive": [[65536, 128], [256, 32768], [1, 65536]]},
        interpreter_shapes={"core": [[4, 64], [16, 200]], "comprehensive": [[2, 1024]]},
        make=lambda shape, dtype, device: CaseInputs(
            (torch.randn(shape, dtype=dtype, device=device),)),
        reference=lambda x: torch.softmax(x, dim=-1), kernel="softmax",
        tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},
        bytes_moved=lambda shape, size: 2 * _elems(shape) * size, rank=2,
    ),
    "mm": OpSpec(
        name="mm", shape_desc="M, N, K",
        shapes={"core": [[1024, 1024, 1024], [2048, 2048, 2048], [4096, 4096, 4096],
                         [64, 4096, 4096]],
                "comprehensive": [[8192, 8192, 8192], [16, 7168, 2048], [4096, 4096, 256]]},
        interpreter_shapes={"core": [[32, 32, 32], [48, 40, 72]], "comprehensive": [[16, 64, 8]]},
        make=lambda shape, dtype, device: CaseInputs(
            (torch.randn((shape[0], shape[2]), dtype=dtype, device=device),
             torch.randn((shape[2], shape[1]), dtype=dtype, device=device))),
        reference=torch.mm, kernel="mm",
        tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},
        bytes_moved=lambda shape, size: (shape[0] * shape[2] + shape[2] * shape[1]
                                         + shape[0] * shape[1]) * size,
        flops=lambda shape: 2.0 * shape[0] * shape[1] * shape[2], rank=3,
    ),
}


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; NaN anywhere gives inf."""
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    if torch.isnan(out64).any():
        return math.inf
    denom = float(torch.linalg.vector_norm(ref64)) or 1.0
    return float(torch.linalg.vector_norm(out64 - ref64)) / denom


def _checker(tolerance: float) -> Callable:
    def check(out, ref):
        if out.shape != ref.shape:
            raise AssertionError(f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
        err = relative_error(out, ref)
        if not err <= tolerance:
            raise AssertionError(f"relative error {err:.3g} > tolerance {tolerance:g}")
    return check


class BuiltinAdapter(Adapter):
    name = "builtin"
    checks_outputs = True

    def __init__(self, **_):
        self._used: dict[str, dict] = {}
        self._dtype_count: dict[str, int] = {}

    def available(self) -> tuple[bool, str]:
        return True, ""

    def ops(self) -> list[str]:
        return sorted(OPS) + list(FAULT_OPS)

    def describe_ops(self, include_hidden: bool = False) -> list[dict]:
        """The kernels; the fault-injection ops only when asked for."""
        return [{"op": op, "fault": op in FAULT_OPS} for op in self.ops()
                if include_hidden or op not in FAULT_OPS]

    def dtypes(self, op: str, backend) -> list[str]:
        if op in FAULT_OPS:
            return ["float32"]
        return list(INTERPRETER_DTYPES if _interpreted() else FLOAT_DTYPES)

    def default_dtypes(self, op: str, backend) -> list[str]:
        if op in FAULT_OPS:
            return ["float32"]
        return ["float32"] if _interpreted() else ["float16", "bfloat16", "float32"]

    def cases(self, op: str, dtypes: Sequence[str], shapes: dict | None, level: str,
              backend, device: str) -> Iterator[Case]:
        from . import kernels  # after backend activation: compiled or interpreted

        if op in FAULT_OPS:
            self._used[op] = {op: {"shapes": [[1024]], "shape_desc": "shape"}}
            yield fault_case(op, backend, device)
            return
        spec = OPS[op]
        shape_list = self._shapes_for(spec, shapes, level)
        self._used[op] = {op: {"shapes": copy.deepcopy(shape_list), "shape_desc": spec.shape_desc}}
        self._dtype_count[op] = len(dtypes)
        slow = slow_switch(os.environ)
        kernel = getattr(kernels, spec.kernel)
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            size = torch.empty((), dtype=dtype).element_size()
            for shape in shape_list:
                shape = [int(s) for s in shape]
                yield Case(
                    op=op, dtype=dtype_name, shape=shape,
                    shape_detail="x".join(str(s) for s in shape),
                    build=lambda shape=shape, dtype=dtype: spec.make(shape, dtype, device),
                    baseline=spec.reference,
                    under_test=lambda *a, **k: kernel(*a, slow=slow, **k),
                    check=_checker(spec.tolerance[dtype_name]),
                    metrics=lambda inputs, torch_ms, gems_ms, shape=shape, size=size:
                        _metrics(spec, shape, size, torch_ms, gems_ms),
                    info={"slow": slow},
                )

    def check_shapes(self, op: str, shapes, level: str) -> None:
        if op in FAULT_OPS:
            return
        spec = OPS[op]
        for shape in self._shapes_for(spec, shapes, level):
            if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                raise MissingShapes(f"shape file: {op} shape {shape!r} is not a list of "
                                    f"non-negative integers")
            if spec.rank is not None and len(shape) != spec.rank:
                raise MissingShapes(f"shape file: {op} shape {shape!r} needs {spec.rank} "
                                    f"sizes ({spec.shape_desc})")

    def check_environment(self, environ) -> None:
        slow_switch(environ)

    def _shapes_for(self, spec: OpSpec, shapes, level: str) -> list:
        if shapes is not None:
            entry = shapes.doc.get(spec.name)
            if entry is None:
                keys = ", ".join(map(str, shapes.doc)) or "none"
                raise MissingShapes(f"shape file has no entry for op {spec.name!r} "
                                    f"(top-level keys: {keys})")
            return [s if isinstance(s, list) else [s] for s in entry["shapes"]]
        table = spec.interpreter_shapes if _interpreted() else spec.shapes
        out = list(table["core"])
        if level == "comprehensive":
            out += table["comprehensive"]
        return out

    def case_count(self, op: str) -> int | None:
        used = self._used.get(op, {}).get(op)
        return None if used is None else len(used["shapes"]) * self._dtype_count.get(op, 1)

    def shapes_used(self, op: str) -> dict:
        return self._used.get(op, {})

    def identity(self, op: str | None = None) -> dict:
        return {"adapter": self.name, "slow_switch": os.environ.get(SLOW_ENV, "0")}


SWITCH_VALUES = {"": False, "0": False, "false": False, "no": False, "off": False,
                 "1": True, "true": True, "yes": True, "on": True}


def slow_switch(environ) -> bool:
    """ZLH_BUILTIN_SLOW read strictly: 0/1, true/false, yes/no, on/off (any case); anything
    else is refused, never read as "on"."""
    value = environ.get(SLOW_ENV, "")
    try:
        return SWITCH_VALUES[value.strip().lower()]
    except KeyError:
        raise UsageError(f"{SLOW_ENV}={value!r} is not a switch value; use 0 or 1 (also "
                         f"true/false, yes/no, on/off)") from None


def _metrics(spec: OpSpec, shape, element_size: int, torch_ms: float | None,
             gems_ms: float) -> dict:
    moved = spec.bytes_moved(shape, element_size)
    out = {"gems_gbps": moved / (gems_ms * 1e-3) / 1e9}
    if torch_ms is not None:                    # None: the baseline was not timed
        out["torch_gbps"] = moved / (torch_ms * 1e-3) / 1e9
    if spec.flops:
        out["tflops"] = spec.flops(shape) / (gems_ms * 1e-3) / 1e12
    return out


def _interpreted() -> bool:
    import triton  # heavy, and absent where nothing compiles: imported only where used
    return bool(triton.knobs.runtime.interpret)
