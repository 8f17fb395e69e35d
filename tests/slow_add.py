"""An A/B of the builtin `add` on the cpu backend whose side B is slowed (ZLH_BUILTIN_SLOW),
for the end-to-end tests of the round runners."""
from harness.ab.sides import ABPlan, Side
from harness.run.options import BenchOptions
from conftest import FAST_API

# more samples than FAST_API's three: on a loaded two-CPU host a stretch of one side's samples
# can be slowed by other processes (a side of nine, about 45 ms, once read 10 % faster than
# its twin doing four times the loads), and the median of 25 (about 125 ms of the slowed add
# here; 500 ms lets a slow host reach them too) keeps B, doing more work, the slower
SAMPLES = dict(FAST_API, min_samples=25, max_time_ms=500.0)


def slow_add_plan(tmp_path, runner, rounds: int, shapes: str = "add: [[4096]]\n") -> ABPlan:
    """The plan, its shapes file written under tmp_path, its root tmp_path/ab."""
    path = tmp_path / "shapes.yaml"
    path.write_text(shapes)
    return ABPlan(ops=["add"], a=Side("A", {}, description="plain"),
                  b=Side("B", {"ZLH_BUILTIN_SLOW": "1"}, description="slow"),
                  options=BenchOptions.from_flat(adapter="builtin", backend="cpu",
                                                 shapes=str(path), **SAMPLES),
                  root=tmp_path / "ab", rounds=rounds, runner=runner)
