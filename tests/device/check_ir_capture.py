"""IR capture on a CUDA machine, with real compiles and real launches.

    python3 tests/device/check_ir_capture.py [WORK_DIR]

An @triton.autotune kernel swept per shape, a builder kernel launched outside any case, a
second capture (a second op in the same process) launching kernels it never saw compile.
Checks: launches reach the right variant through the load/launch hooks; configs that lost
a sweep are indexed as sweep losers and not dumped; measured launch counts are exact; a
variant compiled before the capture began is still named and dumped; the tree has a
fingerprint. Prints one PASS/FAIL line per check; exits 1 if any failed.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
WORK = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="zlh-ir-"))
os.environ["TRITON_CACHE_DIR"] = str(WORK / "triton_cache")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from harness.compile.ir.fingerprint import fingerprint, read_index  # noqa: E402
from harness.compile.ir.capture import IRCapture  # noqa: E402

failures = []


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name}{' ' + str(detail) if detail else ''}")
    if not ok:
        failures.append(name)


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.jit
def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, out, n)
    return out


def build(n, dtype):
    x = torch.empty(n, device="cuda", dtype=dtype)
    fill_kernel[(triton.cdiv(n, 256),)](x, n, BLOCK=256)
    return x


print("triton", triton.__version__, "torch", torch.__version__, torch.cuda.get_device_name(0))
cap = IRCapture(WORK / "run1" / "ttgir")
check("install", cap.install())
calls = {1 << 16: 6, 1 << 20: 4}
for n, times in calls.items():
    x = build(n, torch.float16)                       # builder: outside the case
    cap.begin_case(f"({n},)", "float16")
    build(n, torch.float32)                           # in the case, not timed: set-up
    timed_scale = cap.timed(lambda: scale(x))
    for _ in range(times):
        out = timed_scale()
    cap.end_case()
    torch.cuda.synchronize()
    check(f"result n={n}", torch.equal(out, x * 2))
summary = cap.dump()
cap.uninstall()
print(summary)
rows = read_index(cap.out_dir)
for r in rows:
    print("  ", r["shape"], r["kernel"], r["role"], r["file"], r["status"], r["launches"],
          r["sweep_launches"], r["other_launches"], r["constexprs"], f"w{r['num_warps']}")
dumped = [r for r in rows if r["role"] == "measured" and r["status"] == "dumped"]
check("one winner dumped per shape",
      sorted(r["shape"] for r in dumped if r["kernel"] == "scale_kernel") == ["1048576", "65536"],
      [r["file"] for r in dumped])
check("measured launches exact",
      {r["shape"]: int(r["launches"]) for r in dumped if r["kernel"] == "scale_kernel"}
      == {"65536": 6, "1048576": 4})
losers = [r for r in rows if r["role"] == "sweep loser"]
check("sweep losers indexed, not dumped",
      len(losers) >= 2 and all(r["file"] == "-" and int(r["sweep_launches"]) > 0
                               for r in losers), len(losers))
check("the winner's benchmark launches counted as sweep, apart from measured ones",
      all(int(r["sweep_launches"]) > 0 for r in dumped if r["kernel"] == "scale_kernel"))
builder = [r for r in rows if r["kernel"] == "fill_kernel"]
check("builder outside the case: not measured; inside, not timed: set-up",
      {r["role"] for r in builder} == {"not measured", "setup"}
      and all(r["file"].startswith("_setup/") for r in builder if r["role"] == "setup"),
      [(r["role"], r["file"]) for r in builder])
check("set-up kernels stay out of the measured fingerprint",
      not any(r["kernel"] == "fill_kernel" for r in dumped))
check("no unattributed launches", summary["unattributed_launches"] == 0, summary)
check("fingerprint", fingerprint(WORK / "run1") is not None, fingerprint(WORK / "run1"))

# A second op in the same process: nothing compiles again (Triton's in-memory cache), the
# kernels are launched straight away. The capture must still name and dump them.
cap2 = IRCapture(WORK / "run2" / "ttgir")
cap2.install()
x = build(1 << 16, torch.float16)
cap2.begin_case("(65536,)", "float16")
for _ in range(3):
    cap2.timed(lambda: scale(x))()
cap2.end_case()
summary2 = cap2.dump()
cap2.uninstall()
rows2 = read_index(cap2.out_dir)
print(summary2, [(r["file"], r["launches"]) for r in rows2])
check("second capture sees reused kernels",
      [(r["file"], r["launches"]) for r in rows2 if r["role"] == "measured"] ==
      [(r["file"], "3") for r in dumped if r["shape"] == "65536"])
check("same IR as the first run for that shape",
      (cap2.out_dir / "65536/scale_kernel").exists() and
      sorted(p.name for p in (cap2.out_dir / "65536/scale_kernel").iterdir()) ==
      sorted(p.name for p in (cap.out_dir / "65536/scale_kernel").iterdir()))
print("FAILED:" if failures else "ALL PASS", " ".join(failures))
sys.exit(1 if failures else 0)
