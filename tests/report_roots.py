"""Synthetic roots of every kind `zlh report` reads, written straight to disk (nothing runs):
a screen root of any size (1,115 ops for the page-size and browser tests), a batch root, an
A/B root, a calibrate root, a campaign root and a product run root."""
from __future__ import annotations

import json
import random
from pathlib import Path

from harness.ab.compare import compare_runs
from harness.ab.report import write_reports
from harness.corpus.outcome import Outcome
from harness.corpus.verdict import TSV_COLUMNS, tsv_text
from harness.measure.measurement import Measurement
from harness.store.reader import load_run
from harness.store.results import SUCCESS, Row
from harness.store.rundir import safe_name

CALIBER = {"backend": "cuda", "device": "NVIDIA H200", "timer": "graph", "bench_level": "core",
           "shape_mode": "upstream", "tuner_cache": "isolated", "repeat": 1, "l2_policy": "warm",
           "warmup_ms": 10.0, "stopping": {"min_samples": 5}, "autotune_mode": "record",
           "ir_capture": True, "ir_stage": "ttgir", "seed": 0}
INDEX_COLUMNS = ("shape", "kernel", "role", "status", "file", "num_warps", "num_stages",
                 "num_ctas", "convert_layout", "hash")
META = ("n_regs", "n_spills", "shared")
T0 = 1796193000.0


def _samples(ms: float, rng: random.Random, n: int = 5) -> tuple[float, ...]:
    return tuple(round(ms * (1 + 0.004 * rng.gauss(0, 1)), 9) for _ in range(n))


def write_run(path: Path, op: str, latencies: dict[str, float], rng: random.Random,
              compiler: str = "3.6.0", started: float = T0, throttled=(),
              kernels: list[dict] | None = None, meta: bool = True) -> Path:
    """A run directory: run.json, results.jsonl (one row per shape), ttgir/index.tsv and
    TTGIR files for `kernels` ({shape, kernel, text, warps, regs})."""
    path.mkdir(parents=True)
    lines = []
    for shape, ms in latencies.items():
        row = Row(op=op, dtype="bfloat16", shape=None, shape_detail=shape, status=SUCCESS,
                  torch=Measurement(_samples(ms * 1.1, rng), "graph"),
                  gems=Measurement(_samples(ms, rng), "graph"),
                  throttled=shape in throttled)
        lines.append(json.dumps(row.to_dict()))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    stamp = lambda t: __import__("time").strftime("%Y-%m-%dT%H:%M:%S+0000",  # noqa: E731
                                                 __import__("time").gmtime(t))
    info = {"schema_version": 1, "op": op, "status": "complete", "caliber": CALIBER,
            "compiler": {"package": "triton", "distribution": "triton", "version": compiler,
                         "commit": None},
            "device": {"name": "NVIDIA H200", "index": 0},
            "started_at": stamp(started), "finished_at": stamp(started + 2)}
    (path / "run.json").write_text(json.dumps(info))
    if kernels:
        ir = path / "ttgir"
        ir.mkdir()
        columns = INDEX_COLUMNS + (META if meta else ())
        rows = ["\t".join(columns)]
        for k in kernels:
            rel = f"{k['shape']}/{k['kernel']}/w{k['warps']}s3.ttgir"
            (ir / rel).parent.mkdir(parents=True, exist_ok=True)
            (ir / rel).write_text(k["text"])
            values = {"shape": k["shape"], "kernel": k["kernel"], "role": "measured",
                      "status": "dumped", "file": rel, "num_warps": k["warps"],
                      "num_stages": 3, "num_ctas": 1, "convert_layout": k["text"].count(
                          "ttg.convert_layout"), "hash": str(hash(k["text"]) & 0xffffffff),
                      "n_regs": k.get("regs", 40), "n_spills": k.get("spills", 0),
                      "shared": k.get("shared", 0)}
            rows.append("\t".join(str(values[c]) for c in columns))
        (ir / "index.tsv").write_text("\n".join(rows) + "\n")
    return path


def _ttgir(n: int, variant: int) -> str:
    body = [f"  %{i} = arith.addf %a, %b : tensor<128xf32>" for i in range(n)]
    if variant:
        body.insert(n // 2, "  %c = ttg.convert_layout %x : tensor<128xf32>")
    return "module {\n  tt.func @kernel() {\n" + "\n".join(body) + "\n  }\n}\n"


def _complete(side: Path, op: str, run: Path | None, elapsed: float, status="PASS") -> None:
    folder = side / safe_name(op)
    folder.mkdir(parents=True, exist_ok=True)
    outcome = Outcome(status, 0 if status == "PASS" else 1, elapsed, run_dir=None,
                      rows_total=2 if run else 0, rows_success=2 if run else 0)
    doc = {"schema_version": 1, "op": op, "device": 0, **outcome.to_dict(),
           "run_dir": run.relative_to(side).as_posix() if run else None}
    (folder / ".complete").write_text(json.dumps(doc))


def telemetry(root: Path, seconds: int = 120, devices=(0,), slow=(40, 50)) -> None:
    lines = ["time\tdevice\tphysical\tsm_clock_mhz\tmem_clock_mhz\ttemp_c\tpower_w\t"
             "util_pct\tthrottle\tsource\tcost_us"]
    for d in devices:
        for t in range(0, seconds, 2):
            hot = slow[0] <= t < slow[1]
            lines.append(f"{T0 + t:.3f}\t{d}\t{d}\t{1410 if hot else 1980}\t3201\t"
                         f"{80 if hot else 45}\t{650 if hot else 400}\t90\t"
                         f"{'hw_thermal' if hot else 'none'}\tnvml\t150")
    (root / "telemetry.tsv").write_text("\n".join(lines) + "\n")


def screen_root(root: Path, n_ops: int = 12, seed: int = 0, compiler: str = "3.6.0",
                started: float = T0, shift: dict[str, float] | None = None) -> Path:
    """(long: one loop writes each op's two runs, its .complete files and its table row)
    A screen root of `n_ops` ops (op0000, ...): about 15 % IR_CHANGED, a few NO_TRITON and
    NO_ROWS, the rest NO_IR_DIFF; op0001 is 4.8 million % faster (an outlier the axes must
    survive), op0002 99.9 % slower; IR_CHANGED ops carry metadata columns and op0000 a
    kernel_split.tsv. `shift`: op -> delta % added on side B, its code changed (history
    tests)."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    rows = []
    for i in range(n_ops):
        op = f"op{i:04d}"
        verdict = ("IR_CHANGED" if i % 7 in (0, 1) or i < 3 else "NO_TRITON" if i % 29 == 5
                   else "NO_ROWS" if i % 31 == 6 else "NO_IR_DIFF")
        base = {"64": 0.01 + 0.001 * (i % 13), "4096": 0.2 + 0.01 * (i % 17)}
        factor = 1 + (shift or {}).get(op, 0.0) / 100
        if op in (shift or {}):
            verdict = "IR_CHANGED"              # the build changed its code
        elif verdict == "IR_CHANGED":
            factor *= 1 + rng.gauss(0, 0.05)
        factor = 48000.0 if i == 1 else 1 / 1000 if i == 2 else factor
        b_lat = {k: v / factor for k, v in base.items()}
        kernels_a = kernels_b = None
        if verdict == "IR_CHANGED":
            kernels_a = [{"shape": "4096", "kernel": f"{op}_kernel", "text": _ttgir(30, 0),
                          "warps": 4, "regs": 40}]
            kernels_b = [{"shape": "4096", "kernel": f"{op}_kernel", "text": _ttgir(30, 1),
                          "warps": 8, "regs": 64, "spills": 2, "shared": 16384}]
        elif verdict == "NO_IR_DIFF":
            kernels_a = kernels_b = [{"shape": "4096", "kernel": f"{op}_kernel",
                                      "text": _ttgir(10, 0), "warps": 4}]
        run_a = run_b = None
        if verdict != "NO_ROWS":
            t = started + i
            run_a = write_run(root / "A" / op / f"{op}_a", op, base, rng, compiler, t,
                              kernels=kernels_a)
            run_b = write_run(root / "B" / op / f"{op}_b", op, b_lat, rng, compiler, t + 0.5,
                              throttled=("64",) if i % 50 == 3 else (), kernels=kernels_b)
        if i == 0:
            for run in (run_a, run_b):
                (run / "kernel_split.tsv").write_text(
                    "variant\tdtype\tshape\toccurrence\tkernel\tcalls\ttime_us\tshare\t"
                    "per_call_us\top_calls\top_latency_us\top_span_us\n"
                    "\tbfloat16\t4096\t0\top0000_kernel\t10\t150.0\t0.75\t150.0\t10\t202.0\t201.0\n"
                    "\tbfloat16\t4096\t0\top0000_setup\t10\t50.0\t0.25\t50.0\t10\t202.0\t201.0\n")
        _complete(root / "A", op, run_a, 1.5, "PASS" if run_a else "FAIL")
        _complete(root / "B", op, run_b, 1.5, "PASS" if run_b else "FAIL")
        delta = None if verdict in ("NO_ROWS", "NO_TRITON") else (factor - 1) * 100
        rows.append({"op": op, "op_file": f"benchmark/test_fam{i % 9}.py", "dtypes": "bfloat16",
                     "rows_a": 2, "rows_b": 2, "failed_a": 0, "failed_b": 0,
                     "kernels_a": 1, "kernels_b": 1, "cvt_a": 0,
                     "cvt_b": 1 if verdict == "IR_CHANGED" else 0, "elapsed_a": "1.500",
                     "elapsed_b": "1.500",
                     "median_delta_pct": "-" if delta is None else f"{delta:.4f}",
                     "verdict": verdict, "note": f"synthetic {verdict}",
                     "device": "NVIDIA H200"})
    (root / "screen.tsv").write_text(tsv_text(rows))
    assert tsv_text(rows).splitlines()[0].split("\t") == list(TSV_COLUMNS)
    (root / "screen.json").write_text(json.dumps({
        "schema_version": 1, "kind": "screen", "scrub": [],
        "batch": {"devices": [0]},
        "A": {"label": "A", "env": {"TRITON_F32_DEFAULT": "ieee"}, "description":
              "TRITON_F32_DEFAULT=ieee"},
        "B": {"label": "B", "env": {"TRITON_F32_DEFAULT": "tf32x3"}, "description":
              "TRITON_F32_DEFAULT=tf32x3"}}))
    telemetry(root)
    return root


def batch_root(root: Path, n_ops: int = 4) -> Path:
    rng = random.Random(1)
    root.mkdir(parents=True)
    lines = ["repo,op,op_file,device,status,rc,elapsed_s,rows_total,rows_success,notes,"
             "run_dir,reason"]
    for i in range(n_ops):
        op = f"op{i}"
        failed = i == n_ops - 1
        if not failed:
            write_run(root / op / f"{op}_r", op, {"64": 0.01, "4096": 0.2}, rng)
        lines.append(f"flaggems,{op},benchmark/test_fam{i}.py,0,{'FAIL' if failed else 'PASS'},"
                     f"{1 if failed else 0},2.0,2,{0 if failed else 2},,"
                     f"{'' if failed else f'{op}/{op}_r'},{'boom' if failed else ''}")
    (root / "ops_status.csv").write_text("\n".join(lines) + "\n")
    (root / "batch.json").write_text(json.dumps({"schema_version": 1, "devices": [0],
                                                 "caliber": CALIBER,
                                                 "command": ["zlh", "batch", "--level", "core"]}))
    telemetry(root)
    return root


def ab_root(root: Path, ops=("softmax", "mm"), extra: dict | None = None) -> Path:
    """An A/B root (report.json over runs under <op>/r1_A, r1_B); `extra` files beside."""
    rng = random.Random(2)
    reports = []
    for n, op in enumerate(ops):
        a = write_run(root / op / "r1_A" / f"{op}_a", op, {"64": 0.01, "4096": 0.2}, rng,
                      kernels=[{"shape": "4096", "kernel": "k", "text": _ttgir(8, 0),
                                "warps": 4}])
        b = write_run(root / op / "r1_B" / f"{op}_b", op, {"64": 0.0095, "4096": 0.19}, rng,
                      kernels=[{"shape": "4096", "kernel": "k", "text": _ttgir(8, n % 2),
                                "warps": 4}])
        report = compare_runs([(load_run(a), load_run(b))])
        report.verdict = "IR_CHANGED" if n % 2 else \
            "SWITCH_NO_IR_DIFF: identical generated code; the deltas are this machine's noise floor"
        reports.append(report)
    write_reports(root, reports)
    for name, doc in (extra or {}).items():
        (root / name).write_text(json.dumps(doc))
    telemetry(root)
    return root


def calibrate_root(root: Path) -> Path:
    return ab_root(root, ("add",), {"calibration.json": {
        "schema_version": 1, "kind": "calibration", "rounds": 3, "plant_pct": None,
        "floor": {"noise_max_pct": 0.8, "detectable_pct": 1.2}}})


def campaign_root(root: Path) -> Path:
    return ab_root(root, ("softmax", "mm", "sum"), {
        "campaign.json": {"schema_version": 1, "kind": "campaign", "devices": [0, 1],
                          "rounds": 3, "screen": "runs/screen_x",
                          "A": {"description": "TRITON_F32_DEFAULT=ieee"},
                          "B": {"description": "TRITON_F32_DEFAULT=tf32x3"}},
        "merged.json": {"schema_version": 1}})


def product_root(root: Path) -> Path:
    rng = random.Random(3)
    root.mkdir(parents=True)
    status = ["task_id,op,family,class,reason"]
    for n, (tid, cls) in enumerate((("t1", "G"), ("t2", "C"), ("t3", "X"))):
        task = root / "tasks" / tid
        runs = {}
        for cell, scale in (("base", 1.0), ("cand", 0.9)):
            runs[cell] = write_run(task / "a" / cell / "run", f"op{n}",
                                   {"64": 0.01 * scale, "4096": 0.2 * scale}, rng)
            (task / "a" / cell / "cell-receipt.json").write_text(json.dumps(
                {"status": "PASS", "run_dir": runs[cell].relative_to(root).as_posix()}))
        receipt = {"kind": "task", "task_id": tid, "op_name": f"op{n}", "family": "fam",
                   "class": cls, "rule": "r", "reason": f"because {cls}",
                   "rules": {"cells": ["base", "cand"], "candidate": "cand"},
                   "correctness": {"cand": "PASS"},
                   "cells": {"a": {"base": {"convert_count": 1}, "cand": {"convert_count": 2}}},
                   "rounds": {"a": {"delta_median_pct": 11.1, "delta_min_pct": 10.0,
                                    "delta_max_pct": 12.0}},
                   "receipts": {"a/base": f"tasks/{tid}/a/base/cell-receipt.json",
                                "a/cand": f"tasks/{tid}/a/cand/cell-receipt.json"}}
        (task / "task-receipt.json").write_text(json.dumps({"schema_version": 1, **receipt}))
        status.append(f"{tid},op{n},fam,{cls},because {cls}")
    (root / "status.csv").write_text("\n".join(status) + "\n")
    (root / "contract-receipt.json").write_text(json.dumps({"schema_version": 1}))
    (root / "campaign-receipt.json").write_text(json.dumps({
        "schema_version": 1, "kind": "campaign", "campaign_id": "demo", "selection": "all",
        "status": "TERMINAL", "rules": {"cells": ["base", "cand"], "candidate": "cand"},
        "claim_scope": {"device": {"name": "NVIDIA H200"}}}))
    return root
