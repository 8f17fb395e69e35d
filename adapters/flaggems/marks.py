"""pytest marks on a FlagGems benchmark function, evaluated without pytest running.

`parametrize` expands into calls (including `pytest.param(..., marks=...)`), `skip`,
`skipif` and `xfail` are evaluated (boolean or string conditions, the latter in the module's
globals). An `xfail` that applies (no condition, or a true one) is a skip: upstream declares
the case expected to fail, so its timing would carry no signal.
"""
from __future__ import annotations

import ast
import itertools
import os
import platform
import sys
from dataclasses import dataclass, field


@dataclass
class Call:
    """One call of a test function: its arguments, an id, and a skip reason if any."""

    kwargs: dict = field(default_factory=dict)
    id: str = ""
    skip: str | None = None


def _marks(obj) -> list:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, (list, tuple)) else [marks]


def skip_reason(marks, module_globals: dict, stale=None, ignored: list | None = None) -> str | None:
    """The first skip that applies. `stale(reason)` true: a `skipif` known to be wrong on
    this device; it is passed over and its reason appended to `ignored`."""
    for mark in marks:
        if mark.name == "skip":
            return mark.kwargs.get("reason") or (mark.args[0] if mark.args else "skip mark")
        if mark.name == "xfail":
            conditions = mark.args or ((mark.kwargs["condition"],)
                                       if "condition" in mark.kwargs else ())
            if not conditions or any(_true(c, module_globals) for c in conditions):
                return f"xfail: {mark.kwargs.get('reason') or 'expected to fail upstream'}"
            continue
        if mark.name == "skipif":
            conditions = mark.args or (mark.kwargs.get("condition"),)
            for condition in conditions:
                if _true(condition, module_globals):
                    reason = mark.kwargs.get("reason") or f"skipif {condition!r}"
                    if stale is not None and stale(reason):
                        if ignored is not None and reason not in ignored:
                            ignored.append(reason)
                        break
                    return reason
    return None


def always_skipped(text: str) -> str:
    """The reason of a skip mark's source text (`@pytest.mark.skip(reason=…)`) that applies
    on every machine — `skip`, `skipif(True)`, an `xfail` without condition (or with a true
    constant) — else ''."""
    try:
        tree = ast.parse(text.lstrip("@"), mode="eval")
    except SyntaxError:
        return ""
    bare = isinstance(tree.body, ast.Attribute)        # `@pytest.mark.xfail`, no call
    for node in [tree.body] if bare else [n for n in ast.walk(tree) if isinstance(n, ast.Call)]:
        call = None if bare else node
        name = getattr(call.func if call else node, "attr", "")
        if name not in ("skip", "skipif", "xfail") or (call is None and name == "skipif"):
            continue
        args = call.args if call else []
        condition = args[0] if args else next(
            (k.value for k in (call.keywords if call else []) if k.arg == "condition"), None)
        if name == "skip" or (condition is None and name == "xfail") or (
                isinstance(condition, ast.Constant) and bool(condition.value)):
            reason = next((k.value for k in (call.keywords if call else [])
                           if k.arg == "reason"), None)
            if reason is None and name == "skip" and args:
                reason = args[0]
            return reason.value if isinstance(reason, ast.Constant) else name
    return ""


def _true(condition, module_globals: dict) -> bool:
    if isinstance(condition, str):
        scope = {"os": os, "sys": sys, "platform": platform, **module_globals}
        return bool(eval(condition, scope))  # noqa: S307 - pytest evaluates these strings too
    return bool(condition)


def expand_calls(fn, module, stale=None, ignored: list | None = None) -> list[Call]:
    """All calls pytest would make of `fn`: module and function skips, parametrize product.
    `stale` and `ignored`: see `skip_reason`."""
    module_globals = vars(module)
    base = skip_reason(_marks(module) + _marks(fn), module_globals, stale, ignored)
    axes = []
    for mark in _marks(fn):   # bottom decorator first, as in pytest's ids
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        ids = mark.kwargs.get("ids")
        axis = []
        for i, value in enumerate(values):
            param_marks, param_id = [], None
            if type(value).__name__ == "ParameterSet":
                param_marks, param_id, value = list(value.marks), value.id, value.values
            elif len(names) == 1:
                value = (value,)
            if len(names) == 1 and not isinstance(value, tuple):
                value = (value,)
            label = param_id or (ids[i] if isinstance(ids, (list, tuple)) and i < len(ids)
                                 else "-".join(_label(v) for v in value))
            axis.append((dict(zip(names, value)), label,
                         skip_reason(param_marks, module_globals, stale, ignored)))
        axes.append(axis)
    if not axes:
        return [Call({}, "", base)]
    calls = []
    for combo in itertools.product(*axes):
        kwargs, labels, skip = {}, [], base
        for values, label, param_skip in combo:
            kwargs.update(values)
            labels.append(label)
            skip = skip or param_skip
        calls.append(Call(kwargs, "-".join(labels), skip))
    return calls


def select_call(calls: list[Call], wanted: str | None, node_id: str) -> tuple[list[Call], str]:
    """(the calls to run, why none can): all of them, or the one whose id is `wanted` (the
    `op[CALL]` form); a `wanted` id the function lacks is the reason, listing its calls."""
    if wanted is None:
        return calls, ""
    chosen = [c for c in calls if c.id == wanted]
    if chosen:
        return chosen, ""
    ids = ", ".join(c.id for c in calls if c.id) or "none: not parametrized"
    return [], f"no parametrized call {wanted!r} in {node_id} (its calls: {ids})"


def _label(value) -> str:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return str(value)
    name = getattr(value, "__name__", None)
    return name or str(value).replace("torch.", "").replace(" ", "")
