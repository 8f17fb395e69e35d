"""Run directories as `zlh bench` writes them, made without running anything (tests)."""
from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path

import numpy as np

from harness.measure.measurement import Measurement
from harness.run.options import BenchOptions
from harness.store.results import SUCCESS, Row
from harness.store.rundir import RunDir

CPU_CALIBER = {"backend": "cpu", "device": "host", "timer": "host", "bench_level": "core",
               "shape_mode": "file:0123456789abcdef", "tuner_cache": "none", "repeat": 1,
               "l2_policy": "warm", "warmup_ms": 1.0, "stopping": {"min_samples": 3},
               "autotune_mode": "record", "ir_capture": True, "ir_stage": "ttgir", "seed": 0,
               "inputs": "device"}


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
    shapes = Path(root) / "sh" / "add.yaml"
    options = BenchOptions.from_flat(adapter="builtin", backend=backend, shapes=str(shapes),
                                     dtypes=[dtype])
    # the shape file's content names the shapes measured, as a run writes it (when it exists)
    shape_mode = ({"shape_mode": "file:" + hashlib.sha256(shapes.read_bytes()).hexdigest()[:16]}
                  if shapes.is_file() else {})
    info = {"op": op, "status": status, "options": options.to_dict(), "seed": 0,
            "caliber": dict(CPU_CALIBER, backend=backend, autotune_mode=mode,
                            **shape_mode, **(caliber or {})),
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


# A record run of an H200 as an A/B compares it (make_run's caliber).
CALIBER = {"backend": "cuda", "device": "NVIDIA H200", "timer": "graph", "bench_level": "core",
           "shape_mode": "upstream", "tuner_cache": "isolated", "repeat": 1, "l2_policy": "warm",
           "warmup_ms": 100.0, "stopping": {"min_samples": 20}, "autotune_mode": "record",
           "ir_capture": True, "ir_stage": "ttgir", "seed": 0, "inputs": "device",
           "placements": 1, "placement_memory": "reused", "level_placements": 0,
           "level_min_us": 0.0}


def make_run(root, name, latencies, caliber=None, mode="record", statuses=None, outputs=None,
             seed=0, replay_from=None, op="softmax", run_status="complete"):
    """A run directory with one row per shape; samples spread 0.5% around each latency."""
    rng = np.random.default_rng(seed)
    run = RunDir.create(root, name)
    rows = []
    for i, (shape, ms) in enumerate(latencies.items()):
        status = (statuses or {}).get(shape, SUCCESS)
        ok = status == SUCCESS
        samples = tuple(float(v) for v in ms * (1 + 0.005 * rng.standard_normal(30))) if ok else ()
        row = Row(op=op, dtype="bfloat16", shape=None, shape_detail=shape, status=status,
                  reason="" if ok else "boom",
                  torch=Measurement(samples, "graph") if ok else None,
                  gems=Measurement(samples, "graph") if ok else None)
        if outputs and shape in outputs:
            row.extra["output"] = outputs[shape]
        rows.append(row)
    run.write_results(rows)
    cal = dict(CALIBER, **(caliber or {}), autotune_mode=mode) if caliber is not False else None
    info = {"op": op, "status": run_status}
    if replay_from is not None:
        info["autotune_replay_from"] = str(replay_from)
    if cal is not None:
        info["caliber"] = cal
    run.write_run_json(info)
    return run.path
