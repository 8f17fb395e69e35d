"""A planted change: a known amount of device work added to the function under test's timed
calls, so that a comparison can be checked against a change whose size and sign are known.

`zlh bench --plant-pct X --replay RUN_A` adds a device spin (`Backend.spin(cycles)`: a kernel
that waits a number of device clock cycles; graph capture takes it like any kernel) sized as
X % of the case's function-under-test latency in RUN_A, per call:

    cycles = round(X / 100 * latency_A_ms * cycles_per_ms)

The spin is queued once per sample, at the start of its timed window, for all of the sample's
calls at once (`cycles × calls`: the timers' `lead`), not as a sliver ahead of every call.
A spin of a few hundred cycles ahead of a memory-bound kernel is partly or wholly worked off
by the memory system finishing the call before it, and how much was found to differ from one
process to the next (on an H100, a per-call spin that landed 0.26 % of a 27 µs softmax in the
run that recorded landed 0.04 % in the rounds after it); one spin of a sample's calls together
lasts microseconds, of which such an overlap takes a small part.

`cycles_per_ms` is measured on the device once per run (`Backend.spin_cycles_per_ms`, after
the clocks have ramped up). Where RUN_A measured what a spin lands on the case
(`--plant-landing-pct X` in the run that recorded, plant_landing.py), a plant of the same X %
takes the cycles that landed X % there instead (`sized_by=landing` in its marker).
`--plant-pct 0` adds the same spin kernel with zero cycles: the
baseline side of a self-test carries the same extra launch per sample, so the launch's own
cost cancels and the difference between the sides is the spin alone. Each planted case carries a
`CALIBRATION_PLANT` marker with its size.
"""
from __future__ import annotations

from pathlib import Path

from ..common import markers, spelling
from ..common.errors import UsageError, one_line
from ..store.reader import load_run
from ..store.results import SUCCESS, row_key
from .plant_landing import landing

LANDING_KEY = "plant_landing"        # a row's extra: what a spin landed (plant_landing.py)


def check_plant(pct: float | None, replay: str | None, backend,
                landing_pct: float | None = None) -> None:
    """Before any device work: a plant needs a sizing run and a backend that can spin; a
    landing probe needs a plant (0 on the side that records)."""
    if landing_pct is not None and pct is None:
        raise UsageError(f"{spelling.option('plant_landing_pct')} needs "
                         f"{spelling.option('plant_pct')} (0 on the side that records)")
    if pct is None:
        return
    if pct > 0 and not replay:
        side_a = " RUN_A" if spelling.flags() else " (side A's run)"
        raise UsageError(f"{spelling.option('plant_pct')} needs {spelling.option('replay')}"
                         f"{side_a}: the plant is sized from the latencies side A measured")
    if not backend.has_spin():
        raise UsageError(f"{spelling.option('plant_pct')}: backend {backend.name} has no "
                         f"device spin")


def sizing(run_dir) -> tuple[dict[tuple, float], dict[tuple, dict]]:
    """From a stored run, read once: case key (variant, dtype, shape_detail, occurrence) ->
    function-under-test ms, and case key -> what a spin landed on it there, where the run
    measured it (plant_landing.landing)."""
    latencies, landings = {}, {}
    for row in load_run(run_dir).rows:
        if row.status != SUCCESS or not row.gems_ms or row.gems_ms <= 0:
            continue
        latencies[row_key(row)] = row.gems_ms
        found = row.extra.get(LANDING_KEY)
        if isinstance(found, dict) and isinstance(found.get("cycles"), int):
            landings[row_key(row)] = found
    return latencies, landings


class Plant:
    """Gives the function under test of each case a sized device spin per sample (`lead`)."""

    def __init__(self, pct: float, backend, device_index: int,
                 sizing: dict[tuple, float] | None = None, sized_from: str | None = None,
                 landings: dict[tuple, dict] | None = None, landing_pct: float | None = None):
        self.pct, self.backend, self.device_index = float(pct), backend, device_index
        self.sizing = sizing or {}
        self.sized_from = sized_from
        self.landings = landings or {}   # RUN_A's landing per case (plant_landing.py)
        self.landing_pct = landing_pct   # this run, recording: measure what X % lands
        self.cycles_per_ms: float | None = None
        self.planted: list[dict] = []

    @classmethod
    def for_run(cls, pct: float | None, backend, device_index: int,
                replay_dir: Path | None, landing_pct: float | None = None) -> "Plant | None":
        """The run's plant (None: it plants nothing); `landing_pct` where the run records and
        is asked to measure what a spin of that size lands (--plant-landing-pct)."""
        if pct is None:
            return None
        latencies, landings = sizing(replay_dir) if pct > 0 and replay_dir is not None else (
            {}, {})
        return cls(pct, backend, device_index, latencies,
                   str(replay_dir) if replay_dir else None, landings,
                   landing_pct if replay_dir is None and landing_pct else None)

    def cycles_for(self, key: tuple) -> tuple[int, float | None]:
        """(cycles, side A's latency in ms) for one case; 0 cycles when nothing is planted.
        The cycles that landed this plant's size in side A's run where it measured them."""
        base_ms = self.sizing.get(key)
        if self.pct <= 0 or base_ms is None:
            return 0, base_ms
        landed, _ = self._landing(key)
        if landed is not None:
            return int(landed["cycles"]), base_ms
        return int(round(self.pct / 100.0 * base_ms * self._cycles_per_ms())), base_ms

    def _landing(self, key: tuple) -> tuple[dict | None, str]:
        """(side A's landing for this plant's size where its probe was precise enough to use,
        else None; what the probe was: `landed`, `loose` (too loose: the nominal cycles) or
        `-` (none of this size))."""
        landed = self.landings.get(key)
        if landed is None or landed.get("pct") != self.pct:
            return None, "-"
        if landed.get("trusted") is False:
            return None, "loose"
        return landed, "landed"

    def _cycles_per_ms(self) -> float:
        if self.cycles_per_ms is None:
            self.cycles_per_ms = float(self.backend.spin_cycles_per_ms(self.device_index))
        return self.cycles_per_ms

    def land(self, row, time_with_spin) -> None:
        """In a run that records with --plant-landing-pct X: what a spin of X % of the case's
        latency lands on it (plant_landing.landing), in the row's `extra`; a probe that fails
        leaves its reason there instead and costs the row nothing else."""
        if not self.landing_pct or not row.gems_ms or row.gems_ms <= 0:
            return
        try:
            found = landing(time_with_spin, self.landing_pct, row.gems_ms, self._cycles_per_ms())
        except Exception as exc:  # noqa: BLE001 - the probe never costs a measured row
            row.extra[LANDING_KEY + "_error"] = one_line(exc)
            return
        if found is not None:
            row.extra[LANDING_KEY] = found

    def lead(self, key: tuple, where: dict):
        """(the case's planted spin: a timer's `lead`, given a sample's calls; its marker
        line)."""
        cycles, base_ms = self.cycles_for(key)
        spin = self.backend.spin
        planted_ms = cycles / self._cycles_per_ms() if cycles else 0.0
        landed, probe = self._landing(key) if cycles else (None, "-")
        sized_by = "landing" if landed is not None else ("latency" if cycles else None)
        landed_pct = (landed.get("landed_pct") if landed is not None
                      and isinstance(landed.get("landed_pct"), (int, float)) else None)
        self.planted.append({"key": list(key), "cycles": cycles, "planted_ms": planted_ms,
                             "sized_from_ms": base_ms, "sized_by": sized_by, "probe": probe,
                             "landed_pct": landed_pct})
        line = markers.marker(
            markers.PLANTED, **where, pct=f"{self.pct:g}", cycles=cycles,
            planted_ms=f"{planted_ms:.6g}",
            sized_from_ms=f"{base_ms:.6g}" if base_ms is not None else "-",
            sized_by=sized_by or "-", probe=probe,
            nominal_cycles=landed.get("nominal_cycles", "-") if sized_by == "landing" else "-",
            landed_pct=f"{landed_pct:g}" if landed_pct is not None else "-",
            detail=None if base_ms is not None or self.pct <= 0
            else "side A has no latency for this case: nothing planted")

        def planted(calls: int) -> None:
            spin(cycles * calls)
        return planted, line

    def case_fields(self) -> dict:
        """What the last case given a lead was planted with, for its row's
        `extra.planted`."""
        return {k: v for k, v in self.planted[-1].items() if k != "key"}

    def run_fields(self) -> dict:
        """For run.json."""
        return {"pct": self.pct, "sized_from": self.sized_from,
                "cycles_per_ms": self.cycles_per_ms, "cases": len(self.planted),
                "planted_cases": sum(1 for p in self.planted if p["cycles"]),
                "sized_by_landing": sum(1 for p in self.planted if p["sized_by"] == "landing"),
                "landing_pct": self.landing_pct}
