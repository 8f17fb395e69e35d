"""Can a round's fresh process be cheap? A device experiment: a parent imports torch and
FlagGems once, then forks one child per round; each child starts the device itself (a new
context, its kernels loaded anew) and times one FlagGems op, against the same done by a new
interpreter (what a fresh round pays today).

    python3 tests/device/fork_start.py        # on a GPU with FlagGems (source .fg/env.sh)

Prints, for the parent: the seconds its imports took and whether they started the device
(torch's lazy init, and the CUDA driver as Triton sees it); per child (CHILDREN, default 4): the
seconds from fork to its first op's result, the op's median latency, its exit code; then the
same for one new interpreter. A child that fails says so (a device started before the fork
cannot be used by a forked child). Output on stdout and in $OUT/fork_start.json.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD_CODE = r"""
import time, json, sys
t0 = time.perf_counter()
import torch
import flag_gems
t1 = time.perf_counter()
x = torch.randn(64, 512, 512, device="cuda", dtype=torch.bfloat16)
with flag_gems.use_gems():
    torch.softmax(x, dim=-1)
torch.cuda.synchronize()
t2 = time.perf_counter()
print("RESULT " + json.dumps({"imports_s": t1 - t0, "first_op_s": t2 - t1}))
"""


def timed_op(torch, flag_gems) -> float:
    """Median µs of 50 FlagGems softmax calls on 64×512×512 bf16."""
    x = torch.randn(64, 512, 512, device="cuda", dtype=torch.bfloat16)
    with flag_gems.use_gems():
        torch.softmax(x, dim=-1)
        torch.cuda.synchronize()
        times = []
        for _ in range(50):
            b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record()
            torch.softmax(x, dim=-1)
            e.record()
            e.synchronize()
            times.append(b.elapsed_time(e) * 1e3)
    return sorted(times)[len(times) // 2]


def driver_started() -> bool | str:
    """Whether the CUDA driver has a current context in this process (cuCtxGetCurrent)."""
    try:
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        ctx = ctypes.c_void_p()
        rc = lib.cuCtxGetCurrent(ctypes.byref(ctx))
        return f"rc {rc}, context {'yes' if ctx.value else 'none'}"
    except OSError as exc:
        return f"libcuda not loadable: {exc}"


def main() -> int:
    out = Path(os.environ.get("OUT") or "device-out")
    out.mkdir(parents=True, exist_ok=True)
    doc: dict = {}
    t0 = time.perf_counter()
    import torch
    t1 = time.perf_counter()
    import flag_gems
    t2 = time.perf_counter()
    doc["parent"] = {"import_torch_s": round(t1 - t0, 2), "import_flag_gems_s": round(t2 - t1, 2),
                     "torch_cuda_initialized": torch.cuda.is_initialized(),
                     "driver": driver_started()}
    print("parent:", doc["parent"], flush=True)
    doc["children"] = []
    for k in range(int(os.environ.get("CHILDREN", "4"))):
        read, write = os.pipe()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                us = timed_op(torch, flag_gems)
                msg = {"median_us": us, "first_result_s": time.perf_counter() - started}
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                msg = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            os.write(write, json.dumps(msg).encode())
            os._exit(0)
        os.close(write)
        data = b""
        while chunk := os.read(read, 65536):
            data += chunk
        _, status = os.waitpid(pid, 0)
        got = json.loads(data or b"{}")
        got.update(exit_status=status, wall_s=round(time.perf_counter() - started, 2))
        doc["children"].append(got)
        print(f"child {k}:", got, flush=True)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD_CODE], capture_output=True, text=True)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), "RESULT {}")
    doc["interpreter"] = dict(json.loads(line[7:]), rc=proc.returncode,
                              wall_s=round(time.perf_counter() - started, 2))
    print("new interpreter:", doc["interpreter"], flush=True)
    (out / "fork_start.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
