"""A plant sized by what it lands: the record measures, per case, how much of a spin lengthens
the function under test, and the planted side spins the cycles that landed the asked size."""
import pytest

import harness
from harness.calibrate.run import CalibratePlan
from harness.common import markers
from harness.common.errors import UsageError
from harness.run.options import BenchOptions
from harness.run.plant import LANDING_KEY, Plant, check_plant
from harness.run.plant_landing import (CHECK_BAND, LEAST, MOST, NOISE_SHARE,
                                       corrected_cycles, landing)
from harness.store.results import row_key
from spin_backend import SpinBackend

KEY = ("", "bfloat16", "4096x4096", 0)


class Absorbing:
    """A kernel of `base_ms` behind a spin of which the first `absorbed` cycles are worked off
    by the memory system (they add nothing) and every further cycle lands: `cycles_per_ms`
    cycles a millisecond."""

    def __init__(self, base_ms=0.05, absorbed=110, cycles_per_ms=1e6):
        self.base_ms, self.absorbed, self.cycles_per_ms = base_ms, absorbed, cycles_per_ms
        self.asked: list[int] = []

    def __call__(self, cycles: int) -> float:
        self.asked.append(cycles)
        return self.base_ms + max(0, cycles - self.absorbed) / self.cycles_per_ms


def test_the_corrected_spin_lands_the_asked_size_where_part_of_a_spin_is_absorbed():
    kernel = Absorbing()
    found = landing(kernel, 0.3, 0.05, 1e6)
    # 0.3 % of 50 us at 1 GHz is 150 cycles; 110 are absorbed, so the nominal spin lands
    # 0.08 %, and 110 more cycles land the rest
    assert found["nominal_cycles"] == 150
    assert found["nominal_landed_pct"] == pytest.approx(0.08)
    assert found["cycles"] == 260 and found["landed_pct"] == pytest.approx(0.3)
    # the nominal spin in turns with none (0 N 0 N 0), then the corrected one (C 0 C)
    assert kernel.asked == [0, 150, 0, 150, 0, 260, 0, 260]


class Drifting(Absorbing):
    """As Absorbing, the kernel's own time moving by `drift_pct` from one timing to the next
    (a clock held at the power limit)."""

    def __init__(self, drift_pct, **kwargs):
        super().__init__(**kwargs)
        self.drift_pct = drift_pct

    def __call__(self, cycles: int) -> float:
        sign = 1 if len(self.asked) % 4 < 2 else -1
        return super().__call__(cycles) * (1 + sign * self.drift_pct / 100)


def test_a_probe_too_loose_for_the_asked_size_keeps_the_nominal_spin():
    loose = landing(Drifting(2.0), 0.3, 0.05, 1e6)          # timings moving by 2 %
    assert loose["trusted"] is False and loose["cycles"] == loose["nominal_cycles"] == 150
    assert loose["untrusted_by"] == "noise"
    assert loose["noise_pct"] > NOISE_SHARE * 0.3
    tight = landing(Drifting(0.01), 0.3, 0.05, 1e6)         # by 0.01 %: sized as it lands
    assert tight["trusted"] is True and tight["cycles"] > 150
    assert tight["landed_pct"] == pytest.approx(0.3, abs=0.05)


class Scripted:
    """Timings read from a script in the probe's order (0 N 0 N 0, then C 0 C)."""

    def __init__(self, *ms):
        self.ms, self.asked = list(ms), []

    def __call__(self, cycles: int) -> float:
        self.asked.append(cycles)
        return self.ms[len(self.asked) - 1]


def test_a_correction_whose_check_lands_far_from_the_asked_size_keeps_the_nominal_spin():
    # three spin-free timings that agree (noise 0) while the clock drifts: the nominal spin
    # reads 1 % faster, the correction adds 1.3 %, and its own check reads 1.3 % for 0.3 %
    drifting = Scripted(1.0, 0.99, 1.0, 0.99, 1.0, 1.013, 1.0, 1.013)
    found = landing(drifting, 0.3, 1.0, 1e6)
    assert found["noise_pct"] == 0 and found["check_landed_pct"] == pytest.approx(1.3)
    assert found["check_cycles"] > found["nominal_cycles"] == 3000
    assert (found["trusted"], found["untrusted_by"], found["cycles"]) == (False, "check", 3000)
    assert found["landed_pct"] == pytest.approx(-1.0)       # what the nominal cycles read
    # a check inside the band is taken as it reads
    inside = landing(Scripted(1.0, 0.999, 1.0, 0.999, 1.0, 1.0035, 1.0, 1.0035), 0.3, 1.0, 1e6)
    assert CHECK_BAND[0] * 0.3 <= inside["landed_pct"] <= CHECK_BAND[1] * 0.3
    assert inside["trusted"] is True and inside["cycles"] == 3000 + 4000
    assert "untrusted_by" not in inside
    # and a plant replaying it spins the nominal cycles, its probe `loose`
    backend = SpinBackend()
    lead, line = Plant(0.3, backend, 0, {KEY: 1.0}, landings={KEY: found}).lead(KEY, {})
    lead(1)
    assert backend.spun == [3000] and "probe=loose" in line


def test_a_spin_that_lands_in_full_is_kept_and_the_correction_is_bounded():
    assert landing(Absorbing(absorbed=0), 0.3, 0.05, 1e6)["cycles"] == 150
    assert corrected_cycles(150, 0.0, 30.0, 0.05, 1e6) == int(MOST * 150)     # at most 10x
    assert corrected_cycles(150, 1.2, 0.3, 0.05, 1e6) == 38                  # at least 1/4
    assert corrected_cycles(9, 50.0, 0.3, 0.003, 1e6) == 3     # 2.25 rounded up, not down
    assert landing(Absorbing(), 0.3, 0.0001, 1e6) is None     # under one cycle: no probe


def test_the_plant_spins_what_landed_its_size_in_side_as_run():
    backend = SpinBackend()
    landed = {"pct": 0.3, "cycles": 260, "landed_pct": 0.29, "nominal_cycles": 150}
    plant = Plant(0.3, backend, 0, {KEY: 0.05}, landings={KEY: landed})
    lead, line = plant.lead(KEY, {"op": "add"})
    lead(2)
    assert backend.spun == [520]                      # 260 a call, a sample of two calls
    fields = markers.parse_marker(line)[1]
    assert (fields["cycles"], fields["sized_by"], fields["landed_pct"],
            fields["nominal_cycles"]) == ("260", "landing", "0.29", "150")
    other = Plant(0.5, backend, 0, {KEY: 0.05}, landings={KEY: landed})   # measured for 0.3
    lead, line = other.lead(KEY, {"op": "add"})
    lead(1)
    assert backend.spun[-1] == 250 and "sized_by=latency" in line
    loose = Plant(0.3, backend, 0, {KEY: 0.05},
                  landings={KEY: {**landed, "trusted": False, "cycles": 150}})
    lead, line = loose.lead(KEY, {"op": "add"})
    lead(1)
    fields = markers.parse_marker(line)[1]
    assert backend.spun[-1] == 150 and (fields["sized_by"], fields["probe"]) == ("latency",
                                                                                 "loose")
    assert plant.run_fields()["sized_by_landing"] == 1


def test_a_landing_probe_needs_a_plant_and_calibrate_asks_side_as_record_for_one():
    with pytest.raises(UsageError, match="plant_landing_pct needs plant_pct"):
        check_plant(None, None, SpinBackend(), landing_pct=0.3)
    plan = CalibratePlan(ops=["add"], options=BenchOptions(), root="cal", rounds=2,
                         plant_pct=0.3).ab_plan()
    assert plan.a.options == {"plant_pct": 0.0, "plant_landing_pct": 0.3}
    assert plan.b.options == {"plant_pct": 0.3}
    aa = CalibratePlan(ops=["add"], options=BenchOptions(), root="cal", rounds=2).ab_plan()
    assert aa.a.options == {} == aa.b.options


def test_a_record_measures_what_lands_and_the_planted_replay_spins_it(tmp_path):
    # the cpu backend spins the host (a cycle a nanosecond): its spin lands in full
    opts = dict(adapter="builtin", backend="cpu", dtypes=["float32"], warmup_ms=1.0,
                min_samples=5, min_time_ms=0.0, max_time_ms=30.0, out=str(tmp_path),
                echo=lambda _: None)
    a = harness.bench("add", plant_pct=0.0, plant_landing_pct=200.0, **opts)
    found = {row_key(r): r.extra[LANDING_KEY] for r in a.rows}
    # (a loaded host's interpreter times too loosely for the sizes themselves to be checked)
    assert found and all(f["pct"] == 200.0 and f["base_ms"] > 0 and
                         LEAST * f["nominal_cycles"] <= f["cycles"] <= MOST * f["nominal_cycles"]
                         and isinstance(f["landed_pct"], float) for f in found.values())
    b = harness.bench("add", replay=str(a.run_dir), plant_pct=200.0, **opts)
    for row in b.rows:
        (line,) = [m for m in row.markers if markers.marker_name(m) == markers.PLANTED]
        fields = markers.parse_marker(line)[1]
        probe = found[row_key(row)]
        if probe["trusted"]:
            assert (fields["sized_by"], fields["probe"]) == ("landing", "landed")
            assert int(fields["cycles"]) == probe["cycles"]
            assert row.extra["planted"]["landed_pct"] == probe["landed_pct"]
        else:   # the host's noise can fail the probe's gates (about 1 row in 6)
            assert probe["untrusted_by"] in ("noise", "check")
            assert (fields["sized_by"], fields["probe"]) == ("latency", "loose")
    replayed = harness.bench("add", replay=str(a.run_dir), plant_pct=0.0,
                             plant_landing_pct=200.0, **opts)      # a replay measures none
    assert not any(LANDING_KEY in r.extra for r in replayed.rows)
