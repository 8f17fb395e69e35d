"""Run directories as `zlh bench` writes them, made without running anything (tests)."""
from __future__ import annotations

import json
import socket
from pathlib import Path

from harness.measure.measurement import Measurement
from harness.run.options import BenchOptions
from harness.store.results import SUCCESS, Row
from harness.store.rundir import RunDir

CPU_CALIBER = {"backend": "cpu", "device": "host", "timer": "host", "bench_level": "core",
               "shape_mode": "file:0123456789abcdef", "tuner_cache": "none", "repeat": 1,
               "l2_policy": "warm", "warmup_ms": 1.0, "stopping": {"min_samples": 3},
               "autotune_mode": "record", "ir_capture": True, "ir_stage": "ttgir", "seed": 0}


def fake_run(root: Path, name: str, op: str = "add", mode: str = "record",
             backend: str = "cpu", status: str = "complete", dtype: str = "float32",
             replay_from: Path | None = None, caliber: dict | None = None,
             rows: bool = True, pid: int | None = None) -> Path:
    """A run directory as `zlh bench` writes it, without running anything."""
    run = RunDir.create(root / name, op)
    if rows:
        samples = (1.0, 1.01, 0.99, 1.0, 1.02)
        run.write_results([Row(op=op, dtype=dtype, shape=[64], shape_detail="64",
                               status=SUCCESS, torch=Measurement(samples, "host"),
                               gems=Measurement(samples, "host"))])
    options = BenchOptions.from_flat(adapter="builtin", backend=backend,
                                     shapes=str(Path(root) / "sh" / "add.yaml"), dtypes=[dtype])
    info = {"op": op, "status": status, "options": options.to_dict(), "seed": 0,
            "caliber": dict(CPU_CALIBER, backend=backend, autotune_mode=mode,
                            **(caliber or {})),
            "autotune_mode": mode, "device": {"index": 0}}
    if pid is not None:
        info.update(pid=pid, host={"hostname": socket.gethostname()})
    auto = run.path / "autotune"
    auto.mkdir()
    if mode == "record":
        (auto / "records.json").write_text('{"schema_version": 1, "kernels": {}}')
        (auto / "meta.json").write_text(json.dumps({"mode": "record", "backend": backend,
                                                    "op": op}))
    else:
        info["autotune_replay_from"] = str(replay_from)
        (auto / "meta.json").write_text(json.dumps({"mode": "replay",
                                                    "replay_from": str(replay_from)}))
    run.write_run_json(info)
    return run.path
