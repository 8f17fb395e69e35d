"""Marker lines: one-line, grep-able facts about how a number was (or was not) obtained.

Format: `NAME key=value key=value ... detail=free text`; `detail`, when present, is last and
runs to the end of the line.
"""
from __future__ import annotations

import re

NO_GRAPH = "BENCHMARK_DIRECT_NO_CUDAGRAPH"
CAPTURE_POISONED = "BENCHMARK_CAPTURE_POISONED"
DEVICE_POISONED = "BENCHMARK_DEVICE_POISONED"
ALL_EVENT_TIMED = "BENCHMARK_RUN_EVENT_TIMED"
CASE_FAILED = "BENCHMARK_CASE_FAILED"
REPLAY_FALLBACK = "AUTOTUNE_REPLAY_FALLBACK"
KEY_SHARED = "AUTOTUNE_KEY_SHARED"          # a case ran a config another case's sweep chose
THROTTLED = "BENCHMARK_CASE_THROTTLED"      # a timed function ran on a held-back device
PLANTED = "CALIBRATION_PLANT"               # a known device delay added (zlh calibrate)
SAMPLES_FLAGGED = "BENCHMARK_SAMPLES_FLAGGED"     # undersampled / outliers / bimodal

_SAFE_VALUE = re.compile(r"[^\w.:/@+\-]")


def marker(name: str, detail: str | None = None, **fields) -> str:
    parts = [name]
    for key, value in fields.items():
        parts.append(f"{key}={_token(value)}")
    if detail:
        parts.append("detail=" + " ".join(str(detail).split()))
    return " ".join(parts)


def _token(value) -> str:
    text = str(value)
    return _SAFE_VALUE.sub("_", text) if text else "-"


def parse_marker(line: str) -> tuple[str, dict]:
    """Inverse of `marker` (detail kept whole)."""
    name, _, rest = line.strip().partition(" ")
    fields: dict[str, str] = {}
    detail_at = rest.find("detail=")
    if detail_at >= 0:
        fields["detail"] = rest[detail_at + len("detail="):]
        rest = rest[:detail_at]
    for part in rest.split():
        key, _, value = part.partition("=")
        fields[key] = value
    return name, fields


def marker_name(line: str) -> str:
    return line.split(" ", 1)[0]
