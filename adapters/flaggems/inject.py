"""Giving a zlh shape file's shapes to benchmark classes that ignore the file.

FlagGems' lookup (op name, then class names along the MRO) only reaches classes whose
`set_shapes` is the library's and whose `get_input_iter` reads `self.shapes`. For the others
(`hardcoded.py` says which and how) the adapter decides per Benchmark, after upstream's
`init_user_config`:

* the file speaks for the class only through its op name or the name of a class at or below
  the one that hard-codes (an entry for a generic base such as `Benchmark` is exactly what
  the class chose to replace);
* the file's shapes are used only when every one of them has the form (nesting, numbers,
  strings, booleans) of one of the class's own shapes — else the class keeps all of its own;
* how they reach the inputs: set `self.shapes`, loop them through the class's own
  `input_fn`, or a registered input builder (`builders.py`).

Either way the decision is a marker (`SHAPES_INJECTED` / `SHAPES_NOT_INJECTED reason=...`)
and an annotation on every case: never a silent mix of file and class shapes.
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from dataclasses import dataclass
from typing import Callable, Iterator

from harness.common.markers import marker

from . import hardcoded as hc
from .classes import builder_for, classify

INJECTED, NOT_INJECTED = "SHAPES_INJECTED", "SHAPES_NOT_INJECTED"
_METHODS = (hc.SET_SHAPES, hc.INPUT_ITER, hc.INIT_CONFIG)
_VIEWS: dict = {}


@dataclass
class Injection:
    cls: str
    where: str                   # Owner.method that hard-codes
    key: str | None = None       # the file's key that speaks for this class
    injected: bool = False
    reason: str = ""             # no_entry | arity | unknown_shapes | no_builder
    detail: str = ""
    count: int = 0               # shapes injected
    own: list | None = None      # the class's own shapes, when readable
    inputs: Callable[[object], Iterator] | None = None   # dtype -> inputs, replacing the class's

    @property
    def note(self) -> str:
        """Per-case annotation: where this case's shapes came from."""
        return f"file:{self.key}" if self.injected else f"class:{self.where} ({self.reason})"

    def marker(self, op: str, benchmark: str) -> str:
        if self.injected:
            return marker(INJECTED, op=op, benchmark=benchmark, cls=self.cls, key=self.key,
                          hardcoded=self.where, shapes=self.count)
        return marker(NOT_INJECTED, op=op, benchmark=benchmark, cls=self.cls,
                      key=self.key or "-", hardcoded=self.where, reason=self.reason,
                      detail=self.detail or None)


def plan(bench, doc: dict, root_cls) -> Injection | None:
    """None when upstream's own lookup serves the file; else what to do with this bench.
    Sets `bench.shapes` when the shapes are injected."""
    mro = [c for c in type(bench).__mro__ if isinstance(c, type) and issubclass(c, root_cls)]
    chain = [(c.__name__, _views(c)) for c in mro]
    found = classify(chain, root_cls.__name__)
    if found is None:
        return None
    owner, method, how = found
    owner_cls = next(c for c in mro if c.__name__ == owner)
    below = [c for c in mro if issubclass(c, owner_cls)]
    out = Injection(type(bench).__name__, f"{owner}.{method}")
    own = out.own = _own_shapes(bench, owner_cls, method, how, [c.__name__ for c in below])
    out.key = next((k for k in [bench.op_name] + [c.__name__ for c in below] if k in doc), None)
    if out.key is None:
        out.reason = "no_entry"
        return out
    wanted = doc[out.key]["shapes"]
    if how == "none":
        out.reason, out.detail = "no_builder", f"{owner}.get_input_iter builds inputs inline"
        return out
    if not own:
        out.reason, out.detail = "unknown_shapes", "the class's own shapes are not readable"
        return out
    forms = {form(s) for s in own}
    misfit = next((s for s in wanted if form(s) not in forms), None)
    if misfit is not None:
        out.reason = "arity"
        out.detail = f"file shape {misfit} does not fit the class's shapes like {own[0]}"
        return out
    out.injected, out.count = True, len(wanted)
    bench.shapes = [tuple(s) if isinstance(s, list) else s for s in wanted]
    if how == "input_fn":
        out.inputs = lambda dtype: _input_fn_loop(bench, dtype)
    elif how == "builder":
        builder = builder_for([c.__name__ for c in below])
        out.inputs = lambda dtype: builder.inputs(bench, wanted, dtype)
    return out


def form(shape):
    """The structure a shape must share with the class's own: nesting and value kinds."""
    if isinstance(shape, bool):
        return "bool"
    if isinstance(shape, (int, float)):
        return "num"
    if isinstance(shape, (list, tuple)):
        return tuple(form(s) for s in shape)
    return type(shape).__name__


def _input_fn_loop(bench, dtype):
    for shape in bench.shapes:
        yield from bench.input_fn(shape, dtype, bench.device)


def _own_shapes(bench, owner_cls, method, how, below) -> list | None:
    if how == "none":
        return None
    if how == "shapes":
        return hc.shape_list(list(bench.shapes or []))
    if how == "builder":
        builder = builder_for(below)
        return builder.runtime_shapes(bench) if builder else None
    view = _views(owner_cls).get(method)
    if view is None or view.shapes_expr is None:
        return None
    module = sys.modules.get(owner_cls.__module__)
    names = {**vars(module), **view.local} if module else dict(view.local)
    try:
        return hc.shape_list(hc.evaluate(view.shapes_expr, names, _Attributes(bench)))
    except hc.NotLiteral:
        return None


class _Attributes:
    """`self.X` of a live Benchmark, for `hardcoded.evaluate`."""

    def __init__(self, bench):
        self.bench = bench

    def __contains__(self, name) -> bool:
        return hasattr(self.bench, name)

    def __getitem__(self, name):
        return getattr(self.bench, name)


def _views(cls) -> dict:
    """MethodViews of the shape-related methods a class defines itself (source via inspect;
    a method whose source cannot be read is taken to honour the file)."""
    out = {}
    for name in _METHODS:
        fn = cls.__dict__.get(name)
        if fn is None:
            continue
        if fn not in _VIEWS:
            _VIEWS[fn] = _view(fn)
        out[name] = _VIEWS[fn]
    return out


def _view(fn) -> hc.MethodView:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return hc.MethodView(reads_shapes=True)
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    return hc.view_method(node) if node is not None else hc.MethodView(reads_shapes=True)
