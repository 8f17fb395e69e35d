"""Device check of the embedding API (NVIDIA GPU), about 2 minutes.

    python3 tests/device/check_library_api.py        # from the repository root

1. `harness.measure` vs `triton.testing.do_bench_cudagraph` (median) on three kernels written
   here (vector add, row softmax, tl.dot matmul), three shapes each: per-shape ratio, the
   timer used, any fallback.
2. `tests/device/user_softmax.py`: a hand-written Triton softmax against torch through
   `harness.bench_cases`, then `zlh ab --cases user_softmax:softmax_cases --switch
   USER_SOFTMAX_WARPS=4,8 --rounds 3` (num_warps 4 vs 8, configs pinned, IR compared).
3. `harness.compare_callables` on the same two num_warps variants, in this process.
4. `harness.measure` on a callable that synchronises with the host (`.item()`): it must come
   back event-timed with its BENCHMARK_DIRECT_NO_CUDAGRAPH reason in `fallback`.

Writes $OUT/library_api/ (summary.txt, measure_vs_dbcg.tsv, the A/B report and status, the
bench_cases run's run.json and results) and prints the summary. Exit 1 if a check failed.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton.testing  # noqa: E402

import harness  # noqa: E402
from harness.store.reader import load_run  # noqa: E402

OUT = Path(os.environ.get("OUT", "device-out")) / "library_api"
WORK = Path(os.environ.get("WORK") or tempfile.mkdtemp(prefix="zlh-library-api-"))
lines: list[str] = []
failures: list[str] = []


def say(text: str = "") -> None:
    print(text, flush=True)
    lines.append(text)


def check(name: str, ok: bool, detail: str = "") -> None:
    say(f"{'PASS' if ok else 'FAIL'} {name}{' ' + detail if detail else ''}")
    if not ok:
        failures.append(name)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offsets, (num / tl.sum(num, axis=0)).to(tl.float16),
             mask=mask)


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def add_case(n):
    x, y = (torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(2))
    out = torch.empty_like(x)
    return lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)


def softmax_case(shape):
    x = torch.randn(shape, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    block = triton.next_power_of_2(shape[1])
    return lambda: softmax_kernel[(shape[0],)](x, out, shape[1], BLOCK=block,
                                               num_warps=4 if block <= 2048 else 8)


def mm_case(size):
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty_like(a)
    grid = (size // 128, size // 128)
    return lambda: mm_kernel[grid](a, b, c, size, size, size, BM=128, BN=128, BK=32,
                                   num_warps=8, num_stages=3)


KERNELS = [("add", n, add_case) for n in (1 << 16, 1 << 20, 1 << 24)] + \
    [("softmax", s, softmax_case) for s in ((4096, 1024), (16384, 256), (1024, 8192))] + \
    [("mm", s, mm_case) for s in (1024, 2048, 4096)]


def part1_measure() -> None:
    say("== 1. harness.measure vs triton.testing.do_bench_cudagraph (median, ms)")
    rows = ["kernel\tshape\tzlh_ms\tzlh_timer\tzlh_rel_err\tzlh_n\tdbcg_ms\tratio"]
    ratios = []
    for name, shape, make in KERNELS:
        fn = make(shape)
        fn()
        torch.cuda.synchronize()
        m = harness.measure(fn, name=name)
        ref = triton.testing.do_bench_cudagraph(fn, rep=200, return_mode="median")
        ratio = m.median / ref
        ratios.append((ref, ratio))
        rows.append(f"{name}\t{shape}\t{m.median:.6f}\t{m.timer}\t{m.rel_error:.2e}\t{m.n}\t"
                    f"{ref:.6f}\t{ratio:.4f}")
        say(f"  {name:8} {str(shape):14} zlh {m.median:10.6f} ({m.timer}, ±{m.rel_error:.1e}, "
            f"n={m.n})  dbcg {ref:10.6f}  ratio {ratio:.4f}"
            f"{'  fallback: ' + m.fallback if m.fallback else ''}")
        check(f"measure {name} {shape} graph-timed", m.timer == "graph" and not m.fallback)
    (OUT / "measure_vs_dbcg.tsv").write_text("\n".join(rows) + "\n")
    devs = sorted(abs(r - 1) * 100 for _, r in ratios)
    big = sorted(abs(r - 1) * 100 for ms, r in ratios if ms >= 0.010)
    say(f"  |zlh/dbcg - 1|: median {statistics.median(devs):.2f}% max {devs[-1]:.2f}% "
        f"(n={len(devs)}); kernels >= 10 us: median {statistics.median(big):.2f}% "
        f"max {big[-1]:.2f}% (n={len(big)})")
    check("measure within 5% of do_bench_cudagraph on kernels >= 10 us", big[-1] <= 5.0,
          f"max {big[-1]:.2f}%")


def part4_fallback() -> None:
    say("== 4. harness.measure on a host-syncing callable (graph capture cannot work)")
    x = torch.randn(1 << 20, device="cuda")
    synced = harness.measure(lambda: x.sum().item(), name="host_sync", max_time_ms=200)
    say(f"  timer {synced.timer}, median {synced.median:.5f} ms, fallback: {synced.fallback}")
    check("a host-syncing callable falls back to event timing and says why",
          synced.timer == "event" and bool(synced.fallback)
          and synced.fallback.startswith("BENCHMARK_DIRECT_NO_CUDAGRAPH op=host_sync"))


def part2_user_script() -> None:
    say("== 2. tests/device/user_softmax.py: bench_cases, then zlh ab num_warps 4 vs 8")
    work = WORK / "user"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    started = time.time()
    proc = subprocess.run([sys.executable, "user_softmax.py", str(work)], cwd=ROOT / "tests" /
                          "device", env=env, capture_output=True, text=True, timeout=170)
    (OUT / "user_softmax.log").write_text(proc.stdout + proc.stderr)
    say(f"  rc={proc.returncode} wall {time.time() - started:.0f} s")
    check("user script ran (bench_cases + zlh ab)", proc.returncode == 0,
          proc.stderr.strip().splitlines()[-1] if proc.returncode and proc.stderr.strip() else "")
    runs = sorted((work / "runs").glob("user_softmax_*"))
    if runs:
        for name in ("run.json", "results.jsonl"):
            shutil.copy(runs[-1] / name, OUT / f"bench_cases_{name}")
        for row in load_run(runs[-1]).rows:
            say(f"  bench_cases {row.shape_detail:10} torch {row.torch_ms:.5f} ms  kernel "
                f"{row.gems_ms:.5f} ms  speedup {row.speedup:.3f}  timer {row.timer}  "
                f"{row.status}")
    report_path = work / "ab" / "report.json"
    if report_path.exists():
        for name in ("report.json", "status.tsv"):
            shutil.copy(work / "ab" / name, OUT / f"ab_{name}")
        (op,) = json.loads(report_path.read_text())["ops"]
        say(f"  zlh ab verdict {op.get('verdict')}, {op['summary'].get('rounds')} rounds")
        for row in op["rows"]:
            say(f"  ab {row['shape_detail']:10} w4 {row['a_ms']:.5f} w8 {row['b_ms']:.5f} "
                f"delta {row['delta_pct']:+.2f}% [{row['ci_low_pct']:+.2f}, "
                f"{row['ci_high_pct']:+.2f}] direction {row['direction']}")
        check("zlh ab saw different IR for num_warps 4 vs 8", op.get("verdict") == "IR_CHANGED")
    else:
        check("zlh ab wrote a report", False)


def part3_compare_callables() -> None:
    say("== 3. harness.compare_callables, num_warps 4 vs 8, one process")
    sys.path.insert(0, str(ROOT / "tests" / "device"))
    from user_softmax import softmax
    x = torch.randn(8192, 2048, device="cuda", dtype=torch.float16)
    result = harness.compare_callables(lambda: softmax(x, 4), lambda: softmax(x, 8), rounds=5)
    say(f"  {result}")
    check("compare_callables says within-process", result.scope == "within-process"
          and "within one process" in str(result))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    say(f"torch {torch.__version__} triton {triton.__version__} {torch.cuda.get_device_name(0)}")
    for part in (part1_measure, part2_user_script, part3_compare_callables, part4_fallback):
        try:
            part()
        except Exception as exc:  # noqa: BLE001 - later parts still run
            check(part.__name__, False, f"{type(exc).__name__}: {exc}")
    say(f"== {len(failures)} failed: {', '.join(failures) or '-'}")
    (OUT / "summary.txt").write_text("\n".join(lines) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
