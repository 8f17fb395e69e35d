"""Helpers for the product-campaign tests: valid manifests (builtin on cpu, the fake FlagGems
checkout), and a stand-in for a cell's `zlh bench` process that writes a synthetic run
directory (rows, output digests, TTGIR with convert_layout ops, index.tsv with launch counts),
so class paths and receipts are tested without a device and in seconds."""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import torch

from harness.common import markers
from harness.compile.ir.dump import INDEX_COLUMNS
from harness.corpus.outcome import Attempt
from harness.measure.measurement import Measurement
from harness.run import outputs
from harness.store.results import FAILED, SUCCESS, Row
from harness.store.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent
FAKE_FLAGGEMS = ROOT / "tests" / "fixtures" / "fake_flaggems"
COMPILER_COMMIT = "1" * 40
LIBRARY_COMMIT = "2" * 40
CALIBER = {"backend": "cuda", "device": "Fake GPU", "timer": "graph", "bench_level": "core",
           "shape_mode": "default", "tuner_cache": "isolated", "repeat": 1, "l2_policy": "warm",
           "warmup_ms": 1.0, "stopping": {"min_samples": 5}, "autotune_mode": "record",
           "ir_capture": True, "ir_stage": "ttgir"}


def zlh_commit() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def triton_site() -> str:
    import triton
    return str(Path(triton.__file__).resolve().parent.parent)


def compiler_source(tmp_path: Path) -> dict:
    src = tmp_path / "compiler-src"
    src.mkdir(exist_ok=True)
    (src / "COMMIT").write_text(COMPILER_COMMIT + "\n")
    return {"commit": COMPILER_COMMIT, "path": str(src), "package": "triton",
            "import_from": triton_site()}


def builtin_doc(tmp_path: Path, code_change: str = "unobserved") -> dict:
    """A valid manifest: builtin kernels on cpu, cells driven by ZLH_BUILTIN_SLOW."""
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[256]]\nsoftmax: [[4, 64]]\nmm: [[8, 8, 8]]\n")
    return {
        "schema_version": 1, "campaign_id": "cpu-slow-v1",
        "claim": "builtin kernels on the cpu interpreter, ZLH_BUILTIN_SLOW as the switch",
        "sources": {"compiler": compiler_source(tmp_path), "library": None,
                    "zlh": {"commit": zlh_commit()}},
        "device": {"backend": "cpu", "physical_device": "0"},
        "protocol": {
            "adapter": "builtin",
            "cells": [{"name": "off", "role": "baseline", "env": {"ZLH_BUILTIN_SLOW": "0"}},
                      {"name": "control", "role": "control", "env": {"ZLH_BUILTIN_SLOW": None}},
                      {"name": "candidate", "role": "candidate",
                       "env": {"ZLH_BUILTIN_SLOW": "1"}}],
            "timed_cells": ["off", "candidate"], "canary_order": ["add"],
            "fresh_process_per_op_cell": True, "one_physical_device": True,
            "serial_measurement": True, "timer": "auto", "dtypes": ["float32"],
            "timeouts_s": {"light": 120, "medium": 180, "heavy": 300},
            "code_change": code_change, "shapes": str(shapes),
            "bench": {"warmup_ms": 1, "min_samples": 3, "min_time_ms": 1, "max_time_ms": 10},
            "canary_gate": {"classes": {"add": ["G", "C", "R"]}, "max_k": 0}},
        "workloads": [
            {"id": "add", "op": "add", "family": "elementwise", "cost": "light", "canary": True,
             "correctness": None},
            {"id": "softmax", "op": "softmax", "family": "reduction", "cost": "light",
             "canary": False, "correctness": None},
            {"id": "mm", "op": "mm", "family": "mma", "cost": "medium", "canary": False,
             "correctness": None},
            {"id": "raise", "op": "fault_raise", "family": "fault", "cost": "light",
             "canary": False, "correctness": None}]}


def flaggems_doc(tmp_path: Path) -> dict:
    """A valid manifest over a copy of the fake FlagGems checkout (accuracy tests included)."""
    lib = tmp_path / "FlagGems"
    if not lib.exists():
        shutil.copytree(FAKE_FLAGGEMS, lib, ignore=shutil.ignore_patterns("__pycache__"))
        (lib / "COMMIT").write_text(LIBRARY_COMMIT + "\n")
    doc = builtin_doc(tmp_path, "convert_layout")
    doc["campaign_id"] = "fake-lib-v1"
    doc["sources"]["library"] = {"commit": LIBRARY_COMMIT, "path": str(lib),
                                 "package": "flag_gems", "import_from": str(lib / "src")}
    p = doc["protocol"]
    p["adapter"] = "flaggems"
    p["cells"] = [{"name": "off", "role": "baseline", "env": {"FAKE_MODE": "off"}},
                  {"name": "candidate", "role": "candidate", "env": {"FAKE_MODE": "cand"}}]
    p["timed_cells"], p["canary_order"] = ["off", "candidate"], ["mm"]
    p["shapes"] = None
    p["canary_gate"] = {"classes": {"mm": ["G", "C"]}}
    tests = {"file": "tests/test_accuracy.py", "k": "mm",
             "reason": "the file also tests softmax"}
    doc["workloads"] = [
        {"id": "mm", "op": "mm", "op_file": "mm", "family": "mma", "cost": "heavy",
         "canary": True, "correctness": tests},
        {"id": "softmax", "op": "softmax", "op_file": "softmax", "family": "reduction",
         "cost": "light", "canary": False,
         "correctness": {"node_ids": ["tests/test_accuracy.py::test_accuracy[softmax]"],
                         "reason": "one parametrisation"}}]
    return doc


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc, indent=1))
    return path


def mutated(doc: dict, change) -> dict:
    doc = copy.deepcopy(doc)
    change(doc)
    return doc


# ---- a synthetic cell process ----------------------------------------------------------------
@dataclass
class Spec:
    """What one synthetic cell measures: latency per shape (ms), `ok` / `fail` / `crash` /
    `disk_full` (its run could not write its files), measured kernels as (name,
    convert_layout ops, launches), set-up kernels likewise, a code tag (another tag = another
    fingerprint), an output value, replay fallbacks."""
    latency: dict = field(default_factory=lambda: {"64": 1.0, "128": 2.0})
    status: str = "ok"
    kernels: list = field(default_factory=lambda: [("k", 2, 100)])
    setup: list = field(default_factory=list)
    code: str = "v1"
    output: float = 1.0
    fallbacks: int = 0


class FakeCells:
    """Stands in for `run_fresh`: the cell's mode is its env FAKE_MODE, the round is the
    cell directory's parent; specs are looked up by (op, mode, round), (op, mode), (mode,)."""

    def __init__(self, specs: dict):
        self.specs = specs
        self.calls: list[tuple] = []

    def spec(self, op: str, mode: str, rnd: str) -> Spec:
        for key in ((op, mode, rnd), (op, mode), (mode,)):
            if key in self.specs:
                return self.specs[key]
        return Spec()

    def __call__(self, lane, op, argv, timeout_s, log, out):
        mode, rnd = lane.env.get("FAKE_MODE", "-"), Path(out).parent.name
        self.calls.append((op, mode, rnd))
        Path(log).write_text(f"fake {op} {mode} {rnd} {' '.join(argv)}\n")
        spec = self.spec(op, mode, rnd)
        if spec.status == "crash":
            return Attempt(-9, 0.1, Path(log), None, "", 1)
        run_dir = make_run(Path(out), op, spec, "--replay" in argv)
        if spec.status == "disk_full":          # its run measured some cases, then failed
            return Attempt(1, 0.1, Path(log), run_dir, "", 1, write_failure="disk full")
        return Attempt(1 if spec.status == "fail" else 0, 0.1, Path(log), run_dir, "", 1)


def make_run(out: Path, op: str, spec: Spec, replay: bool) -> Path:
    run = RunDir.create(out, op)
    rows = []
    for i, (shape, ms) in enumerate(spec.latency.items()):
        ok = spec.status != "fail"
        samples = tuple(ms * (1 + 0.0005 * (j - 5)) for j in range(11))
        rows.append(Row(op=op, dtype="float16", shape=None, shape_detail=shape,
                        status=SUCCESS if ok else FAILED, reason="" if ok else "boom",
                        torch=Measurement(samples, "graph") if ok else None,
                        gems=Measurement(samples, "graph") if ok else None,
                        markers=[markers.marker(markers.REPLAY_FALLBACK, reason="key_missing")]
                        if i < spec.fallbacks else [],
                        extra={"output": outputs.digest(torch.full((16,), spec.output))}))
    run.write_results(rows)
    mode = "replay" if replay else "record"
    run.write_run_json({"op": op, "status": "complete", "autotune_mode": mode,
                        "caliber": dict(CALIBER, autotune_mode=mode),
                        "ir": {"hooks_ok": True, "measured_variants": len(spec.kernels)}})
    write_ttgir(run.path, list(spec.latency), spec)
    return run.path


def write_ttgir(run_dir: Path, shapes: list[str], spec: Spec) -> None:
    rows = []
    for role, kernels, prefix in (("measured", spec.kernels, ""), ("setup", spec.setup,
                                                                     "_setup/")):
        for name, cvt, launches in kernels:
            text = ("module {\n" + "  %1 = ttg.convert_layout %0\n" * cvt +
                    f"  tt.func @{name}() {{ // {spec.code}\n  }}\n}}\n")
            for shape in shapes:
                rel = f"{prefix}{shape}/{name}/w4.ttgir"
                (run_dir / "ttgir" / rel).parent.mkdir(parents=True, exist_ok=True)
                (run_dir / "ttgir" / rel).write_text(text)
                measured = role == "measured"
                rows.append({"shape": shape, "kernel": name, "role": role, "status": "dumped",
                             "file": rel, "launches": launches if measured else 0,
                             "setup_launches": 0 if measured else launches,
                             "convert_layout": cvt, "hash": f"{name}-{spec.code}"})
    lines = ["\t".join(INDEX_COLUMNS)]
    lines += ["\t".join(str(r.get(c, "-")) for c in INDEX_COLUMNS) for r in rows]
    (run_dir / "ttgir").mkdir(parents=True, exist_ok=True)
    (run_dir / "ttgir" / "index.tsv").write_text("\n".join(lines) + "\n")


def no_contract(frozen, python=None) -> dict:
    """The contract's receipt body when a test does not check it (contract tests do)."""
    return {"kind": "contract", "campaign_id": frozen.manifest.campaign_id,
            "checks": [{"check": "all", "status": "skipped", "detail": "test"}],
            "observed": {"pid": os.getpid()}}


def fake_doc(tmp_path: Path, code_change: str = "convert_layout", control: bool = True) -> dict:
    """A valid builtin manifest whose cells a FakeCells tells apart by FAKE_MODE."""
    doc = builtin_doc(tmp_path, code_change)
    doc["campaign_id"] = "fake-cells-v1"
    cells = [{"name": "off", "role": "baseline", "env": {"FAKE_MODE": "off"}},
             {"name": "mask0", "role": "control", "env": {"FAKE_MODE": "ctl"}},
             {"name": "candidate", "role": "candidate", "env": {"FAKE_MODE": "cand"}}]
    doc["protocol"]["cells"] = cells if control else [cells[0], cells[2]]
    return doc
