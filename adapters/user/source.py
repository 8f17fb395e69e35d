"""Where user cases come from: a Python object, or `module:attr` named on the command line.

The object may be a `Case`, a list of them, a function returning either (called once the
backend is active, so kernels it defines are compiled or interpreted as the backend needs),
or a dict `{op: any of those}` for several ops. Every problem is one line: a malformed spec
or a missing name is a UsageError, a module that fails to import or a case function that
raises (or calls sys.exit) is a PreflightError naming the error and where it was raised.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import sys
import types
from typing import Any

from harness.common import spelling
from harness.common import log
from harness.common.errors import (PreflightError, Terminated, UsageError, ZlhError,
                                   failure_detail)

from ..base import suggest
from .case import Case

MANY_CASES = 2000      # more cases than this for one op: say that the run will be long
_SPEC = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


def parse_spec(spec: str) -> tuple[str, str]:
    """`pkg.mod:attr` -> ("pkg.mod", "attr")."""
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec.strip()):
        raise UsageError(f"--cases expects MODULE:ATTR (e.g. mypkg.bench:cases), got {spec!r}")
    module, _, attr = spec.strip().partition(":")
    return module, attr


def default_op(spec: str) -> str:
    """The op name of `module:attr` when none is given: the attribute's name."""
    return parse_spec(spec)[1].rsplit(".", 1)[-1]


def import_spec(spec: str) -> Any:
    """The object `module:attr` names. The current directory is importable, as with
    `python -m`."""
    module_name, attr = parse_spec(spec)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    where = f"{spelling.option('cases')} {spec}"      # --cases / cases, as the caller spells it
    try:
        module = importlib.import_module(module_name)
    except UsageError as exc:           # a bad Case built at import
        raise UsageError(f"{where}: {exc.message}") from None
    except ZlhError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise UsageError(f"{where}: no module named {exc.name!r} (python: "
                             f"{sys.executable}; run from the directory that holds it or add "
                             f"it to PYTHONPATH)") from None
        raise PreflightError("import_cases", f"{where}: importing {module_name} "
                                             f"failed: {failure_detail(exc)}") from None
    except Terminated:
        raise
    except SystemExit as exc:           # not the status of this process
        raise PreflightError("import_cases", f"{where}: importing {module_name} failed: "
                                             f"the module called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - the user's module: one line, not a traceback
        raise PreflightError("import_cases", f"{where}: importing {module_name} "
                                             f"failed: {failure_detail(exc)}") from None
    try:
        return functools.reduce(getattr, attr.split("."), module)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_")]
        raise UsageError(f"{where}: module {module_name} has no attribute "
                         f"{attr!r}{suggest(attr, names)}") from None


def check_provider(obj: Any, where: str) -> None:
    """What `--cases` names, checked before any op runs and without calling it: a
    PreflightError (check=cases) when it cannot give cases at all (a module, a number, a
    class), the UsageError loading would give for a function that needs arguments."""
    if isinstance(obj, (Case, list, tuple, dict)):
        return
    if callable(obj) and not isinstance(obj, type):
        _check_no_arguments(obj, where)
        return
    raise PreflightError("cases", f"{where} names a {type(obj).__name__}{_name_of(obj)}, not "
                                  f"a case provider; expected a harness.Case, a list of them, "
                                  f"a function returning them or a dict op -> cases")


def _name_of(obj: Any) -> str:
    name = getattr(obj, "__name__", None)
    return f" ({name})" if isinstance(name, str) and len(name) <= 80 else ""


def cases_by_op(obj: Any, where: str) -> dict[str | None, list[Case]]:
    """{op: cases}; the key is None when the object holds one op's cases."""
    obj = _called(obj, where)
    if isinstance(obj, dict):
        if not obj:
            raise UsageError(f"{where} is an empty dict; map op names to cases")
        bad = [k for k in obj if not isinstance(k, str) or not k]
        if bad:
            raise UsageError(f"{where}: dict keys must be op names (strings), got {bad[0]!r}")
        return {op: cases_of(value, f"{where}[{op!r}]") for op, value in obj.items()}
    return {None: cases_of(obj, where)}


def cases_of(value: Any, where: str) -> list[Case]:
    value = _called(value, where)
    if isinstance(value, Case):
        return [value]
    if isinstance(value, (types.GeneratorType, map, filter)):
        value = _drained(value, where)
    if isinstance(value, (list, tuple)):
        if len(value) > MANY_CASES:
            log.warning(f"WARNING {where} gives {len(value)} cases; each is warmed up and "
                        f"timed on its own, so this run will be long (Ctrl-C keeps those "
                        f"measured)")
        if not value:
            raise UsageError(f"{where} holds no cases")
        for i, item in enumerate(value):
            if not isinstance(item, Case):
                raise UsageError(f"{where}: item {i} ({type(item).__name__}) is not a "
                                 f"harness.Case")
        return list(value)
    raise UsageError(f"{where}: expected a harness.Case, a list (or generator) of them, a "
                     f"function returning them or a dict op -> cases; got "
                     f"{type(value).__name__}")


def _drained(items: Any, where: str) -> list:
    """The cases a generator yields, all read before any is timed: one that raises midway
    is a PreflightError naming how far it got, never a half-loaded op."""
    out = []
    try:
        for item in items:
            out.append(item)
    except (ZlhError, Terminated):
        raise
    except SystemExit as exc:
        raise PreflightError("cases", f"{where} called sys.exit({exc.code!r}) after "
                                      f"{len(out)} case(s)") from None
    except Exception as exc:  # noqa: BLE001 - the user's generator: one line
        raise PreflightError("cases", f"{where} raised after {len(out)} case(s): "
                                      f"{failure_detail(exc)}") from None
    return out


def _called(value: Any, where: str) -> Any:
    if not callable(value) or isinstance(value, (Case, type)):
        return value
    _check_no_arguments(value, where)
    try:
        return value()
    except (ZlhError, Terminated):
        raise
    except SystemExit as exc:           # not the status of this process
        raise PreflightError("cases", f"{where}() called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - the user's function: one line
        raise PreflightError("cases", f"{where}(): {failure_detail(exc)}") from None


def _check_no_arguments(value: Any, where: str) -> None:
    try:
        inspect.signature(value).bind()
    except TypeError:
        raise UsageError(f"{where}: a function giving cases must take no arguments; "
                         f"{getattr(value, '__name__', 'it')} takes "
                         f"{inspect.signature(value)}") from None
    except ValueError:
        pass                                 # no signature to read (a builtin): just call it
