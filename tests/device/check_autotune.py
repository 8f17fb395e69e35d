"""Autotune record / replay on a CUDA machine, with the real compiler.

    python3 tests/device/check_autotune.py [WORK_DIR]

Uses the builtin adapter's mm (a real @triton.autotune kernel). Checks: record reads back
the config used; replay forces a different recorded config over a warm cache; a recorded
config that fails to compile, and one that needs more shared memory than the device has,
each fall back to a live tune with a compile_failed marker and a correct result.
Prints one PASS/FAIL line per check; exits 1 if any failed.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402

from adapters.builtin import kernels  # noqa: E402
from harness.compile import autotune as at  # noqa: E402

META = {"backend": "cuda", "provider": "builtin", "op": "mm"}
F16 = "torch.float16"
failures = []


def check(name: str, ok: bool, detail: str = "") -> None:
    print(f"{'PASS' if ok else 'FAIL'} {name}{' ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def mm_case(hook, m, n, k):
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    hook.begin_case()
    c = kernels.mm(a, b)
    torch.cuda.synchronize()
    ok = torch.allclose(c.float(), (a.float() @ b.float()), atol=1e-1, rtol=1e-2)
    return ok, hook.take_markers()


def set_record(run_dir: Path, key: tuple, entry: dict) -> None:
    path = run_dir / "autotune" / "records.json"
    data = json.loads(path.read_text())
    data["kernels"][at.kernel_name(kernels.mm_kernel)][at.key_str(key)] = entry
    path.write_text(json.dumps(data))


def main() -> int:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="zlh-autotune-"))
    print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))
    shapes = [(512, 512, 512), (1024, 768, 256), (256, 1024, 512)]
    keys = [(m, n, k, F16, F16, F16) for m, n, k in shapes]

    rec = at.AutotuneRecorder(work / "A", META).install()
    for shape in shapes:
        mm_case(rec, *shape)
    rec.uninstall()
    recorded = json.loads((work / "A" / "autotune" / "records.json").read_text())["kernels"]
    table = recorded.get(at.kernel_name(kernels.mm_kernel), {})
    used = {at.key_str(k): at.config_to_dict(kernels.mm_kernel.cache[k]) for k in keys}
    check("record reads back the configs used", table == used, json.dumps(table)[:300])

    # Force, for the first key, a config other than the one the (warm) cache holds.
    other = next(c for c in kernels.MM_CONFIGS if at.config_to_dict(c) != used[at.key_str(keys[0])])
    set_record(work / "A", keys[0], at.config_to_dict(other))
    # The second key: a config that cannot compile (arange over 48 elements).
    set_record(work / "A", keys[1], {"kwargs": {"BLOCK_M": 48, "BLOCK_N": 64, "BLOCK_K": 32},
                                     "num_warps": 4, "num_stages": 3, "num_ctas": 1,
                                     "pre_hook": False})
    # The third key: a config that compiles but needs far more shared memory than there is.
    set_record(work / "A", keys[2], {"kwargs": {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 256},
                                     "num_warps": 8, "num_stages": 6, "num_ctas": 1,
                                     "pre_hook": False})

    rep = at.AutotuneReplayer(work / "A", "cuda").install()
    ok, markers = mm_case(rep, *shapes[0])
    check("replay forces a recorded config over a warm cache",
          ok and not markers and kernels.mm_kernel.best_config.kwargs == other.kwargs,
          str(kernels.mm_kernel.best_config))
    for name, shape in (("compile error", shapes[1]), ("out of resources", shapes[2])):
        ok, markers = mm_case(rep, *shape)
        check(f"{name} falls back to a live tune", ok and len(markers) == 1
              and "reason=compile_failed " in markers[0], " | ".join(markers)[:400])
    rep.uninstall()
    print("fallbacks", rep.fallback_counts)
    print("failed:", failures or "none")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
