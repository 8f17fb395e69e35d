"""When to stop taking samples, and how they are paced; the budget of a measurement's other
phases (`Budget`: warm-up, the estimate, a graph's size, samples between syncs).

Stop once both minimums are met and the median is known well enough, or when a cap is hit.
Every budget is named in milliseconds or counts; the rule holds no state.

`pace_us` (default 0: off): an idle gap, in microseconds, after every sample — the device
timers then synchronise after each sample (one graph replay or one batch of calls) and the
host sleeps, so that a long kernel under a power cap is not timed back to back. The gap
counts toward the time budgets (fewer samples fit in --max-time-ms). Recorded in the caliber
(`stopping.pace_us`) only when it is on, so runs without pacing keep the caliber they had.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..common.errors import InvalidValue
from ..common.fields import check_fields
from .sample_stats import relative_median_error


@dataclass(frozen=True)
class StoppingRule:
    min_samples: int = 20
    min_time_ms: float = 50.0
    max_time_ms: float = 1000.0
    max_samples: int = 5000
    target_rel_err: float = 0.001    # relative standard error of the median
    pace_us: float = 0.0             # idle gap after every sample (0: none)

    def __post_init__(self):
        check_fields(self, {"min_samples": 1, "max_samples": 1},
                     ("min_time_ms", "max_time_ms", "target_rel_err", "pace_us"))
        if self.max_samples < self.min_samples:
            raise InvalidValue("need 1 <= min_samples <= max_samples")
        if self.max_time_ms < self.min_time_ms:
            raise InvalidValue("need 0 <= min_time_ms <= max_time_ms")

    def should_stop(self, samples, elapsed_ms: float) -> bool:
        n = len(samples)
        if n >= self.max_samples or elapsed_ms >= self.max_time_ms:
            return n > 0
        if n < self.min_samples or elapsed_ms < self.min_time_ms:
            return False
        return relative_median_error(samples) <= self.target_rel_err

    def undersampled(self, n: int) -> bool:
        """Whether the time cap left the median on too few samples: fewer than half of
        `min_samples` (and never fewer than 2 unflagged, unless the minimum itself is 1). A
        cap that stops between half the minimum and the minimum (a slow interpreted kernel
        on the default budgets: 18 samples of a 20-sample minimum) is not flagged; the row's
        ±% says how well that median is known."""
        return n < min(self.min_samples, max(2, -(-self.min_samples // 2)))

    def to_dict(self) -> dict:
        out = asdict(self)
        if not self.pace_us:                 # off: the caliber of an unpaced run as before
            del out["pace_us"]
        return out


@dataclass(frozen=True)
class Budget:
    warmup_ms: float = 100.0         # warm-up (eager calls; graph replays too) per measurement
    max_warmup_calls: int = 2000
    estimate_calls: int = 5          # calls timed to estimate the per-call time
    graph_replay_ms: float = 1.0     # target duration of one captured replay
    max_unroll: int = 2000           # calls captured in one graph, at most
    max_capture_ms: float = 250.0    # host time one capture may take, at the eager rate
    batch_ms: float = 0.05           # event/host: below this per call, batch calls per sample
    samples_per_sync: int = 10       # samples collected between host syncs

    def __post_init__(self):
        check_fields(self, {"max_warmup_calls": 0, "estimate_calls": 1, "max_unroll": 1,
                            "samples_per_sync": 1},
                     ("warmup_ms", "graph_replay_ms", "max_capture_ms", "batch_ms"))

    def to_dict(self) -> dict:
        return asdict(self)
