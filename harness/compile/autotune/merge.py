"""Merging the records of several record runs (the shards of a parallel sweep) into one.

Keys recorded by one shard only are taken as they are. A key several shards recorded with
different winners is a conflict — the sweeps interfered (devices not idle, clocks apart) —
and is counted and reported; the winner taken is the one of the first shard in the given
order (the lowest device), so the same shards always merge to the same record.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...common.files import atomic_write_json
from .records import META_FILE, RECORDS_FILE, SCHEMA_VERSION, load_record_dir


def merge_records(record_dirs: list[Path], backend: str) -> tuple[dict, list[str], dict]:
    """({kernel: {key: config}}, ["kernel key" conflicts], first shard's meta)."""
    merged: dict[str, dict] = {}
    conflicts: list[str] = []
    first_meta: dict = {}
    for path in record_dirs:
        meta, records = load_record_dir(path, backend)
        first_meta = first_meta or meta
        for kernel, keys in records["kernels"].items():
            into = merged.setdefault(kernel, {})
            for key, config in keys.items():
                if key not in into:
                    into[key] = config
                elif _plain(into[key]) != _plain(config):
                    conflicts.append(f"{kernel} {key}")
    return merged, conflicts, first_meta


def write_merged(out_dir: Path, records: dict, meta: dict, shards: list[Path],
                 conflicts: list[str]) -> Path:
    """A record directory others can replay from (`--replay OUT_DIR`)."""
    out_dir = Path(out_dir)
    atomic_write_json(out_dir / RECORDS_FILE, {"schema_version": SCHEMA_VERSION,
                                               "kernels": records})
    atomic_write_json(out_dir / META_FILE, {
        "schema_version": SCHEMA_VERSION, **{k: v for k, v in meta.items()
                                             if k not in ("kernels", "keys", "conflicts")},
        "mode": "record", "merged_from": [str(p) for p in shards],
        "kernels": len(records), "keys": sum(len(k) for k in records.values()),
        "shard_conflicts": conflicts})
    return out_dir


def _plain(config: dict) -> str:
    return json.dumps({k: v for k, v in config.items() if k != "pre_hook"}, sort_keys=True)
