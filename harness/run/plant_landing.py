"""What a planted spin adds to a case, measured by the run that records side A.

`zlh calibrate --plant-pct X` plants a device spin in side B's timed samples (plant.py).
Sized as X % of side A's latency, the spin lengthens a sample by its cycles only where
nothing else gets done while it spins. Ahead of a memory-bound kernel something does — the
memory system works off the calls before it — and the spin lands short: on an H100 a spin of
0.3 % queued ahead of every call read as 0.02–0.14 % on 25–50 µs memory-bound kernels, as
the full 0.3 % on kernels of 0.7 ms and more (tests/device/README.md). A plant spins once
per sample for all of its calls, which leaves such an overlap a smaller share; what still
does not land is what this probe measures.

So the run that records side A (`--plant-landing-pct X`, which zlh calibrate sets on side A)
measures, after each case is timed (never in its timed section), what a spin lands there:
the function under test with a spin of 0 and of the nominal cycles (per call, queued as the
plant queues them), in turns (0 N 0 N 0);
then the cycles corrected by what the nominal spin lacked, taking the part that did not land
as a fixed amount, so that every further cycle lands (corrected_cycles); then those timed
the same way (C 0 C), which says what they land. Side B plants the corrected cycles
(`Plant.cycles_for`: `sized_by=landing`); a case without them gets the nominal ones.

The probe is a measurement, and only a precise one may size a plant. Where the spin-free
timings of the first turns spread (sd over their mean) by more than NOISE_SHARE of the asked
size, the case keeps the nominal cycles (`trusted: false`, `untrusted_by: noise`). A GEMM at
the power limit is such a case: on an H100 its clock moved those timings by several percent,
and corrections read from them planted 2.8–4.2 % where 0.3 % was asked. Three timings taken
one after the other can also agree by chance while the clock drifts under them, so the
corrected cycles must land what was asked within CHECK_BAND times it in their own check;
where they do not, the case keeps the nominal cycles too (`untrusted_by: check`,
`check_landed_pct` what the corrected cycles read). On an H100 two 4096² GEMMs passed the
noise gate so, their checks read 1.29 % and 1.05 % for an asked 0.3 %, and one planted side
read 1.67 % slower.
"""
from __future__ import annotations

import math
import statistics
from typing import Callable

NOMINAL, CORRECTED = (0, 1, 0, 1, 0), (1, 0, 1)   # the probe's order: 0 no spin, 1 spin
LEAST, MOST = 0.25, 10.0       # the corrected spin stays within these times the nominal one
NOISE_SHARE = 0.5              # a probe whose spin-free timings spread more than this share
                               # of the asked size sizes nothing
CHECK_BAND = (0.5, 2.0)        # nor one whose corrected cycles land outside these times it


def corrected_cycles(nominal: int, landed_pct: float, pct: float, base_ms: float,
                     cycles_per_ms: float) -> int:
    """The cycles that land `pct` % of `base_ms` where `nominal` landed `landed_pct` %: the
    missing part added in full (the part that did not land taken as fixed), kept within
    [LEAST, MOST] times the nominal cycles."""
    missing = (pct - landed_pct) / 100.0 * base_ms * cycles_per_ms
    return min(max(int(round(nominal + missing)), math.ceil(LEAST * nominal)),
               math.floor(MOST * nominal))


def landing(time_with_spin: Callable[[int], float], pct: float, base_ms: float,
            cycles_per_ms: float) -> dict | None:
    """Probe one case: `time_with_spin(cycles)` is the median ms of the function under test
    behind a spin of `cycles`, timed anew. None where the nominal spin is under one cycle."""
    nominal = int(round(pct / 100.0 * base_ms * cycles_per_ms))
    if nominal < 1:
        return None
    bases, spun = _in_turns(time_with_spin, NOMINAL, nominal)
    base = statistics.fmean(bases)
    nominal_landed = _landed_pct(spun, base)
    noise = 100.0 * statistics.stdev(bases) / base
    found = {"pct": pct, "base_ms": base, "cycles_per_ms": cycles_per_ms,
             "nominal_cycles": nominal, "nominal_landed_pct": round(nominal_landed, 4),
             "noise_pct": round(noise, 4), "trusted": noise <= NOISE_SHARE * pct}
    nominal_kept = {"cycles": nominal, "landed_pct": round(nominal_landed, 4)}
    if not found["trusted"]:               # too loose to size a plant: the nominal cycles
        return {**found, **nominal_kept, "untrusted_by": "noise"}
    cycles = corrected_cycles(nominal, nominal_landed, pct, base, cycles_per_ms)
    again, corrected = _in_turns(time_with_spin, CORRECTED, cycles)
    landed = round(_landed_pct(corrected, statistics.fmean(again)), 4)
    if not CHECK_BAND[0] * pct <= landed <= CHECK_BAND[1] * pct:
        return {**found, **nominal_kept, "trusted": False, "untrusted_by": "check",
                "check_cycles": cycles, "check_landed_pct": landed}
    return {**found, "cycles": cycles, "landed_pct": landed}


def _in_turns(time_with_spin, order, cycles: int) -> tuple[list[float], float]:
    """(the ms timed without the spin, their mean with it), timed in `order`."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for spun in order:
        times[spun].append(time_with_spin(cycles if spun else 0))
    return times[0], statistics.fmean(times[1])


def _landed_pct(spun_ms: float, base_ms: float) -> float:
    return 100.0 * (spun_ms / base_ms - 1.0)
