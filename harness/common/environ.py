"""The environment as the user set it: which variable broke an import, safe output streams,
the switches a corpus root records.

A library that refuses one of its environment variables at import (`TORCH_LOGS=bogus`
raises inside `import torch`) must not read as a fault of the op or of zlh: the failure is
one line naming the variable (`PREFLIGHT_FAILED check=environment`, exit 3). zlh's own
output survives a stream whose encoding cannot hold every character (`PYTHONIOENCODING=ascii`).
"""
from __future__ import annotations

import sys
import traceback
from typing import Iterable, Mapping

from .errors import PreflightError, one_line

# Variables the interpreter or torch read at start: a side environment setting one of them is
# import-checked in a process of its own before anything runs.
IMPORT_PREFIXES = ("PYTHON", "TORCH_", "PYTORCH_", "LD_")
# Variables an import failure may be blamed on, when the error names them or their value.
BLAMED_PREFIXES = (*IMPORT_PREFIXES, "TRITON_", "CUDA_", "HIP_", "ROCM_", "OMP_", "MKL_")
# Values too common to blame a variable for when an error text holds them.
COMMON_VALUES = {"true", "false", "yes", "off", "none", "null", "all", "info", "debug"}
# Packages whose failing import is blamed on the environment when a variable is to blame.
LIBRARIES = ("torch", "triton", "numpy")


def safe_streams() -> None:
    """zlh's output on stdout and stderr never fails for a character the streams' encoding
    lacks (`PYTHONIOENCODING=ascii`, a C locale): it is written escaped instead. A child
    zlh process does the same at its own start."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None or getattr(stream, "errors", "") in ("backslashreplace",
                                                                    "replace"):
            continue
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError, TypeError):  # a closed or foreign stream: left as it is
            pass


def std_stream(fd: int):
    """A new text stream on standard descriptor `fd` (1 or 2) as zlh's own are (line by line,
    what the encoding lacks escaped), the descriptor left open when the stream is closed:
    where code under test closed Python's stream. None where the descriptor is gone too."""
    try:
        return open(fd, "w", encoding="utf-8", errors="backslashreplace", buffering=1,
                    closefd=False)
    except OSError:
        return None


def suspects(text: str, environ: Mapping[str, str], names: Iterable[str] | None = None
             ) -> list[str]:
    """`NAME='value'` for each variable (of `names`, default every one read at import) that
    the error text mentions by name or by value."""
    found = []
    candidates = names if names is not None else [k for k in environ
                                                  if k.startswith(BLAMED_PREFIXES)]
    for name in sorted(candidates):
        value = environ.get(name)
        if value is None:
            continue
        shown = value.strip()
        if name in text or (len(shown) >= 3 and shown.lower() not in COMMON_VALUES
                            and not shown.isdigit() and shown in text):
            found.append(f"{name}={value!r}")
    return found


def failed_import(exc: BaseException) -> str | None:
    """The library (of LIBRARIES) whose import raised `exc` (a frame of its module body on
    the way), when it did; else None."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_name != "<module>":
            continue
        path = frame.f_code.co_filename.replace("\\", "/")
        for name in LIBRARIES:
            if f"/{name}/" in path:
                return name
    return None


def import_failure(exc: BaseException, environ: Mapping[str, str]) -> PreflightError | None:
    """A PreflightError naming the variable to blame when `exc` was raised while a library
    was imported and a variable it reads is mentioned in the error; else None."""
    library = failed_import(exc)
    if library is None:
        return None
    why = " ".join(f"{type(exc).__name__}: {exc}".split())
    blamed = suspects(why, environ)
    if not blamed:
        return None
    return PreflightError(
        "environment", f"importing {library} failed because of the environment variable "
                       f"{', '.join(blamed)}: {one_line(why, 240)}; fix or unset it")
