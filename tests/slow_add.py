"""An A/B of the builtin `add` on the cpu backend whose side B is slowed (ZLH_BUILTIN_SLOW),
for the end-to-end tests of the round runners."""
from harness.ab.sides import ABPlan, Side
from harness.run.options import BenchOptions
from conftest import FAST_API


def slow_add_plan(tmp_path, runner, rounds: int, shapes: str = "add: [[4096]]\n") -> ABPlan:
    """The plan, its shapes file written under tmp_path, its root tmp_path/ab."""
    path = tmp_path / "shapes.yaml"
    path.write_text(shapes)
    return ABPlan(ops=["add"], a=Side("A", {}, description="plain"),
                  b=Side("B", {"ZLH_BUILTIN_SLOW": "1"}, description="slow"),
                  options=BenchOptions.from_flat(adapter="builtin", backend="cpu",
                                                 shapes=str(path), **FAST_API),
                  root=tmp_path / "ab", rounds=rounds, runner=runner)
