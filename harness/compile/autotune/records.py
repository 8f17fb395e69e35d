"""The autotune record format: files, keys, configs, and loading a record run.

Files, under the run directory:

    autotune/records.json   {"schema_version": 1, "kernels": {kernel: {key: config}}}
    autotune/meta.json      {"schema_version": 1, "mode": "record", "backend": ..., ...}

A key is the tuner's own lookup key as a deterministic string; a config is a Triton
`Config` as JSON (kwargs, warps, stages, ctas, maxnreg, whether it had a pre_hook).
"""
from __future__ import annotations

import inspect
import json
import numbers
from pathlib import Path

from ...common import spelling
from ...common.documents import loads_json
from ...common.errors import UsageError, one_line
from ...common.fields import Fields
from ...common.files import SYMLINK_LOOP, link_loop, read_text, sha256_file
from ...common.schema import check_readable
from ...store.reader import load_info

SCHEMA_VERSION = 1
RECORDS_FILE = Path("autotune") / "records.json"
META_FILE = Path("autotune") / "meta.json"
KEY_MISSING = "key_missing"
COMPILE_FAILED = "compile_failed"
NO_EVICT = "_no_evict"

# Config fields kept in a record besides kwargs, in the order Triton's Config takes them.
_CONFIG_FIELDS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "ir_override")


def key_str(key) -> str:
    """A tuning key as a deterministic JSON-safe string, e.g. "(64, 64, 'torch.float16')".

    Record and replay both derive it from the key the tuner looked up, so they match as long
    as the tuner computes the same key (the same shape, dtypes and key strategy).
    """
    items = key if isinstance(key, tuple) else (key,)
    return repr(tuple(_plain(item) for item in items))


def _plain(value):
    """A key element as a plain Python value whose repr does not vary between runs."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "dtype") and hasattr(value, "shape"):      # a tensor used as a key
        return f"tensor({value.dtype}, {tuple(value.shape)})"
    return str(value)


def _key_token(key) -> str:
    """The key as one marker token: elements joined with '/', e.g. 64/64/torch.float16."""
    items = key if isinstance(key, tuple) else (key,)
    return "/".join(str(_plain(item)) for item in items) or "-"


def kernel_name(tuner) -> str:
    """A stable name for the kernel under a tuner: module and qualified name of the Python
    function at the bottom of the wrapper chain (Autotuner -> Heuristics -> JITFunction ->
    function). Stable across processes, unlike object ids or cache hashes."""
    fn, depth = tuner, 0
    while not inspect.isfunction(fn) and hasattr(fn, "fn") and depth < 16:
        fn, depth = fn.fn, depth + 1
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}.{name}"


def config_to_dict(config) -> dict:
    """A triton.Config as JSON. A pre_hook cannot be stored, only flagged: replay takes it
    back from the kernel's own config with the same parameters."""
    out = {"kwargs": _json_safe(dict(config.kwargs))}
    for name in _CONFIG_FIELDS:
        value = getattr(config, name, None)
        if value is not None or name in ("num_warps", "num_stages", "num_ctas"):
            out[name] = _json_safe(value)
    out["pre_hook"] = getattr(config, "pre_hook", None) is not None
    return out


def _json_safe(value):
    return json.loads(json.dumps(value, default=str))


def _comparable(entry: dict) -> dict:
    """A record without the pre_hook flag and without unset fields, for matching."""
    return {k: v for k, v in entry.items() if k != "pre_hook" and v is not None}


def config_from_dict(entry: dict, candidates=()):
    """Rebuild a recorded config.

    A candidate (the tuner's own configs) with the same parameters is returned itself, so
    its pre_hook comes along, as a library tuner does for configs read from its own cache.
    Raises ValueError when the config cannot be represented here: it had a pre_hook and no
    candidate matches, or it sets a field this Triton's Config does not take.
    """
    import triton  # heavy, and absent where nothing compiles: imported only where used

    want = _comparable(entry)
    for candidate in candidates:
        if _comparable(config_to_dict(candidate)) == want:
            return candidate
    if entry.get("pre_hook"):
        raise ValueError("the recorded config had a pre_hook and none of the kernel's "
                         "configs has the same parameters")
    accepted = inspect.signature(triton.Config.__init__).parameters
    fields = {}
    for name in _CONFIG_FIELDS:
        value = entry.get(name)
        if value is None:
            continue
        if name not in accepted:
            raise ValueError(f"this Triton's Config has no {name} (recorded {name}={value})")
        fields[name] = value
    return triton.Config(dict(entry.get("kwargs", {})), **fields)


def records_digest(record_dir) -> str | None:
    """sha256 of a record run's records file: what "pinned to the same record" compares, so
    a run directory copied to another machine or moved keeps its identity. None when the
    run has no records file."""
    path = Path(record_dir) / RECORDS_FILE
    try:
        return sha256_file(path)
    except OSError:
        return None


def load_record_dir(record_dir, backend: str) -> tuple[dict, dict]:
    """(meta, records) of a record run, or UsageError with a one-line reason."""
    path = Path(record_dir)
    where = spelling.option("replay", str(path))
    if not path.is_dir():
        raise UsageError(f"{where}: {SYMLINK_LOOP}" if link_loop(path) else
                         f"{where}: no such run directory")
    meta = _read_json(path / META_FILE, where)
    if meta is None:
        if _run_json_mode(path) == "replay":
            raise UsageError(f"{where}: that run replayed configs itself; "
                             "replay from the record run it replayed")
        raise UsageError(f"{where}: not a record run (no {META_FILE.as_posix()})")
    mode = meta.get("mode")
    if mode == "replay":
        raise UsageError(f"{where}: that run replayed configs from {meta.get('replay_from')}; "
                         "replay from that record run instead")
    if mode != "record":
        raise UsageError(f"{where}: not a record run (autotune mode {mode!r})")
    recorded = meta.get("backend")
    if recorded != backend:
        raise UsageError(f"{where}: recorded on backend {recorded}, this run is on backend "
                         f"{backend}; replay across backends is refused")
    records = _read_json(path / RECORDS_FILE, where)
    if records is None:
        raise UsageError(f"{where}: record run has no {RECORDS_FILE.as_posix()}")
    if not isinstance(records.get("kernels"), dict):
        raise UsageError(f"{where}: {RECORDS_FILE.as_posix()} has no 'kernels' table")
    _check_configs(records["kernels"], f"{where}: {RECORDS_FILE.as_posix()}")
    return meta, records


def _check_configs(kernels: dict, where: str) -> None:
    """Every recorded config is of the form `config_to_dict` writes: a record edited or
    damaged on disk is refused before anything runs, not met as a failed case."""
    for kernel, table in kernels.items():
        if not isinstance(table, dict):
            raise UsageError(f"{where}: kernel {kernel}: expected an object of key -> config, "
                             f"got {_short(table)}")
        for key, entry in table.items():
            f = Fields(entry if isinstance(entry, dict) else {}, f"{where}: {kernel} {key}")
            if not isinstance(entry, dict):
                raise f.error("config", "an object", entry)
            f.object("kwargs")
            for name in _CONFIG_FIELDS[:4]:
                if entry.get(name) is not None:
                    f.int(name, low=0)
            f.bool("pre_hook", False)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _read_json(path: Path, where: str):
    if not path.exists():
        return None
    try:
        data = loads_json(read_text(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{where}: cannot read {path.name}: {one_line(exc)}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: {path.name} is not a JSON object")
    return check_readable(data, f"{where}: {path.name}", SCHEMA_VERSION)


def _run_json_mode(path: Path):
    try:
        return load_info(path).autotune_mode
    except UsageError:
        return None
