"""Which case's autotune sweep chose the config a case ran.

A tuner's key may leave out what tells two cases apart: a batch size that is no argument of the
kernel, sizes a library puts in one bucket, a dimension the key does not name. The later case
then runs, without tuning, the config the earlier case's sweep chose, and its latency depends on
which case reached the key first (another shape list or order can pick another config for it).
Read from launches alone, so it holds for every tuner and autotune mode: a case that launched no
sweep of a kernel, and measured a variant of it whose config (kernel, dtype, constexprs, warps,
stages, CTAs, register cap) an earlier case measured right after sweeping that kernel, ran that
case's choice. A variant whose constexprs differ (a heuristic that reads the shape) is not
matched: the marker is only ever raised on that evidence.
"""
from __future__ import annotations

from ...common.markers import KEY_SHARED, marker
from .variants import Variant


def config_identity(variant: Variant) -> tuple:
    constexprs = tuple(sorted((str(k), repr(v)) for k, v in variant.constexprs.items()))
    return (variant.kernel, variant.dtype, constexprs, variant.num_warps, variant.num_stages,
            variant.num_ctas, variant.maxnreg)


def describe(variant: Variant) -> str:
    parts = [f"{k}={v}" for k, v in sorted(variant.constexprs.items())]
    parts += [f"{name}={value}" for name, value in (("num_warps", variant.num_warps),
                                                     ("num_stages", variant.num_stages))
              if value is not None]
    return ", ".join(parts)


class TuneOrigins:
    """Per run: the case whose sweep first chose each config it measured, and a marker for a
    later case that ran one of those configs without a sweep of its own."""

    def __init__(self):
        self._chosen: dict[tuple, str] = {}     # config identity -> "dtype shape" that chose it

    def case_ended(self, case: str, swept: set[str], measured: list[Variant]) -> list[str]:
        """`case`: "dtype shape"; `swept`: kernels the case's sweeps launched; `measured`:
        the variants its timed calls launched. Returns its marker lines."""
        lines, marked = [], set()
        for variant in measured:
            identity = config_identity(variant)
            if variant.kernel in swept:
                self._chosen.setdefault(identity, case)
                continue
            origin = self._chosen.get(identity)
            if origin is None or origin == case or variant.kernel in marked:
                continue
            marked.add(variant.kernel)
            lines.append(marker(
                KEY_SHARED, kernel=variant.kernel,
                detail=f"swept no configs of its own and ran the one the autotune sweep of "
                       f"{origin} chose ({describe(variant)}); where the tuner's key does not "
                       "tell the two cases apart, this case's latency depends on which of "
                       "them reached the key first"))
        return lines
