"""Input builders for benchmark classes whose inputs cannot be built from a shape tuple by the
class itself: their `get_input_iter` walks a private list (`self._cfgs`, a module constant)
instead of `self.shapes`, and does more than hand each entry to an `input_fn`.

A builder names where the class keeps its own shapes (so a shape file's entries can be checked
against their arity and the derive step can read them) and builds the same inputs the class
would, from one shape of the file. Keyed by class name; subclasses use their base's builder.
Classes whose `get_input_iter` is `for s in LIST: yield from self.input_fn(s, dtype,
self.device)` need no entry: the adapter loops the file's shapes through their `input_fn`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Iterator

from . import hardcoded as hc


@dataclass(frozen=True)
class InputBuilder:
    build: Callable[..., Iterator[tuple]]   # (bench, shape, dtype) -> input tuples
    attr: str | None = None         # shapes live in self.<attr> ...
    module_name: str | None = None  # ... or in a module-level constant
    width: int | None = None        # each entry's first `width` fields are the shape

    def _cut(self, value) -> list | None:
        if not isinstance(value, (list, tuple)):
            return None
        items = [list(v)[:self.width] if self.width else v for v in value]
        return hc.shape_list(items)

    def static_shapes(self, module_names: dict, attrs: dict) -> list | None:
        expr = attrs.get(self.attr) if self.attr else module_names.get(self.module_name)
        if expr is None:
            return None
        try:
            return self._cut(hc.evaluate(expr, module_names, attrs))
        except hc.NotLiteral:
            return None

    def runtime_shapes(self, bench) -> list | None:
        if self.attr:
            return self._cut(getattr(bench, self.attr, None))
        module = sys.modules.get(type(bench).__module__)
        return self._cut(getattr(module, self.module_name, None))

    def inputs(self, bench, shapes, dtype) -> Iterator[tuple]:
        for shape in shapes:
            yield from self.build(bench, shape, dtype)


def _upsample_aa_backward(bench, shape, dtype):
    """(N, C, H_in, W_in, H_out, W_out, align_corners) -> the aa-upsample backward's args."""
    import torch  # heavy: imported only where used
    n, c, h_in, w_in, h_out, w_out, align = shape
    grad = torch.randn([n, c, h_out, w_out], device=bench.device, dtype=dtype)
    yield grad, [h_out, w_out], [n, c, h_in, w_in], bool(align), None, None


def _lu_factor(bench, shape, dtype):
    """An input shape -> one input per pivot setting the module benchmarks."""
    import torch  # heavy: imported only where used
    module = sys.modules.get(type(bench).__module__)
    for pivot in getattr(module, "_PIVOT_VALUES", [True]):
        yield torch.randn(tuple(shape), dtype=dtype, device=bench.device), {"pivot": pivot}


_UPSAMPLE_AA = InputBuilder(_upsample_aa_backward, attr="_cfgs", width=7)   # N, C, H_in, W_in,
# H_out, W_out, align_corners

BUILDERS: dict[str, InputBuilder] = {
    "UpsampleBicubic2dAaBackwardBenchmark": _UPSAMPLE_AA,
    "UpsampleBilinear2dAaBackwardBenchmark": _UPSAMPLE_AA,
    "LinalgLuFactorBenchmark": InputBuilder(_lu_factor, module_name="LINALG_LU_FACTOR_SHAPE"),
}
