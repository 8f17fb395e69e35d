"""A stand-in for zlh's reused worker: a Worker whose process runs SCRIPT (text speaking the
worker protocol) instead of `python -m harness.corpus.worker`, for tests of the supervisor."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from harness.corpus.supervisor import Lane, Worker


def stand_in_worker(tmp_path: Path, script: str) -> Worker:
    path = tmp_path / "stand_in.py"
    path.write_text(script)
    python = tmp_path / "python"         # called as `python -m harness.corpus.worker`
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {path}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return Worker(Lane(python=str(python), env=dict(os.environ)), tmp_path / "worker.log")
