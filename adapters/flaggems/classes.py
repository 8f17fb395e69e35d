"""Benchmark classes and the op names their constructors are given, read statically (no import).

`ClassIndex.scan(root)` parses every module under `benchmark/` and keeps each class whose bases
lead to `Benchmark`: its bases, what its methods do with shapes (`hardcoded.view_method`) and
where its own shapes live. `op_names(...)` reads the `op_name=` of the Benchmark constructors a
test function calls — directly, through a module-level helper, or through its parametrize
values — which is the first key FlagGems' shape lookup tries.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from . import hardcoded as hc
from .builders import BUILDERS

ROOT_CLASS = "Benchmark"


@dataclass
class BenchClass:
    name: str
    file: str                                  # relative to the repository root
    bases: tuple[str, ...]
    views: dict = field(default_factory=dict)  # method name -> hc.MethodView
    attrs: dict = field(default_factory=dict)  # attribute name -> expr (class or self.X)
    module_names: dict = field(default_factory=dict)   # the module's top-level literals


@dataclass(frozen=True)
class Hardcoded:
    """A class that ignores the shape file: which class does it (`owner`), in which method,
    how the file's shapes could still reach it (`how`: `shapes` = set `self.shapes`,
    `input_fn` = loop the shapes through its own `input_fn`, `builder` = a registered input
    builder, `none`), and the shapes it uses instead when they are literal."""
    cls: str
    owner: str
    method: str
    how: str
    shapes: list | None


def _base_name(expr: ast.expr) -> str:
    return expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")


class ClassIndex:
    def __init__(self, classes: dict[str, list[BenchClass]]):
        self.classes = classes
        self._bench: dict[str, bool] = {}

    @classmethod
    def scan(cls, root: str | Path) -> "ClassIndex":
        root = Path(root)
        found: dict[str, list[BenchClass]] = {}
        for path in sorted((root / "benchmark").rglob("*.py")):
            if "models_benchmark" in path.parts:
                continue
            tree = _parse(path)
            if tree is None:
                continue
            names = hc.module_literals(tree)
            rel = str(path.relative_to(root))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    views = {m: hc.view_method(fn) for m, fn in hc.methods_of(node).items()}
                    found.setdefault(node.name, []).append(BenchClass(
                        node.name, rel, tuple(_base_name(b) for b in node.bases), views,
                        hc.attribute_assignments(node), names))
        return cls(found)

    def get(self, name: str) -> BenchClass | None:
        defs = self.classes.get(name)
        return defs[0] if defs else None

    def is_benchmark(self, name: str, seen: tuple = ()) -> bool:
        if name not in self._bench:
            found = name == ROOT_CLASS and name in self.classes
            for item in self.classes.get(name, []):
                found = found or any(b == ROOT_CLASS or (b not in seen and b != name and
                                                         self.is_benchmark(b, seen + (name,)))
                                     for b in item.bases)
            self._bench[name] = found
        return self._bench[name]

    def benchmark_names(self) -> set[str]:
        return {n for n in self.classes if self.is_benchmark(n)}

    def mro(self, name: str) -> list[BenchClass]:
        """Left-first depth-first walk of the bases (what single inheritance makes of C3)."""
        out, stack, seen = [], [name], set()
        while stack:
            current = stack.pop(0)
            item = self.get(current)
            if item is None or current in seen:
                continue
            seen.add(current)
            out.append(item)
            stack[:0] = list(item.bases)
        return out

    def hardcoded(self, name: str) -> Hardcoded | None:
        chain = self.mro(name)
        found = classify([(c.name, c.views) for c in chain], ROOT_CLASS)
        if found is None:
            return None
        owner, method, how = found
        return Hardcoded(name, owner, method, how, self._own_shapes(chain, owner, method, how))

    def _own_shapes(self, chain, owner, method, how) -> list | None:
        item = next(c for c in chain if c.name == owner)
        attrs = {}
        for c in reversed(chain):
            attrs.update(c.attrs)
        if how == "builder":
            builder = builder_for([c.name for c in chain])
            return builder.static_shapes(item.module_names, attrs) if builder else None
        view = item.views.get(method)
        if view is None or view.shapes_expr is None:
            return None
        try:
            value = hc.evaluate(view.shapes_expr, {**item.module_names, **view.local}, attrs)
        except hc.NotLiteral:
            return None
        return hc.shape_list(value)


def builder_for(names):
    return next((BUILDERS[n] for n in names if n in BUILDERS), None)


def classify(chain, root: str):
    """(owner, method, how) for a class that ignores the shape file, else None.

    `chain` is the MRO as (class name, {method: MethodView}). The effective method is the
    first class in the chain defining it; the root class's own methods honour the file."""
    def effective(method):
        for name, views in chain:
            if method in views:
                return (name, views[method]) if name != root else None
        return None

    iter_def = effective(hc.INPUT_ITER)
    if iter_def is not None and not iter_def[1].reads_shapes:
        names = [n for n, _ in chain]
        below = names[:names.index(iter_def[0]) + 1]
        how = ("builder" if builder_for(below) else
               "input_fn" if iter_def[1].input_fn_loop else "none")
        return iter_def[0], hc.INPUT_ITER, how
    for method in (hc.SET_SHAPES, hc.INIT_CONFIG):
        found = effective(method)
        if found is not None and found[1].ignores_file:
            return found[0], method, "shapes"
    return None


# ---- op names in test functions -------------------------------------------------------------
def op_names(fn: ast.FunctionDef, tree: ast.Module, bench_classes: set[str]) -> list[str]:
    """The `op_name` values of the Benchmarks `fn` builds (f-strings as `*` patterns), with
    `_backward` appended where `is_backward=True`, as FlagGems' constructor does."""
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    literals = hc.module_literals(tree)
    params = _parametrized(fn, literals)
    out: list[str] = []
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        callee = _base_name(call.func)
        if callee in bench_classes or callee.endswith("Benchmark") or \
                (isinstance(call.func, ast.Name) and callee in params):   # bench_cls(...)
            out += _constructor_names(call, params, hc.local_literals(fn))
        elif callee in helpers and callee != fn.name:
            out += _helper_names(helpers[callee], call, params, bench_classes)
    return list(dict.fromkeys(out))


def _constructor_names(call: ast.Call, params: dict, local: dict) -> list[str]:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    expr = keywords.get("op_name", call.args[0] if call.args else None)
    names = _strings(expr, params, local)
    backward = keywords.get("is_backward")
    if isinstance(backward, ast.Constant):
        suffixes = ["_backward"] if backward.value else [""]
    else:
        suffixes = [""] if backward is None else ["", "_backward"]
    return [n + s if s and "_backward" not in n else n for n in names for s in suffixes]


def _helper_names(helper: ast.FunctionDef, call: ast.Call, params: dict, classes) -> list[str]:
    """A module-level helper building the Benchmark from its own parameters: bind the
    call's literal arguments to those parameters."""
    names = [a.arg for a in helper.args.args]
    bound = {}
    for i, arg in enumerate(call.args[:len(names)]):
        bound[names[i]] = _strings(arg, params, {})
    for kw in call.keywords:
        if kw.arg:
            bound[kw.arg] = _strings(kw.value, params, {})
    out = []
    for inner in (n for n in ast.walk(helper) if isinstance(n, ast.Call)):
        callee = _base_name(inner.func)
        if callee in classes or callee.endswith("Benchmark"):
            out += _constructor_names(inner, bound, {})
    return out


def _strings(expr, params: dict, local: dict) -> list[str]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "*" for v in expr.values)]
    if isinstance(expr, ast.Name):
        if expr.id in params:
            return [v for v in params[expr.id] if isinstance(v, str)]
        if expr.id in local:
            return _strings(local[expr.id], params, {})
    return []


def _parametrized(fn: ast.FunctionDef, literals: dict) -> dict[str, list]:
    """parametrize argument name -> the literal values it takes (strings matter here)."""
    out: dict[str, list] = {}
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and _base_name(dec.func) == "parametrize"
                and len(dec.args) >= 2):
            continue
        try:
            names = ast.literal_eval(dec.args[0])
        except ValueError:
            continue
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        values = dec.args[1]
        if isinstance(values, ast.Name):
            values = literals.get(values.id, values)
        for row in getattr(values, "elts", []):
            if isinstance(row, ast.Call) and _base_name(row.func) == "param":
                items = row.args
            elif len(names) > 1 and isinstance(row, (ast.Tuple, ast.List)):
                items = row.elts
            else:
                items = [row]
            for name, item in zip(names, items):
                if isinstance(item, ast.Constant):
                    out.setdefault(name, []).append(item.value)
    return out


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return None
