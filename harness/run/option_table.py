"""The bench option table: every `zlh bench` option declared once.

One record per option says everything anything needs to know about it: its flat name (the
API keyword, the run.json key, the BenchOptions field), its command-line flag and how it is
written, its type, default, range and choices, its help text and group, where the caliber
records it, whether it says where a run goes rather than how it measures, whether a product
manifest may set it and whether `harness.measure` takes it. From this table come the
BenchOptions fields and their checks (run/options.py), the click options of every command
that runs benches (cli/common.py), a child's arguments and their parsing, the keywords of
the API, a product manifest's bench vocabulary and the CLI reference (`option_rows`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import backends
from adapters.device_inputs import DEFAULT_MODE as DEFAULT_INPUTS, MODES as INPUT_MODES

from ..common import spelling
from ..common.errors import UsageError
from ..common.limits import MAX_PLACEMENTS, MAX_REPEAT, MAX_RETRY_THROTTLED
from ..compile.ir.variants import IR_STAGES
from ..measure.stopping import Budget, StoppingRule
from ..measure.timers import TIMER_NAMES
from .level import MIN_US as LEVEL_MIN_US
from .placement import MEMORY_MODES as PLACEMENT_MEMORY, REUSED as PLACEMENT_REUSED

LEVELS = ("core", "comprehensive")
L2_POLICIES = ("warm", "flush")
TIMERS = ("auto", *TIMER_NAMES)
DEFAULT_SEED = 0
SEED_LIMIT = 2 ** 32          # numpy's seed range: 0 .. 2**32 - 1

KINDS = ("value", "list", "flag", "negated")
GROUPS = ("cases", "device", "timing", "compiler/IR", "paths", "telemetry")
ABOVE = "option {name}: {value!r} is above its maximum {high:g}"


@dataclass(frozen=True)
class Option:
    """One bench option.

    `kind` says how it is written on a command line: `value` (`--flag VALUE`), `list`
    (comma-separated), `flag` (present when true) or `negated` (present when false, e.g.
    --no-check for check=False). `low`/`high` bound numbers (inclusive); `default` None
    means "not given" is a valid value. `caliber` names the caliber field that records it
    (`stopping.min_samples`: a key of the caliber's `stopping`); `part` says that its value
    lives in BenchOptions' `rule` (StoppingRule) or `budget` (Budget). `location`: it says
    where a run goes, what it replays, what watches it or what it plants, not how it
    measures; a run reproduced from its run.json gets it from its caller. `shared`: every
    command that runs benches takes it (`zlh ab` passes it on to both sides); else `zlh
    bench` alone does. `manifest`: a product manifest's protocol.bench may set it.
    `measure`: a timing keyword of `harness.measure`. `path`: a file or folder (made
    absolute in run.json). `adapter_name`: the value names an adapter (the CLI checks it
    against the registered ones). `hidden`: left out of --help (and checked by BenchOptions
    alone)."""
    name: str
    flag: str
    type: type
    default: Any = None
    help: str | Callable[[], str] = ""
    group: str = "cases"
    kind: str = "value"
    low: int | float | None = None
    high: int | float | None = None
    choices: tuple[str, ...] | None = None
    caliber: str | None = None
    part: str | None = None
    location: bool = False
    shared: bool = True
    manifest: bool = False
    measure: bool = False
    path: bool = False
    adapter_name: bool = False
    complete: str | None = None          # shell completion: "backends"
    metavar: str | None = None
    envvar: str | None = None
    hidden: bool = False
    blank_is_unset: bool = False         # "" means not given (an empty shell variable)
    above: str = ABOVE                   # the message for a value above `high`
    convert: Callable[[Any], Any] | None = None   # replaces the generic checks (lists)
    extra: Callable[[Any], bool] | None = None    # a further condition on a valid value
    extra_message: str = ""

    @property
    def optional(self) -> bool:
        return self.default is None

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help

    def annotation(self) -> str:
        base = "tuple[str, ...]" if self.kind == "list" else self.type.__name__
        return f"{base} | None" if self.optional else base

    def check(self, value: Any) -> Any:
        """The value, type- and range-checked (bools are not numbers here), converted (an
        int for a float option, a tuple for a list); a bad one is a UsageError naming it."""
        if self.blank_is_unset and value == "":
            value = None
        if self.convert is not None:
            return None if value is None and self.optional else self.convert(value)
        if value is None and self.optional:
            return value
        name, kind = spelling.option(self.name), self.type
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise UsageError(f"option {name}: expected {kind.__name__}, got {value!r}")
        if kind is str and not value.strip():
            raise UsageError(f"option {name}: an empty value; leave it out for the default")
        if kind is str and "\x00" in value:          # no path, name or module holds one
            raise UsageError(f"option {name}: {value!r} holds a NUL byte")
        if kind is float and not math.isfinite(value):
            raise UsageError(f"option {name}: {value!r} is not a finite number")
        if self.low is not None and value < self.low:
            raise UsageError(f"option {name}: {value!r} is below its minimum {kind(self.low)}")
        if self.high is not None and value > self.high:
            raise UsageError(self.above.format(name=name, value=value, high=self.high))
        if self.extra is not None and not self.extra(value):
            raise UsageError(self.extra_message.format(name=name, value=value))
        if self.choices is not None and value not in self.choices:
            raise UsageError(f"option {name}: unknown value {value!r}; known: "
                             f"{', '.join(self.choices)}")
        return value

    def text(self, value) -> str:
        """The value as a command-line argument (parsed back to the same value)."""
        if self.kind == "list":
            return ",".join(value)
        return repr(value) if isinstance(value, float) else str(value)

    def parse(self, text: str) -> Any:
        """A command-line argument as this option's value (what `text` wrote)."""
        if self.kind == "list":
            return [v.strip() for v in text.split(",") if v.strip()]
        try:
            return self.type(text)
        except ValueError:
            raise UsageError(f"option {spelling.option(self.name)}: expected "
                             f"{self.type.__name__}, got "
                             f"{text!r}") from None

    def range_text(self) -> str:
        if self.low is None and self.high is None:
            return ""
        return f"{'' if self.low is None else self.low}..{'' if self.high is None else self.high}"


def _dtype_tuple(value) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or \
            not all(isinstance(v, str) for v in value):
        raise UsageError(f"dtypes must be a list of dtype names (e.g. ['float16']), "
                         f"got {value!r}")
    names = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
    if not names:
        raise UsageError("dtypes is empty; leave it out for the op's defaults")
    return names


def _valid_shard(text: str) -> bool:
    k, sep, n = text.partition("/")
    return bool(sep) and (k + n).isascii() and k.isdigit() and n.isdigit() and \
        0 <= int(k) < int(n)


def _backend_help() -> str:
    names = ", ".join(b.name for b in backends.all_backends())
    aliases = ", ".join(f"{alias}={b.name}" for b in backends.all_backends()
                        for alias in b.aliases)
    return f"Device runtime: {names} (aliases {aliases}). Default: detected."


# In --help order; a child's arguments follow it too.
OPTIONS = (
    Option("adapter", "--adapter", str, adapter_name=True,
           help="Where cases come from: builtin, flaggems, user or an installed plugin's "
                "adapter. Default: user with --cases, else flaggems when a checkout is named "
                "(--flaggems-dir, FLAGGEMS_DIR) or flag_gems is importable, else builtin."),
    Option("cases", "--cases", str, metavar="MODULE:ATTR",
           help="Your own cases (harness.Case objects, a list of them, a function returning "
                "them, or a dict op -> cases), e.g. mypkg.bench:cases."),
    Option("backend", "--backend", str, metavar="NAME", complete="backends", group="device",
           measure=True, help=_backend_help),
    Option("device", "--device", int, low=0, group="device", measure=True,
           help="Logical device index. Default: the first visible device."),
    Option("dtypes", "--dtypes", str, kind="list", metavar="LIST", convert=_dtype_tuple,
           help="Comma-separated dtypes, e.g. float16,bfloat16. Default: the op's defaults."),
    Option("shapes", "--shapes", str, metavar="FILE", path=True,
           help="Shape file (YAML: op or class name -> shapes). Default: the adapter's."),
    Option("level", "--level", str, "core", choices=LEVELS, caliber="bench_level",
           manifest=True, help="Shape set size when no shape file is given."),
    Option("timer", "--timer", str, "auto", choices=TIMERS, group="timing", measure=True,
           help="auto: graph where the backend captures graphs, else event (cpu: host)."),
    Option("repeat", "--repeat", int, 1, low=1, high=MAX_REPEAT, group="timing",
           caliber="repeat", manifest=True, measure=True,
           help="Independent measurements per case; the median of their medians is reported."),
    Option("l2", "--l2", str, "warm", choices=L2_POLICIES, group="timing",
           caliber="l2_policy", manifest=True, measure=True,
           help="flush: clear L2 before every timed call (event timer only)."),
    Option("warmup_ms", "--warmup-ms", float, Budget.warmup_ms, low=0, group="timing",
           part="budget", caliber="warmup_ms", manifest=True, measure=True,
           help="Warm-up budget after the discarded first call."),
    Option("min_samples", "--min-samples", int, StoppingRule.min_samples, low=1,
           group="timing", part="rule", caliber="stopping.min_samples", manifest=True,
           measure=True, help="Take at least this many samples per timed function."),
    Option("min_time_ms", "--min-time-ms", float, StoppingRule.min_time_ms, low=0,
           group="timing", part="rule", caliber="stopping.min_time_ms", manifest=True,
           measure=True, help="Sample for at least this long per timed function."),
    Option("max_time_ms", "--max-time-ms", float, StoppingRule.max_time_ms, low=0,
           group="timing", part="rule", caliber="stopping.max_time_ms", manifest=True,
           measure=True,
           help="Hard cap on sampling time per timed function; a case it stops before "
                "--min-samples is flagged undersampled."),
    Option("target_rel_err", "--target-rel-err", float, StoppingRule.target_rel_err, low=0,
           group="timing", part="rule", caliber="stopping.target_rel_err", manifest=True,
           measure=True,
           help="Stop early once the median's relative standard error is below this."),
    Option("pace_us", "--pace-us", float, StoppingRule.pace_us, low=0, high=1_000_000,
           group="timing", part="rule", caliber="stopping.pace_us", measure=True,
           metavar="US",
           help="Idle gap (microseconds) after every sample: each graph replay or batch of "
                "calls is synchronised and the device rests before the next (long kernels "
                "under a power cap). Default 0: off. Counts toward --max-time-ms."),
    Option("placements", "--placements", int, 1, low=1, high=MAX_PLACEMENTS, group="timing",
           caliber="placements", manifest=True, metavar="N",
           help="Time each case on N placements of its inputs: after the first, the "
                "inputs are built again (same values) behind a random-size allocation on an "
                "emptied allocator cache, so that they lie at other device addresses; the "
                "row's latency is the median of the placements' medians. Where data lies "
                "moves a kernel's latency by tenths of a percent and more: placements average "
                "that inside a run, rounds only across runs. Part of the caliber."),
    Option("placement_memory", "--placement-memory", str, PLACEMENT_REUSED,
           choices=PLACEMENT_MEMORY, group="timing", caliber="placement_memory", manifest=True,
           help="Where a new placement's inputs may lie. reused: the previous inputs are "
                "freed first, and the allocator may hand their memory back; new: every "
                "earlier placement's inputs are kept until the case ends, so each "
                "placement's lie in device memory no earlier one holds (other physical "
                "memory); once a placement would leave less than 1 GiB free beyond twice "
                "its inputs and a 64 MiB spacer (or the free memory is unknown), what was "
                "kept is let go and the case's later placements reuse memory (results: "
                "placements_new_memory). Part of the caliber."),
    Option("level_placements", "--level-placements", int, 0, low=0, high=MAX_PLACEMENTS,
           group="timing", caliber="level_placements", manifest=True, metavar="MAX",
           help="Time a case whose level is drawn per placement on up to MAX short "
                "placements. A run that records probes each case (of at least --level-min-us) "
                "on 12 short placements after timing it; where their medians spread 0.75 % "
                "or more, it is timed again on 2*(spread/0.25 %)^2 of them (at most MAX) and "
                "its latency is their interquartile mean (results: level_spread_pct, "
                "level_placements). A replay times such a case on as many as its record did "
                "(at most MAX), and probes nothing. Default 0: off. Part of the caliber."),
    Option("level_min_us", "--level-min-us", float, LEVEL_MIN_US, low=0, group="timing",
           caliber="level_min_us", manifest=True, metavar="US",
           help="Under --level-placements, probe only a case whose first timing reads at "
                "least US microseconds; a shorter one keeps its usual timing (a level "
                "placement's set-up costs tens of milliseconds whatever the kernel). 0: "
                "probe every case. Part of the caliber while --level-placements is on."),
    # Not the caliber: where a placement lands is what rounds draw anew (ab/sides.py).
    Option("placement_seed", "--placement-seed", int, low=0, high=SEED_LIMIT - 1,
           location=True, shared=False, hidden=True, group="timing", metavar="N",
           help="Seed of the later placements' spacers (their sizes); default: --seed. Each "
                "round of `zlh ab`, `zlh calibrate` and a product campaign gives its own, the "
                "same on both sides (every cell)."),
    Option("seed", "--seed", int, DEFAULT_SEED, low=0, high=SEED_LIMIT - 1, caliber="seed",
           manifest=True, above="option {name}: {value} is out of range (0 .. {high})",
           help="Seed for random, numpy and torch before each case's inputs are built "
                "(part of the caliber)."),
    Option("inputs", "--inputs", str, DEFAULT_INPUTS, choices=INPUT_MODES, caliber="inputs",
           help="device: inputs an upstream benchmark draws on the host and moves to the "
                "device (integer randint at 2**30 elements) are drawn on the device instead, "
                "same dtype, shape and range, from the seed; upstream: the library's exact "
                "construction (its values). Part of the caliber."),
    Option("check", "--no-check", bool, True, kind="negated",
           help="Skip the comparison with the baseline's output."),
    Option("flaggems_dir", "--flaggems-dir", str, metavar="DIR", envvar="FLAGGEMS_DIR",
           path=True, blank_is_unset=True, group="paths",
           help="FlagGems checkout (holds benchmark/ and src/). Env: FLAGGEMS_DIR."),
    Option("isolate_tuner_cache", "--isolate-tuner-cache", bool, False, kind="flag",
           group="compiler/IR",
           help="Give this invocation a private FlagGems tuner DB (default: the shared one)."),
    Option("sweep_ms", "--sweep-ms", float, None, low=1, high=10000, metavar="MS",
           group="compiler/IR",
           help="Device time per config in a recorded autotune sweep, a fifth of it warm-up "
                "(default: the tuner's own, 125 ms in Triton and FlagGems). Shorter sweeps "
                "cost less and may pick another of two near-equal configs; the record pins "
                "whatever won. Implies --isolate-tuner-cache (no short sweep's winner lands "
                "in a shared tuner DB)."),
    Option("autotune_hooks", "--no-autotune-hooks", bool, True, kind="negated",
           group="compiler/IR",
           help="Do not hook the autotuners (no record, no replay): configs are tuned "
                "live as the library does (caliber autotune_mode uncontrolled); not with "
                "--replay, nor where a side replays another (zlh ab, screen)."),
    Option("ir", "--no-ir", bool, True, kind="negated", group="compiler/IR",
           caliber="ir_capture",
           help="Do not capture the IR of measured kernels (recorded in the caliber)."),
    Option("ir_stage", "--ir-stage", str, "ttgir", choices=IR_STAGES, group="compiler/IR",
           caliber="ir_stage", manifest=True,
           help="IR stage the fingerprint covers (also kept beside ttgir/): ttgir where "
                "FlagTree's switches act; ptx or llir for switches acting after TTGIR."),
    Option("telemetry_interval", "--telemetry-interval", float, 5.0, low=0, high=3600,
           metavar="S", location=True, group="telemetry",
           help="Seconds between device telemetry samples (telemetry.tsv); 0: off."),
    Option("retry_throttled", "--retry-throttled", int, 0, low=0, high=MAX_RETRY_THROTTLED,
           metavar="N", group="timing",
           help="Measure a case again, up to N times, while it ran on a throttled device "
                "(clock below usual or a slowdown reason)."),
    # `zlh bench` alone: where its runs go, what they replay, what they plant.
    Option("out", "--out", str, "runs", metavar="DIR", path=True, location=True,
           shared=False, group="paths",
           help="Root under which each op gets <DIR>/<op>_<timestamp>/ (made if missing; "
                "must be a writable directory)."),
    Option("replay", "--replay", str, metavar="RUN_DIR", path=True, location=True,
           shared=False, group="compiler/IR",
           help="Force the autotune configs recorded by this record run (or the newest "
                "<op>_* record run under this directory). Default: record."),
    Option("keep_cache", "--keep-cache", bool, False, kind="flag", location=True,
           shared=False, group="compiler/IR",
           help="Keep the private Triton compile cache (and tuner DB) after the run."),
    Option("plant_pct", "--plant-pct", float, low=0, high=1000, metavar="X", location=True,
           shared=False, group="timing",
           help="Self-test: add a device spin to each timed sample of the function under "
                "test, X% of its latency in the --replay run for each of the sample's calls "
                "(0: the spin kernel with no spin); where "
                "that run measured what X% lands (--plant-landing-pct X), the cycles that "
                "landed X% there."),
    Option("plant_landing_pct", "--plant-landing-pct", float, low=0, high=1000, metavar="X",
           location=True, shared=False, group="timing",
           help="With --plant-pct, in a run that records (no --replay): after each case "
                "is timed, measure how much of a device spin of X% of its latency lengthens "
                "the function under test, and keep the cycles that lengthen it by X% for a "
                "later --plant-pct X replaying this run (zlh calibrate sets it)."),
    Option("kernel_split", "--kernel-split", bool, False, kind="flag", location=True,
           group="telemetry",
           help="After each case is timed, profile the function under test (torch's "
                "profiler) and write its device time per kernel to kernel_split.tsv; "
                "the timed numbers are unchanged."),
    Option("timing", "--no-timing", bool, True, kind="negated", shared=False, group="timing",
           help="Run each case once (inputs, output check, IR capture) and time nothing: "
                "rows carry no latency and the caliber's timer reads `none` (what `zlh "
                "screen --timing changed|none` decides its verdicts with)."),
    Option("baseline_timing", "--no-baseline-timing", bool, True, kind="negated",
           shared=False, group="timing",
           help="Time the function under test only: the baseline still runs for the output "
                "check but is not timed, so rows carry no baseline latency, speedup or "
                "baseline bandwidth. The runs of `zlh ab` and `zlh calibrate` are made this "
                "way (their verdicts compare the function under test across sides)."),
    Option("case_shard", "--case-shard", str, metavar="K/N", hidden=True, shared=False,
           extra=_valid_shard,
           extra_message="option {name}: expected k/N with 0 <= k < N, got {value!r}",
           help="Only every N-th case from the K-th (the shards of a parallel sweep)."),
    # A screen's two runs of one side and op (--timing changed) share a Triton cache.
    Option("keep_compile_cache", "--keep-compile-cache", bool, False, kind="flag",
           location=True, shared=False, hidden=True, group="compiler/IR",
           help="Leave the Triton compile cache in <out>/.compile-cache-<stamp> after the run "
                "for a later run to load from (its caller removes it); the tuner cache still "
                "goes (a screen's untimed runs under --timing changed)."),
    Option("compile_cache", "--compile-cache", str, metavar="DIR", path=True, location=True,
           shared=False, hidden=True, group="compiler/IR",
           help="Load from and add to this Triton compile cache (another run's, kept; left in "
                "place) instead of a private one; a directory that is gone: a private one (a "
                "screen's timed run, on its side's untimed cache)."),
)

BY_NAME = {o.name: o for o in OPTIONS}
BY_FLAG = {o.flag: o for o in OPTIONS}
spelling.register({o.name: o.flag for o in OPTIONS})
FLAT_NAMES = tuple(BY_NAME)
LOCATION_NAMES = tuple(o.name for o in OPTIONS if o.location)
SHARED_NAMES = tuple(o.name for o in OPTIONS if o.shared)
MEASURE_NAMES = tuple(o.name for o in OPTIONS if o.measure)


def manifest_option_names() -> tuple[str, ...]:
    """Bench options a product manifest may set for every cell; the others are protocol
    fields of their own or forced (isolated tuner cache, IR capture, output check, out,
    replay)."""
    return tuple(o.name for o in OPTIONS if o.manifest)


def option_rows() -> list[dict]:
    """The table as rows for a reference page: name, flag, kind, type, default, range,
    choices, group, caliber field, location, shared, manifest, metavar, envvar, help."""
    return [{"name": o.name, "flag": o.flag, "kind": o.kind,
             "type": "list" if o.kind == "list" else o.type.__name__, "default": o.default,
             "range": o.range_text(), "choices": list(o.choices or ()), "group": o.group,
             "caliber": o.caliber, "location": o.location, "shared": o.shared,
             "manifest": o.manifest, "metavar": o.metavar, "envvar": o.envvar,
             "hidden": o.hidden, "help": o.help_text()}
            for o in OPTIONS]
