"""Where cases come from. An adapter resolves op names and yields cases; it never times."""
from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from harness.common.errors import quoted


@dataclass
class CaseInputs:
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass
class Case:
    """One measurement point: (op, dtype, shape) with a baseline and a function under test.

    `build()` makes the inputs; it is called after the runner has seeded every generator, so
    the same case gets the same inputs in every run (adapters whose inputs come from a
    generator build them when the case is yielded: the runner seeds before asking for the
    next case too). `baseline` and `under_test` take the inputs' args/kwargs;
    `under_test_context()`, when given, is entered around every use of `under_test`.
    `check(out_test, out_ref)` raises AssertionError on a wrong result. `variant` tells apart
    cases of one op that share dtype and shape (several Benchmarks or parametrized calls in
    one test function); comparisons pair on it. `metrics(inputs,
    torch_ms, gems_ms)` returns extra numbers (torch_gbps, gems_gbps, tflops).
    """

    op: str
    dtype: str
    shape: Any                     # what the shape set says, as YAML can hold it
    shape_detail: str              # human string, also the pairing key in comparisons
    build: Callable[[], CaseInputs]
    baseline: Callable[..., Any]
    under_test: Callable[..., Any]
    check: Callable[[Any, Any], None] | None = None
    under_test_context: Callable[[], Any] | None = None
    metrics: Callable[[CaseInputs, float, float], dict] | None = None
    skip_reason: str | None = None
    variant: str | None = None     # which benchmark/call of the op (pairing key), None: the op
    info: dict = field(default_factory=dict)                  # adapter-specific identity


@dataclass(frozen=True)
class TunerSupport:
    """Tuners of the adapter's library beyond Triton's Autotuner: their classes (hooked for
    record/replay like Autotuner, subclasses included) and a reset of dispatch caches that
    would launch a cached kernel without asking the tuner (called once the hook is in)."""
    classes: Sequence[type] = ()
    reset: Callable[[], Any] | None = None


@dataclass(frozen=True)
class TunerCache:
    """A persistent tuner cache of the adapter's library: the environment that selects it
    (None unsets a variable), its description for the caliber, and private directories to
    remove after the run."""
    env: dict = field(default_factory=dict)
    description: str = "none"
    private_dirs: tuple[str, ...] = ()


class UnknownOp(ValueError):
    pass


class UnsupportedDtype(ValueError):
    pass


class MissingShapes(ValueError):
    pass


class Unsupported(ValueError):
    """The adapter has no such feature (e.g. shape sets derived from a library's own)."""


def suggest(name: str, candidates: Sequence[str], n: int = 3) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else ""


class Adapter(ABC):
    name = ""
    checks_outputs = False     # cases carry a check against the baseline's output
    env_prefixes: tuple[str, ...] = ()     # environment variables run.json records
    version_packages: tuple[str, ...] = ()  # packages whose versions run.json records
    # Environment switches that change which configs the library tunes (its tuning space):
    # the caliber records those that are on, so two sides must agree on them.
    tuning_switches: tuple[str, ...] = ()

    def tuning_space(self, environ) -> dict[str, str]:
        """The tuning switches that are on in `environ` (set, not empty, not "0"), name ->
        value: {} when the library tunes its default space."""
        return {name: environ[name] for name in self.tuning_switches
                if environ.get(name, "").strip() not in ("", "0")}

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(usable here, why not)."""

    @abstractmethod
    def ops(self) -> list[str]:
        ...

    def resolve(self, op: str) -> str:
        if op in self.ops():
            return op
        known = [row["op"] for row in self.describe_ops()]
        message = f"unknown op {quoted(op)} for adapter {self.name}{suggest(op, known)}"
        raise UnknownOp(message + (f" (known: {', '.join(known)})" if len(known) <= 12 else ""))

    @abstractmethod
    def dtypes(self, op: str, backend) -> list[str]:
        """dtypes this op supports on this backend; the first ones are the defaults."""

    def default_dtypes(self, op: str, backend) -> list[str]:
        return self.dtypes(op, backend)

    def check_dtypes(self, op: str, backend, wanted: Sequence[str]) -> list[str]:
        supported = self.dtypes(op, backend)
        bad = [d for d in wanted if d not in supported]
        if bad:
            raise UnsupportedDtype(
                f"dtype {', '.join(bad)} not supported by op {op!r} on backend {backend.name}; "
                f"supported: {', '.join(supported)}")
        return list(wanted)

    def check_shapes(self, op: str, shapes, level: str) -> None:
        """Raise MissingShapes when a shape file cannot serve this op (before any run)."""

    def check_environment(self, environ) -> None:
        """Refuse (harness.common.errors.UsageError) an environment switch this adapter reads
        whose value it cannot understand; called before any run directory exists, also for
        each side of an A/B comparison with that side's environment."""

    def prepare(self, ops: Sequence[str], backend, level: str, shapes) -> None:
        """Import and configure what the cases need, before any run directory exists;
        raise harness.common.errors.PreflightError when that cannot work here."""

    def default_shape_mode(self) -> str:
        return "default"

    @abstractmethod
    def cases(self, op: str, dtypes: Sequence[str] | None, shapes, level: str,
              backend, device: str) -> Iterator[Case]:
        """Yield the cases to time. `shapes` is a `harness.run.shapes.ShapeFile` or None (the
        adapter's own shapes); `dtypes` None means the op's own defaults."""

    @abstractmethod
    def shapes_used(self, op: str) -> dict:
        """The shapes the last `cases` call used, as a shape-file document."""

    def run_markers(self, op: str) -> list[str]:
        """Marker lines the adapter has to report after an op ran."""
        return []

    def identity(self, op: str | None = None) -> dict:
        return {"adapter": self.name}

    # ---- how inputs are made ----------------------------------------------------------------
    input_mode = "device"

    def set_input_mode(self, mode: str) -> None:
        """How the cases of the next runs make their inputs: `upstream` exactly as the
        library's own code does; `device` lets an adapter draw large inputs that the
        library draws on the host and moves to the device on the device instead (same
        distribution, from the run's seed: adapters/device_inputs.py). Set before `cases`."""
        self.input_mode = mode

    def inputs_record(self, op: str) -> dict:
        """run.json's `inputs` after a run of `op`: the mode and how many calls the adapter
        drew on the device instead (an adapter that builds every input as written: none)."""
        return {"mode": self.input_mode, "replaced_calls": 0}

    def case_count(self, op: str) -> int | None:
        """How many cases `cases(op, ...)` yields, once it has yielded its first (for the
        progress line's `[done/total]` and ETA); None when the adapter cannot say."""
        return None

    # ---- the library's tuners and caches (none by default) -------------------------------
    def tuner_support(self) -> TunerSupport | None:
        """Extra tuner classes to hook; called after `prepare`, before the first launch."""
        return None

    def tuner_cache(self, root, isolate: bool, environ) -> TunerCache:
        """The library's persistent tuner cache for this invocation (`isolate`: a private
        one under `root`). Set before `prepare` imports the library."""
        return TunerCache()

    # ---- the corpus, for `zlh ops` and corpus commands ------------------------------------
    def describe_ops(self, include_hidden: bool = False) -> list[dict]:
        """One dict per op (at least `op`; `unconditional_skip` when the op is marked to be
        skipped whatever the machine), in display order."""
        return [{"op": op} for op in self.ops()]

    def repo_of(self, op: str) -> str:
        """The repository an op comes from (dismiss lists may name it: `repo:op`)."""
        return self.name

    def reset_between_ops(self) -> None:
        """Drop per-op state of the adapter's library in a process that runs several ops
        (dispatch caches, allocator caches); the next op must measure as in a fresh one."""

    def inventory(self, verify: bool = False, backend=None,
                  known_backends=()) -> tuple[tuple[str, ...], list[dict]]:
        """(columns, rows) for `zlh ops --csv`. `verify`: check that each entry still builds
        its cases, without timing, on `backend`; `known_backends` own skip-guard tables."""
        return ("op",), [{"op": op} for op in self.ops()]

    # ---- curated shape sets, for `zlh shapes` --------------------------------------------------
    def derive_shape_set(self, kind: str, command: str) -> tuple[str, list[str]]:
        """A shape file derived from the library's own shapes (its text, with the rule in
        the header) and the library's keys it dropped."""
        raise Unsupported(f"adapter {self.name} has no shapes of its own to derive a set from")

    def model_shape_set(self, config: dict, tokens, tp: int, lm_head: bool, header) -> str:
        """A shape file of the shapes a model (its config) runs per forward step of each
        token count, keyed for this adapter's benchmarks; `header`: its comment lines."""
        raise Unsupported(f"adapter {self.name} has no model shape sets")

    def unmatched_shape_keys(self, doc: dict) -> dict:
        """The entries of a shape document whose keys name no op or class of this adapter."""
        known = set(self.ops())
        return {k: v for k, v in doc.items() if k not in known}
