"""One case: seed, build the inputs, check the result, time baseline and function under test.

The function under test's own context (`Case.under_test_context`, e.g. a library scope that
routes torch ops to the library) is entered around its calls only, through the timer's
`scope`: the timer's own device work (graph capture set-up, events, an L2 flush) and the
harness's (output digests) never run inside it. IR capture counts a launch as this case's
measured code only inside a call of the function under test; everything else launched in
the case window, input building included, is set-up.
"""
from __future__ import annotations

import contextlib
import random
import time

import numpy as np

import adapters
import backends

from ..common import markers
from ..common.errors import (AdapterFailure, CaseFailure, CaseSkipped, DevicePoisonedError,
                             failure_detail, one_line)
from ..common.fields import is_int
from ..common.process import raised_by_code, signals_kept
from ..compile.ir.capture import IRCapture
from ..measure import sample_stats
from ..measure.case_timer import CaseTimer
from ..store.results import FAILED, SKIPPED, SUCCESS, Row, row_key
from ..telemetry.kernel_split import KernelSplit
from . import outputs
from .case_timing import PlacedTiming, op_names
from .input_copy import pristine_copy


class InputClock:
    """The time an op's adapter spends making its cases and their inputs: while the next case
    is asked for (adapters that build inputs as they yield) and inside each case's `build`.
    Upstream input construction can outweigh the measuring many times over (integer tensors
    drawn on the host, for one); run.json keeps the total as `inputs_s`.

    What `nested()` counts while inputs are built — a cumulative count of seconds spent
    elsewhere: an autotune sweep of a kernel the inputs are made with (a backward's inputs
    from its forward), a wait for the device's lock — is kept apart as `nested_s`
    (run.json `inputs_nested_s`), so that `inputs_s` is the building alone."""

    def __init__(self, nested=lambda: 0.0, clock=time.perf_counter):
        self.total_s = self.nested_s = 0.0
        self._taken_s = self._taken_nested_s = 0.0
        self._nested, self._clock = nested, clock

    def take(self) -> dict:
        """The seconds counted since the last `take` (one case's: the runner takes after
        each case, into the row's `extra`): `inputs_s`, and `inputs_nested_s` where some
        were nested; rounded to 0.1 ms."""
        since, self._taken_s = self.total_s - self._taken_s, self.total_s
        nested, self._taken_nested_s = self.nested_s - self._taken_nested_s, self.nested_s
        return {"inputs_s": round(since, 4),
                **({"inputs_nested_s": round(nested, 4)} if nested > 0 else {})}

    def totals(self) -> dict:
        """run.json's `inputs_s` and `inputs_nested_s`."""
        return {"inputs_s": round(self.total_s, 3), "inputs_nested_s": round(self.nested_s, 3)}

    @contextlib.contextmanager
    def counting(self):
        started, before = self._clock(), self._nested()
        try:
            yield
        finally:
            elapsed = self._clock() - started
            inside = min(max(0.0, self._nested() - before), elapsed)
            self.total_s += elapsed - inside
            self.nested_s += inside

    def timed(self, build):
        """`build`, its time counted."""
        def timed_build():
            with self.counting():
                return build()
        return timed_build


def next_case(cases, op: str, done: int, run_dir):
    """The adapter's next case, None at the end; AdapterFailure (one line) when the adapter
    raises midway or gives something that is not an `adapters.Case`."""
    kept = f"; the run is marked crashed; its cases so far are in {run_dir}"
    try:
        with signals_kept():            # a signal the adapter's code made its own error
            case = next(cases, None)
    except (KeyboardInterrupt, SystemExit, DevicePoisonedError) as exc:
        if not raised_by_code(exc):           # Ctrl-C, SIGTERM, sys.exit: the runner's
            raise
        reason = f"the adapter raised KeyboardInterrupt (no SIGINT came) after {done} case(s)"
        raise AdapterFailure(f"{op}: {reason}{kept}", reason) from None
    except BaseException as exc:  # noqa: BLE001 - the adapter's code: one line, run kept
        reason = f"the adapter raised {type(exc).__name__} after {done} case(s)"
        raise AdapterFailure(f"{op}: {reason}: {failure_detail(exc)}{kept}", reason) from None
    if case is not None and not isinstance(case, adapters.Case):
        reason = f"the adapter gave a {type(case).__name__}, not an adapters.Case"
        raise AdapterFailure(f"{op}: {reason} (after {done} case(s)){kept}", reason)
    return case


def seed_everything(seed: int) -> None:
    import torch  # heavy: imported only where used
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)   # seeds every device generator too


def measure_case(case, case_timer: CaseTimer, backend, options, occurrence: int = 0,
                 ir: IRCapture | None = None, plant=None,
                 split: KernelSplit | None = None, pins=None) -> Row:
    """A Row for one case: SUCCESS with both measurements, SKIPPED, or FAILED with a reason
    and a marker. Only a poisoned device escapes as an exception. From `options` (the run's
    BenchOptions): the seed, the output check, `retry_throttled` (measure a case again, up to
    this many times, while a timed function ran throttled), `timing` (False: the function
    under test runs once — output check, digest, IR — and nothing is timed) and
    `baseline_timing` (False: the baseline is not timed, row.torch stays None). `plant`: a
    run.plant.Plant adding a known device delay to the function under test; `split`: a
    profiler pass over the function under test once the case is timed (--kernel-split);
    `pins`: what a replay takes from its record, case by case (pinned_calls: calls per
    sample, level placements); None where no record is replayed (a run that records, whose
    cases' levels `--level-placements` probes)."""
    row = Row(op=case.op, dtype=case.dtype, shape=case.shape, shape_detail=case.shape_detail,
              status=SUCCESS, occurrence=occurrence, extra=dict(case.info),
              variant=case.variant or "")
    if case.skip_reason:
        row.status, row.reason = SKIPPED, case.skip_reason
        return row
    try:
        if ir is not None:
            ir.begin_case(case.shape_detail, case.dtype)
        try:
            with signals_kept():        # a signal the op's code made its own error
                _time_case(case, case_timer, backend, options, row, ir, plant, split, pins)
        finally:
            if ir is not None:
                row.markers.extend(ir.end_case())
    except CaseSkipped as exc:
        row.status, row.reason = SKIPPED, exc.reason
    except CaseFailure as exc:
        _fail(row, case, exc.reason, exc.detail)
    except DevicePoisonedError:
        raise
    except Exception as exc:  # noqa: BLE001 - one broken case must not end the run
        verdict = backend.classify_error(exc)
        if verdict == backends.POISONED:
            raise DevicePoisonedError(markers.marker(
                markers.DEVICE_POISONED, op=case.op, dtype=case.dtype, shape=case.shape_detail,
                reason=type(exc).__name__, detail=failure_detail(exc))) from exc
        if verdict == backends.FATAL:
            _raise_if_device_unusable(backend, case, exc)
        _fail(row, case, "fatal_device_error" if verdict == backends.FATAL
              else type(exc).__name__, failure_detail(exc))
    except (KeyboardInterrupt, SystemExit) as exc:   # Ctrl-C, SIGTERM, sys.exit: the
        if not raised_by_code(exc):                  # runner's; the op's own raise fails
            raise                                    # its case
        _fail(row, case, "KeyboardInterrupt", "raised by the op's code; no SIGINT came")
    except BaseException as exc:  # noqa: BLE001 - GeneratorExit, CancelledError, the op's own
        _fail(row, case, type(exc).__name__, failure_detail(exc))
    return row


def _time_case(case, case_timer: CaseTimer, backend, options, row: Row, ir, plant=None,
               split=None, pins=None) -> None:
    """Seed, build, one call of the function under test (digest, check), then both timed
    on each placement of the inputs (see measure_case: `timing`, `baseline_timing`;
    placement.py: `placements`)."""
    seed_everything(options.seed)
    inputs = case.build()
    checking = options.check and case.check is not None
    timing = options.timing
    # The output check and the A/B output digest must see the inputs as built: an in-place
    # function under test would otherwise hand the baseline its mutated inputs. With a check,
    # the function under test gets a copy and the baseline the inputs as built; the timed
    # calls then reuse the inputs (whatever state the calls before left them in).
    fed = [pristine_copy(inputs) if checking else inputs]   # what under_test is called on
    under_test = lambda: case.under_test(*fed[0].args, **fed[0].kwargs)  # noqa: E731
    if ir is not None:
        under_test = ir.timed(under_test)
    lead, planted = None, []           # a plant's spin at the start of each sample
    if plant is not None:
        lead, line = plant.lead(row_key(row), {"op": case.op, "dtype": case.dtype,
                                               "shape": case.shape_detail})
        planted.append(line)
        row.extra["planted"] = plant.case_fields()
    scope = case.under_test_context or contextlib.nullcontext
    with case_timer.first_call(), scope():
        out = under_test()
    fed[0] = inputs                    # the timed calls: the inputs themselves
    try:
        row.extra["output"] = outputs.digest(out)   # for the A/B output gate
    except Exception as exc:  # noqa: BLE001 - the gate's data never fails a case
        row.extra["output_error"] = one_line(exc)
    if checking:
        try:
            case.check(out, case.baseline(*inputs.args, **inputs.kwargs))
        except AssertionError as exc:
            raise CaseFailure("mismatch", one_line(exc)) from None
    del out, inputs                    # the timed calls go through fed[0]
    if timing:
        def build():
            seed_everything(options.seed)
            return case.build()
        PlacedTiming(case, case_timer, backend, options, row, fed, under_test, scope,
                     (pins or {}).get(row_key(row), {}), lead, build).run(pins is not None)
    if plant is not None and plant.landing_pct and timing:    # after the timing, as the split
        plant.land(row, _spin_timer(case, case_timer, backend, under_test, scope, row))
    if split is not None and timing:   # after the timing: never in it
        with scope():
            split.profile_case(under_test, {"variant": row.variant, "dtype": row.dtype,
                                          "shape": row.shape_detail,
                                          "occurrence": row.occurrence}, row.gems_ms,
                               row.gems.timer if row.gems else None)
    row.markers = planted + row.markers + flag_markers(case, row)
    if case.metrics is not None and timing:
        try:
            row.metrics = {k: float(v) for k, v in
                           case.metrics(fed[0], row.torch_ms, row.gems_ms).items()
                           if v is not None}
        except Exception as exc:  # noqa: BLE001 - a metric never costs the latency
            row.extra["metrics_error"] = one_line(exc)


def _spin_timer(case, case_timer: CaseTimer, backend, under_test, scope, row: Row):
    """cycles -> the median ms of the function under test with a device spin of that many
    cycles a call, queued as a plant's (once per sample, for its calls), timed in a section
    of its own as the row's was (its timer, its calls per sample): what run.plant's landing
    probe times."""
    measured = row.gems
    pin = (measured.timer, measured.calls_per_sample) if measured is not None else None
    names = op_names(case)

    def timed(cycles: int) -> float:
        with case_timer.section():
            return case_timer.measure(under_test, case.op, names, scope=scope, pin=pin,
                                      lead=lambda calls: backend.spin(cycles * calls),
                                      dtype=case.dtype, shape=case.shape_detail
                                      ).measurement.median
    return timed


def flag_markers(case, row: Row) -> list[str]:
    """One marker per timed function whose samples deserve a second look."""
    lines = []
    for side, measured in (("torch", row.torch), ("gems", row.gems)):
        if measured is None or not measured.flags:
            continue
        lines.append(markers.marker(
            markers.SAMPLES_FLAGGED, op=case.op, dtype=case.dtype, shape=case.shape_detail,
            side=side, flags="+".join(measured.flags), n=measured.n,
            detail=f"max/median {sample_stats.worst_ratio(measured.samples_ms):.3g}x, median "
                   f"rel err {100 * measured.rel_error:.2g}%"))
    return lines


def _fail(row: Row, case, reason: str, detail: str) -> None:
    row.status, row.reason = FAILED, reason
    row.markers.append(markers.marker(markers.CASE_FAILED, op=case.op, dtype=case.dtype,
                                      shape=case.shape_detail, reason=reason, detail=detail))


def _raise_if_device_unusable(backend, case, exc) -> None:
    """A fatal error can leave the context unusable (sticky CUDA errors): then every later
    case would fail with the same text and be blamed for it. End the run instead."""
    problem = backend.device_usable()
    if problem:
        raise DevicePoisonedError(markers.marker(
            markers.DEVICE_POISONED, op=case.op, dtype=case.dtype, shape=case.shape_detail,
            reason=type(exc).__name__,
            detail=f"{one_line(exc)}; device unusable afterwards: {problem}")) from exc


def case_count(adapter, op: str, options) -> int | None:
    """How many cases a run of `op` measures (its shard of them), when the adapter can say;
    None otherwise (a plug-in's count never ends a run)."""
    with contextlib.suppress(Exception):
        total = adapter.case_count(op)
        if is_int(total) and total >= 0:
            shard, shards = options.shard()
            return len(range(shard, total, shards))
    return None
