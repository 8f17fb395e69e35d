"""Autotune record / replay, in-process.

Two runs of the same code can autotune to different configs, and that difference swamps the
change under test. So side A records the config each tuned call actually used, per
(kernel, key), and side B forces exactly those configs. Install a hook before the first
launch of the run; one hook at a time per process.

    records.py  the file format, keys, configs, loading a record run
    hooks.py    the cache view and the run() patch shared by both modes
    budget.py   a shorter timing budget per config of a sweep (--sweep-ms)
    record.py   AutotuneRecorder
    replay.py   AutotuneReplayer
"""
from .hooks import UNCONTROLLED_FIELDS, Unhooked
from .record import AutotuneRecorder
from .records import (COMPILE_FAILED, KEY_MISSING, META_FILE, NO_EVICT, RECORDS_FILE,
                      SCHEMA_VERSION, config_from_dict, config_to_dict, kernel_name, key_str,
                      load_record_dir, records_digest)
from .replay import AutotuneReplayer

__all__ = ["AutotuneRecorder", "AutotuneReplayer", "UNCONTROLLED_FIELDS", "Unhooked",
           "COMPILE_FAILED", "KEY_MISSING", "META_FILE", "NO_EVICT", "RECORDS_FILE",
           "SCHEMA_VERSION", "config_from_dict", "config_to_dict", "kernel_name", "key_str",
           "load_record_dir", "records_digest"]
