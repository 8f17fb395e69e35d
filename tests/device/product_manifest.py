"""Writes the manifest (and its shape file) for check_product_campaign.sh.

    python3 tests/device/product_manifest.py WORK_DIR

Eight FlagGems workloads in $DTYPE (default bfloat16), three canaries, the switch
TRITON_F32_DEFAULT: baseline `ieee`, candidate `tf32x3`. Correctness is the output gate against
the baseline cell (the staged FlagGems tree has no tests/ folder for its accuracy tests).
Code change by fingerprint.

Why bfloat16: with Triton 3.6 the switch changes the TTGIR of FlagGems' bfloat16 `tl.dot`
kernels (mm, addmm, bmm: an `inputPrecision` attribute on the dot; seen in a device screen)
and leaves elementwise, reduction and norm kernels alone, so the first group should get round
b and a timed class (G, C or R) and the second B. In float32 FlagGems' mm, addmm and bmm pass
`allow_tf32=False` to every `tl.dot`, and on the H200 (Triton 3.6) the float32 canary mm kept
its fingerprint under tf32x3: class B, the canary gate failed, exit 1 — the tool was right and
that pre-registered expectation wrong. DTYPE=float32 reproduces it.

Identities: FlagGems from $FLAGGEMS_DIR (its COMMIT file). A PyPI Triton wheel carries no
commit: unless COMPILER_COMMIT is set, the compiler identity directory is stamped with the
sha1 of libtriton.so (40 hex), which binds the campaign to that exact binary. zlh: its git
HEAD, else ZLH_COMMIT, else the sha1 over zlh's source files (written to ./COMMIT by the
calling script when the tree is not a git checkout).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import yaml

WORKLOADS = [  # id, op, family, cost, canary
    ("mm", "mm", "blas", "heavy", True),
    ("addmm", "addmm", "blas", "heavy", False),
    ("bmm", "bmm", "blas", "heavy", False),
    ("softmax", "softmax", "reduction", "light", True),
    ("add", "add", "elementwise", "light", True),
    ("layer_norm", "layer_norm", "norm", "medium", False),
    ("gelu", "gelu", "elementwise", "light", False),
    ("rms_norm", "rms_norm", "norm", "medium", False),
]


def sha1_file(path: Path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def compiler(work: Path) -> dict:
    import triton
    package = Path(triton.__file__).resolve().parent
    binary = package / "_C" / "libtriton.so"
    ident = work / "compiler-id"
    ident.mkdir(parents=True, exist_ok=True)
    commit = os.environ.get("COMPILER_COMMIT") or sha1_file(binary)
    (ident / "COMMIT").write_text(commit + "\n")
    return {"commit": commit, "path": str(ident), "package": "triton",
            "import_from": str(package.parent), "binary": "_C/libtriton.so"}


def shapes(work: Path, flaggems: Path) -> str:
    """FlagGems' core shapes with the BLAS shapes cut to one (each record cell autotunes)."""
    doc = yaml.safe_load((flaggems / "benchmark" / "core_shapes.yaml").read_text())
    doc["BlasBenchmark"] = {"shapes": [[4, 1024, 1024, 1024]], "shape_desc": "B, M, N, K"}
    path = work / "shapes.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def main() -> int:
    work = Path(sys.argv[1]).resolve()
    flaggems = Path(os.environ["FLAGGEMS_DIR"]).resolve()
    from harness.product.contract import source_commit
    from harness.product.receipts import ZLH_ROOT
    zlh_commit = source_commit(ZLH_ROOT) or ""
    dtype = os.environ.get("DTYPE", "bfloat16")
    short = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[dtype]
    doc = {
        "schema_version": 1, "campaign_id": f"h200-{short}-tf32x3-v1",
        "claim": f"H200, FlagGems {dtype} core shapes: generated-code response to "
                 "TRITON_F32_DEFAULT=tf32x3 against ieee, with same-config latency",
        "sources": {"compiler": compiler(work),
                    "library": {"commit": (flaggems / "COMMIT").read_text().split()[0],
                                "path": str(flaggems), "package": "flag_gems",
                                "import_from": str(flaggems / "src")},
                    "zlh": {"commit": zlh_commit}},
        "device": {"backend": "cuda", "physical_device": os.environ.get("DEVICE", "0"),
                   "name_contains": "H200", "idle_util_pct_max": 10},
        "protocol": {
            "adapter": "flaggems",
            "cells": [{"name": "ieee", "role": "baseline", "env": {"TRITON_F32_DEFAULT": "ieee"}},
                      {"name": "tf32x3", "role": "candidate",
                       "env": {"TRITON_F32_DEFAULT": "tf32x3"}}],
            "timed_cells": ["ieee", "tf32x3"], "canary_order": ["softmax", "add", "mm"],
            "fresh_process_per_op_cell": True, "one_physical_device": True,
            "serial_measurement": True, "timer": "graph", "dtypes": [dtype],
            "timeouts_s": {"light": 150, "medium": 200, "heavy": 300},
            "code_change": "fingerprint", "measured_launch_floor": 0,
            "shapes": shapes(work, flaggems),
            "bench": {"level": "core", "warmup_ms": 10, "min_samples": 5, "min_time_ms": 5,
                      "max_time_ms": 50},
            "canary_gate": {"classes": {"softmax": ["B"], "add": ["B"],
                                        "mm": ["G", "C", "R"]}, "max_k": 0}},
        "workloads": [{"id": i, "op": op, "op_file": op, "family": fam, "cost": cost,
                       "canary": canary, "correctness": None}
                      for i, op, fam, cost, canary in WORKLOADS]}
    path = work / "manifest.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
