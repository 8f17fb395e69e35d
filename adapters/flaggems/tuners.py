"""FlagGems' tuners and tuner cache, as the harness needs to know them.

- `LibTuner` (flag_gems.utils.libentry) subclasses Triton's Autotuner; its cache is a SQL
  table (the "tuner DB") where the first writer wins.
- `LibEntry` sits outside the tuner and, after the first call per argument signature,
  launches its cached kernel without calling the tuner at all. Hooking record/replay
  therefore clears every LibEntry dispatch cache, so the next call goes through the tuner.
- The tuner DB lives in $FLAGGEMS_DB_URL, else $FLAGGEMS_CACHE_DIR/config_cache, else
  ~/.flaggems/config_cache; a warm DB picks configs without measuring. Isolating it points
  FLAGGEMS_CACHE_DIR at a private directory and unsets FLAGGEMS_DB_URL, which would
  otherwise win.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..base import TunerCache, TunerSupport

LIBENTRY_MODULE = "flag_gems.utils.libentry"


def tuner_support(import_module: bool = True, package: str = "flag_gems") -> TunerSupport:
    """LibTuner and a reset of LibEntry caches of `package` (flag_gems, or flaggems_vllm,
    which carries its own copy); Triton's Autotuner alone when it has no libentry module."""
    name = LIBENTRY_MODULE if package == "flag_gems" else f"{package}.utils.libentry"
    module = sys.modules.get(name)
    if module is None and import_module:
        try:
            module = importlib.import_module(name)
        except ImportError:
            module = None
    return libentry_support(module) if module is not None else TunerSupport()


def libentry_support(module) -> TunerSupport:
    tuner_cls = getattr(module, "LibTuner", None)
    return TunerSupport(classes=(tuner_cls,) if tuner_cls is not None else (),
                        reset=lambda: clear_libentry_caches(module))


def clear_libentry_caches(module) -> int:
    """Empty the dispatch cache of every LibEntry of a libentry module; returns how many.

    Uses the module's own `clear_libentry_dispatch_cache` where it has one."""
    entry_cls = getattr(module, "LibEntry", None)
    if entry_cls is None:
        return 0
    clear = getattr(module, "clear_libentry_dispatch_cache", None)
    count = 0
    for obj in gc.get_objects():
        # type(), not isinstance(): the latter reads __class__, which some lazy or
        # deprecated module attributes turn into warnings or errors.
        if not issubclass(type(obj), entry_cls):
            continue
        if clear is not None:
            clear(obj)
        else:
            for cache in getattr(obj, "kernel_cache", ()):
                cache.clear()
            cpu_cache = getattr(obj, "_cpu_cache", None)
            if cpu_cache is not None:
                cpu_cache.clear()
        count += 1
    return count


def follow_environment() -> bool:
    """In a process where FlagGems is already imported (a worker running several ops), point
    its tuner DB and generated-code cache at what the environment now says (an op's private
    cache, or the shared one again): FlagGems reads them once, at import. Returns False when
    this FlagGems lacks the pieces (the caller then cannot promise isolation)."""
    module = sys.modules.get(LIBENTRY_MODULE)
    if module is None:
        return True                       # not imported yet: the environment applies at import
    libcache = getattr(module, "libcache", None)
    code_cache = sys.modules.get("flag_gems.utils.code_cache")
    if libcache is None or not hasattr(libcache, "config_cache_pool"):
        return False
    clear = getattr(getattr(code_cache, "cache_dir_path", None), "cache_clear", None)
    if clear is not None:
        clear()
    type(libcache).__init__(libcache, os.environ.get("FLAGGEMS_DB_URL"))
    tuner_cls = getattr(module, "LibTuner", None)
    for obj in gc.get_objects() if tuner_cls is not None else ():
        if issubclass(type(obj), tuner_cls) and hasattr(obj, "config_table_name"):
            obj.cache = libcache[obj.config_table_name]
    return True


def tuner_cache(root, isolate: bool, environ) -> TunerCache:
    if isolate:
        gems_dir = Path(root).resolve() / ".flaggems_cache"
        return TunerCache({"FLAGGEMS_CACHE_DIR": str(gems_dir), "FLAGGEMS_DB_URL": None},
                          "isolated", (str(gems_dir),))
    url = environ.get("FLAGGEMS_DB_URL")
    if url:
        where = redact_url(url)
    else:
        base = environ.get("FLAGGEMS_CACHE_DIR") or str(Path.home() / ".flaggems")
        where = str(Path(base) / "config_cache")
    return TunerCache({}, f"shared({where})")


def redact_url(url: str) -> str:
    """A DB URL without its password, fit for run.json."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return url
