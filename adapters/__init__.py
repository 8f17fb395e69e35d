"""Adapters: where cases come from. `get_adapter(name)`; `default_adapter_name()` picks
FlagGems when a checkout is named or it can be imported here, else the builtin kernels.
`user` holds cases written by the user (`harness.Case`), chosen by `--cases`. Other packages
add adapters through the entry point group `zlh.adapters` (harness/common/plugins.py)."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os

from harness.common.errors import Terminated, one_line
from harness.common.plugins import ADAPTERS as GROUP, describe, entry_points

from .base import (Adapter, Case, CaseInputs, MissingShapes, TunerCache, TunerSupport, UnknownOp,
                   Unsupported, UnsupportedDtype, suggest)

ADAPTERS = {
    "builtin": "adapters.builtin:BuiltinAdapter",
    "flaggems": "adapters.flaggems:FlagGemsAdapter",
    "user": "adapters.user:UserAdapter",
}


class UnknownAdapter(ValueError):
    pass


def registry() -> dict:
    """Name -> "module:Class" for the built-ins, then the entry points of other packages
    (group `zlh.adapters`); a plugin cannot take a built-in's name."""
    found: dict = dict(ADAPTERS)
    for point in entry_points(GROUP):
        found.setdefault(point.name, point)
    return found


def adapter_names() -> list[str]:
    return list(registry())


def get_adapter(name: str, **config) -> Adapter:
    known = registry()
    if name not in known:
        raise UnknownAdapter(f"unknown adapter {name!r}{suggest(name, list(known))} (known: "
                             f"{', '.join(known)}; a package adds one through the entry point "
                             f"group zlh.adapters)")
    target = known[name]
    if not isinstance(target, str):
        return _plugin(name, target, config)
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UnknownAdapter(f"adapter {name!r} is not part of this installation") from exc
        raise
    return getattr(module, cls_name)(**config)


def _plugin(name: str, point, config: dict) -> Adapter:
    """An adapter from an entry point: the class (or factory) is called with the keywords of
    `config` it accepts (flaggems_dir, vllm_dir, cases); it must give an `Adapter`."""
    try:
        factory = point.load()
        accepted = inspect.signature(factory).parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted):
            names = {p.name for p in accepted}
            config = {k: v for k, v in config.items() if k in names}
        adapter = factory(**config)
    except Terminated:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - named, not a traceback or an exit
        raise UnknownAdapter(f"adapter {name!r} ({describe(point)}) cannot be loaded: "
                             f"{type(exc).__name__}: {one_line(exc)}") from None
    if not isinstance(adapter, Adapter):
        raise UnknownAdapter(f"adapter {name!r} ({describe(point)}) is not a zlh Adapter "
                             f"(adapters.base.Adapter), got {type(adapter).__name__}")
    if not adapter.name:
        adapter.name = name
    return adapter


def default_adapter_name(flaggems_dir: str | None = None) -> str:
    """flaggems when a FlagGems checkout is named (`flaggems_dir` or $FLAGGEMS_DIR) or
    `flag_gems` is importable, else builtin. Naming a checkout on a machine that cannot
    import flag_gems then ends in the adapter's preflight, which says why."""
    if flaggems_dir or os.environ.get("FLAGGEMS_DIR"):
        return "flaggems"
    try:
        found = importlib.util.find_spec("flag_gems") is not None
    except (ImportError, ValueError):
        found = False
    return "flaggems" if found else "builtin"


__all__ = ["Adapter", "Case", "CaseInputs", "TunerSupport", "TunerCache", "UnknownOp",
           "UnsupportedDtype", "MissingShapes", "Unsupported", "UnknownAdapter",
           "adapter_names", "registry", "get_adapter", "default_adapter_name", "suggest"]
