"""Skip guards in the benchmark corpus that are known to be wrong (or verified right) on a
device runtime: each backend owns its table.

A guard is a skip condition written for one vendor's runtime (`not torch.cuda.is_available()`)
in front of code that dispatches through the library's own device layer, so on another vendor
it turns a runnable op into "not measured". An entry pins one guard exactly — file (relative to
the checkout root), function and the skip reason, character for character — and says whether
it is stale (ignore it: run the function) or must stay (listed so that nobody removes it
again). Nothing else matches: another function in the same file, another reason, another
backend.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SkipGuard:
    file: str          # e.g. "benchmark/test_fft.py"
    function: str      # e.g. "test_perf_fft"
    reason: str        # the skip reason, exactly
    stale: bool        # True: ignore the guard on this backend; False: it must stay
    note: str = ""     # how it was verified

    def matches(self, file: str, function: str, reason: str) -> bool:
        return (self.file, self.function, self.reason) == (file, function, reason)


def stale_guard(table, file: str, function: str, reason: str) -> SkipGuard | None:
    """The stale entry of `table` for exactly this guard, else None."""
    return next((g for g in table if g.stale and g.matches(file, function, reason)), None)


# Verified on a Moore Threads S5000 (the previous tooling's records): unskipped, the first two
# pass; the last two were probed and must stay.
MUSA_SKIP_GUARDS = (
    SkipGuard("tests/test_top_k_per_row_decode.py", "test_accuracy_top_k",
              "CUDA device required", stale=True,
              note="module-level guard; the op dispatches through the library's device"),
    SkipGuard("benchmark/test_fft.py", "test_perf_fft", "CUDA is not available", stale=True,
              note="fft runs through the library's device dispatch"),
    SkipGuard("tests/test_grid_sample.py", "test_nearest_zeros_4d_small", "CUDA is required.",
              stale=False, note="its own helper hard-codes device='cuda'"),
    SkipGuard("tests/test_cutlass_scaled_mm.py", "test_cutlass_scaled_mm",
              "Feature requires vLLM and NVIDIA Hopper architecture", stale=False,
              note="needs vLLM as well as a CUDA device"),
)
