"""Adapters: where cases come from. `get_adapter(name)`; `default_adapter_name()` picks
FlagGems when a checkout is named or it can be imported here, else the builtin kernels.
`user` holds cases written by the user (`harness.Case`), chosen by `--cases`."""
from __future__ import annotations

import importlib
import importlib.util
import os

from .base import (Adapter, Case, CaseInputs, MissingShapes, TunerCache, TunerSupport, UnknownOp,
                   Unsupported, UnsupportedDtype, suggest)

ADAPTERS = {
    "builtin": "adapters.builtin:BuiltinAdapter",
    "flaggems": "adapters.flaggems:FlagGemsAdapter",
    "user": "adapters.user:UserAdapter",
}


class UnknownAdapter(ValueError):
    pass


def adapter_names() -> list[str]:
    return list(ADAPTERS)


def get_adapter(name: str, **config) -> Adapter:
    if name not in ADAPTERS:
        raise UnknownAdapter(f"unknown adapter {name!r}; known: {', '.join(ADAPTERS)}")
    module_name, _, cls_name = ADAPTERS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UnknownAdapter(f"adapter {name!r} is not part of this installation") from exc
        raise
    return getattr(module, cls_name)(**config)


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


__all__ = ["Adapter", "Case", "CaseInputs", "TunerSupport", "TunerCache", "UnknownOp", "UnsupportedDtype", "MissingShapes", "Unsupported",
           "UnknownAdapter", "adapter_names", "get_adapter", "default_adapter_name", "suggest"]
