"""A planted change: a known amount of device work added to every call of the function under
test, so that a comparison can be checked against a change whose size and sign are known.

`zlh bench --plant-pct X --replay RUN_A` adds, before each call, a device spin
(`Backend.spin(cycles)`: a kernel that waits a number of device clock cycles; graph capture
takes it like any kernel) sized as X % of the case's function-under-test latency in RUN_A:

    cycles = round(X / 100 * latency_A_ms * cycles_per_ms)

`cycles_per_ms` is measured on the device once per run (`Backend.spin_cycles_per_ms`, after
the clocks have ramped up). `--plant-pct 0` adds the same spin kernel with zero cycles: the
baseline side of a self-test carries the same extra launch, so the launch's own cost cancels
and the difference between the sides is the spin alone. Each planted case carries a
`CALIBRATION_PLANT` marker with its size.
"""
from __future__ import annotations

from pathlib import Path

from ..common import markers, spelling
from ..common.errors import UsageError
from ..store.reader import load_run
from ..store.results import SUCCESS, row_key


def check_plant(pct: float | None, replay: str | None, backend) -> None:
    """Before any device work: a plant needs a sizing run and a backend that can spin."""
    if pct is None:
        return
    if pct > 0 and not replay:
        side_a = " RUN_A" if spelling.flags() else " (side A's run)"
        raise UsageError(f"{spelling.option('plant_pct')} needs {spelling.option('replay')}"
                         f"{side_a}: the plant is sized from the latencies side A measured")
    if not backend.has_spin():
        raise UsageError(f"{spelling.option('plant_pct')}: backend {backend.name} has no "
                         f"device spin")


def sizing_latencies(run_dir) -> dict[tuple, float]:
    """(variant, dtype, shape_detail, occurrence) -> function-under-test ms of a stored run."""
    return {row_key(r): r.gems_ms for r in load_run(run_dir).rows
            if r.status == SUCCESS and r.gems_ms and r.gems_ms > 0}


class Plant:
    """Wraps the function under test of each case with a sized device spin."""

    def __init__(self, pct: float, backend, device_index: int,
                 sizing: dict[tuple, float] | None = None, sized_from: str | None = None):
        self.pct, self.backend, self.device_index = float(pct), backend, device_index
        self.sizing = sizing or {}
        self.sized_from = sized_from
        self.cycles_per_ms: float | None = None
        self.planted: list[dict] = []

    @classmethod
    def for_run(cls, pct: float | None, backend, device_index: int,
                replay_dir: Path | None) -> "Plant | None":
        if pct is None:
            return None
        sizing = sizing_latencies(replay_dir) if pct > 0 and replay_dir is not None else {}
        return cls(pct, backend, device_index, sizing, str(replay_dir) if replay_dir else None)

    def cycles_for(self, key: tuple) -> tuple[int, float | None]:
        """(cycles, side A's latency in ms) for one case; 0 cycles when nothing is planted."""
        base_ms = self.sizing.get(key)
        if self.pct <= 0 or base_ms is None:
            return 0, base_ms
        if self.cycles_per_ms is None:
            self.cycles_per_ms = float(self.backend.spin_cycles_per_ms(self.device_index))
        return int(round(self.pct / 100.0 * base_ms * self.cycles_per_ms)), base_ms

    def wrap(self, fn, key: tuple, where: dict):
        """(the planted callable, its marker line)."""
        cycles, base_ms = self.cycles_for(key)
        spin = self.backend.spin
        planted_ms = cycles / self.cycles_per_ms if cycles and self.cycles_per_ms else 0.0
        self.planted.append({"key": list(key), "cycles": cycles, "planted_ms": planted_ms,
                             "sized_from_ms": base_ms})
        line = markers.marker(
            markers.PLANTED, **where, pct=f"{self.pct:g}", cycles=cycles,
            planted_ms=f"{planted_ms:.6g}",
            sized_from_ms=f"{base_ms:.6g}" if base_ms is not None else "-",
            detail=None if base_ms is not None or self.pct <= 0
            else "side A has no latency for this case: nothing planted")

        def planted():
            spin(cycles)
            return fn()
        return planted, line

    def run_fields(self) -> dict:
        """For run.json."""
        return {"pct": self.pct, "sized_from": self.sized_from,
                "cycles_per_ms": self.cycles_per_ms, "cases": len(self.planted),
                "planted_cases": sum(1 for p in self.planted if p["cycles"])}
