"""How a benchmark class's own methods treat the shape file, read from their source (AST).

FlagGems' `Benchmark.set_shapes` looks the shape file up (op name, then class names along the
MRO) and `get_input_iter` builds inputs from `self.shapes`. A class ignores the file when it
overrides `set_shapes` without calling `super()` or reading its path argument (it assigns its
own `self.shapes`), overrides `init_user_config` without ever calling `set_shapes`, or has a
`get_input_iter` that never reads `self.shapes` (its shapes are inline). The same analysis
serves the static scan (derive: which shapes does a class hard-code) and the adapter at run
time (may the file's shapes be injected).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

SET_SHAPES, INPUT_ITER, INIT_CONFIG = "set_shapes", "get_input_iter", "init_user_config"


@dataclass(frozen=True)
class MethodView:
    """What one method does with shapes."""
    reads_shapes: bool = False      # refers to self.shapes or defers to super()
    ignores_file: bool = False      # set_shapes / init_user_config that never reach the file
    shapes_expr: ast.expr | None = None   # where its own shapes come from, when visible
    # `for s in <shapes>: yield from self.input_fn(s, dtype, self.device)`
    input_fn_loop: bool = False
    local: dict = field(default_factory=dict)   # literal local assignments (name -> expr)


def _self_attr(node: ast.AST, attr: str | None = None) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self" and (attr is None or node.attr == attr))


def _calls_super(fn: ast.FunctionDef, method: str) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == method and isinstance(node.func.value, ast.Call) \
                and getattr(node.func.value.func, "id", "") == "super":
            return True
    return False


def _calls_self(fn: ast.FunctionDef, method: str) -> bool:
    return any(isinstance(n, ast.Call) and _self_attr(n.func, method) for n in ast.walk(fn))


def _uses_params(fn: ast.FunctionDef) -> bool:
    params = {a.arg for a in fn.args.args[1:] + fn.args.kwonlyargs}
    return any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(fn))


def local_literals(fn: ast.FunctionDef) -> dict:
    out = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            out[stmt.targets[0].id] = stmt.value
    return out


def _input_fn_loop(fn: ast.FunctionDef) -> ast.expr | None:
    """The iterable of `for s in X: yield from self.input_fn(s, <dtype>, self.device)` when
    that loop is the method's last statement and its whole body."""
    if not fn.body or len(fn.args.args) < 2:
        return None
    loop = fn.body[-1]
    if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name) \
            or len(loop.body) != 1 or not isinstance(loop.body[0], ast.Expr):
        return None
    value = loop.body[0].value
    if not isinstance(value, ast.YieldFrom) or not isinstance(value.value, ast.Call):
        return None
    call = value.value
    dtype = fn.args.args[1].arg
    args = call.args
    if _self_attr(call.func, "input_fn") and len(args) == 3 and not call.keywords \
            and isinstance(args[0], ast.Name) and args[0].id == loop.target.id \
            and isinstance(args[1], ast.Name) and args[1].id == dtype \
            and _self_attr(args[2], "device"):
        return loop.iter
    return None


def view_method(fn: ast.FunctionDef) -> MethodView:
    name = fn.name
    if name == INPUT_ITER:
        reads = any(_self_attr(n, "shapes") for n in ast.walk(fn)) or _calls_super(fn, name)
        loop = None if reads else _input_fn_loop(fn)
        return MethodView(reads_shapes=reads, shapes_expr=loop, input_fn_loop=loop is not None,
                          local=local_literals(fn))
    if name == SET_SHAPES:
        ignores = not _calls_super(fn, name) and not _uses_params(fn)
        expr = None
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and any(_self_attr(t, "shapes") for t in node.targets):
                expr = node.value
        return MethodView(ignores_file=ignores, shapes_expr=expr if ignores else None,
                          local=local_literals(fn))
    if name == INIT_CONFIG:
        ignores = not _calls_super(fn, name) and not _calls_self(fn, SET_SHAPES)
        return MethodView(ignores_file=ignores)
    return MethodView()


def methods_of(node: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def attribute_assignments(node: ast.ClassDef) -> dict[str, ast.expr]:
    """Class-level `NAME = ...` and `self.NAME = ...` in any method: where shapes may live."""
    out: dict[str, ast.expr] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value
    for fn in methods_of(node).values():
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Assign):
                for target in sub.targets:
                    if _self_attr(target) and target.attr != "shapes":
                        out.setdefault(target.attr, sub.value)
    return out


class NotLiteral(ValueError):
    pass


def evaluate(expr: ast.expr, names: dict, attrs: dict, depth: int = 0):
    """A literal shape list from `expr`: literals, names (local or module-level, themselves
    literal), `self.X` attributes, `a + b` of lists, `list(...)`/`tuple(...)` of those."""
    if depth > 8:
        raise NotLiteral("too deep")
    if isinstance(expr, ast.Name):
        if expr.id not in names:
            raise NotLiteral(expr.id)
        value = names[expr.id]
        return evaluate(value, names, attrs, depth + 1) if isinstance(value, ast.AST) else value
    if _self_attr(expr):
        if expr.attr not in attrs:
            raise NotLiteral(f"self.{expr.attr}")
        value = attrs[expr.attr]
        return evaluate(value, names, attrs, depth + 1) if isinstance(value, ast.AST) else value
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return list(evaluate(expr.left, names, attrs, depth + 1)) + \
            list(evaluate(expr.right, names, attrs, depth + 1))
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) \
            and expr.func.id in ("list", "tuple") and len(expr.args) == 1:
        return list(evaluate(expr.args[0], names, attrs, depth + 1))
    try:
        return ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise NotLiteral(ast.unparse(expr)[:60]) from None


def module_literals(tree: ast.Module) -> dict[str, ast.expr]:
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value
    return out


def shape_list(value) -> list | None:
    """Literal shapes as a list of shapes, or None when `value` is not one."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    shapes = [list(s) if isinstance(s, tuple) else s for s in value]
    if all(isinstance(s, (list, int)) and not isinstance(s, bool) for s in shapes):
        return [_plain(s) for s in shapes]
    return None


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
