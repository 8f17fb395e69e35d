"""The campaign manifest: its vocabulary, its typed records (built from a document validate.py
accepted) and the field reader that collects a document's violations.

A manifest names everything a campaign may not choose after the fact: the sources (compiler,
library, zlh) at 40-hex commits, the device, the protocol (cells and their environments, which
cells are timed, the canary order, the timer, dtypes, timeouts per cost class, how a code
change is recognised, the class thresholds, the canary gate) and the workloads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import UsageError

MANIFEST_SCHEMA = 1
COSTS = ("light", "medium", "heavy")
BASELINE, CONTROL, CANDIDATE = "baseline", "control", "candidate"
ROLES = (BASELINE, CONTROL, CANDIDATE)
# How a candidate's code change is recognised: fewer ttg.convert_layout in measured kernels,
# any difference of the measured kernels' fingerprint, or not observed at all (no IR can be
# seen, e.g. Triton's interpreter: every clean task gets round b and B is never decided).
CONVERT_LAYOUT, FINGERPRINT, UNOBSERVED = "convert_layout", "fingerprint", "unobserved"
CODE_CHANGES = (CONVERT_LAYOUT, FINGERPRINT, UNOBSERVED)
CLASSES = ("G", "C", "B", "R", "K", "X")
SELECTIONS = ("canary", "all")
DEFAULT_GOOD_PCT, DEFAULT_REGRESSION_PCT = 5.0, -3.0
DEFAULT_IDLE_UTIL_PCT = 10.0


@dataclass(frozen=True)
class Source:
    commit: str
    path: str | None = None            # a git checkout or a tree with a COMMIT file
    package: str | None = None         # the Python package that must come from import_from
    import_from: str | None = None
    binary: str | None = None          # a file inside the package whose sha256 is recorded


@dataclass(frozen=True)
class Cell:
    name: str
    role: str
    env: dict                          # name -> value; None unsets the variable


@dataclass(frozen=True)
class Correctness:
    """The library's own accuracy tests for a workload: a file (optionally `-k`), or node
    ids; narrowing to part of a file needs a stated reason."""
    file: str | None = None
    k: str | None = None
    node_ids: tuple[str, ...] | None = None
    reason: str | None = None
    pytest_args: tuple[str, ...] = ()   # e.g. a vendor's compatibility plugin, --quick


@dataclass(frozen=True)
class Workload:
    id: str
    op: str
    op_file: str | None
    family: str
    cost: str
    canary: bool
    correctness: Correctness | None
    dtypes: tuple[str, ...] | None = None
    inventory_override_reason: str | None = None
    benchmark: str | None = None               # the parametrized call measured (its id)
    benchmark_scope_reason: str | None = None  # why only that call

    @property
    def op_name(self) -> str:
        """The name zlh resolves: `op:op_file` where the corpus has files, else `op`, with
        `[benchmark]` when the workload measures one parametrized call."""
        name = f"{self.op}:{self.op_file}" if self.op_file else self.op
        return f"{name}[{self.benchmark}]" if self.benchmark else name


@dataclass(frozen=True)
class Device:
    backend: str
    physical_device: str
    visible_device_count: int = 1
    name_contains: str | None = None
    idle_util_pct_max: float = DEFAULT_IDLE_UTIL_PCT


@dataclass(frozen=True)
class Gate:
    classes: dict                      # canary id -> allowed classes
    max_k: int = 0


@dataclass(frozen=True)
class Protocol:
    adapter: str
    cells: tuple[Cell, ...]
    timed_cells: tuple[str, ...]
    canary_order: tuple[str, ...]
    timer: str
    dtypes: tuple[str, ...]
    timeouts_s: dict
    code_change: str
    gate: Gate
    measured_launch_floor: int = 0
    scrub: tuple[str, ...] = ()
    bench: dict = field(default_factory=dict)
    shapes: str | None = None
    good_pct: float = DEFAULT_GOOD_PCT
    regression_pct: float = DEFAULT_REGRESSION_PCT

    def cell(self, name: str) -> Cell:
        return next(c for c in self.cells if c.name == name)

    @property
    def baseline(self) -> Cell:
        return self.cells[0]

    @property
    def candidate(self) -> Cell:
        return next(c for c in self.cells if c.role == CANDIDATE)

    @property
    def controls(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.role == CONTROL)

    def env_keys(self) -> list[str]:
        """Every variable some cell sets or unsets (the 'effective env' of a cell)."""
        return sorted({k for c in self.cells for k in c.env})


@dataclass(frozen=True)
class Manifest:
    campaign_id: str
    claim: str
    sources: dict     # "compiler" | "library" | "zlh" -> Source (library may be None)
    device: Device
    protocol: Protocol
    workloads: tuple[Workload, ...]
    sha256: str
    path: Path | None = None

    def workload(self, task_id: str) -> Workload:
        return next(w for w in self.workloads if w.id == task_id)

    def selected(self, selection: str) -> list[Workload]:
        """Canary: the canaries in canary order; all: every workload in manifest order."""
        if selection == "canary":
            return [self.workload(i) for i in self.protocol.canary_order]
        return list(self.workloads)


class ManifestError(UsageError):
    """A manifest with violations: one line each, every one naming its field."""

    def __init__(self, where: str, violations: list[str]):
        self.violations = list(violations)
        lines = [f"{where}: {v}" for v in violations]
        super().__init__("\nzlh: ".join(lines))


def build(doc: dict, sha: str, path: Path | None = None) -> Manifest:
    """Typed records from a document without violations."""
    sources = {name: (Source(**doc["sources"][name]) if doc["sources"].get(name) else None)
               for name in ("compiler", "library", "zlh")}
    return Manifest(campaign_id=doc["campaign_id"], claim=doc["claim"], sources=sources,
                    device=Device(**doc["device"]), protocol=_protocol(doc["protocol"]),
                    workloads=tuple(_workload(w) for w in doc["workloads"]), sha256=sha,
                    path=path)


def _protocol(p: dict) -> Protocol:
    thresholds = p.get("thresholds") or {}
    gate = p.get("canary_gate") or {}
    return Protocol(
        adapter=p["adapter"],
        cells=tuple(Cell(c["name"], c["role"], dict(c.get("env") or {})) for c in p["cells"]),
        timed_cells=tuple(p["timed_cells"]), canary_order=tuple(p["canary_order"]),
        timer=p["timer"], dtypes=tuple(p["dtypes"]), timeouts_s=dict(p["timeouts_s"]),
        code_change=p["code_change"],
        gate=Gate({k: tuple(v) for k, v in (gate.get("classes") or {}).items()},
                  int(_given(gate, "max_k", 0))),
        measured_launch_floor=int(_given(p, "measured_launch_floor", 0)),
        scrub=tuple(p.get("scrub") or ()), bench=dict(p.get("bench") or {}),
        shapes=p.get("shapes"),
        good_pct=float(_given(thresholds, "good_pct", DEFAULT_GOOD_PCT)),
        regression_pct=float(_given(thresholds, "regression_pct", DEFAULT_REGRESSION_PCT)))


def _given(doc: dict, key: str, default):
    """An optional field's value; null counts as not given (the validator lets it pass)."""
    value = doc.get(key)
    return default if value is None else value


def _workload(w: dict) -> Workload:
    c = w.get("correctness")
    correctness = None if c is None else Correctness(
        file=c.get("file"), k=c.get("k"),
        node_ids=tuple(c["node_ids"]) if c.get("node_ids") else None, reason=c.get("reason"),
        pytest_args=tuple(c.get("pytest_args") or ()))
    return Workload(id=w["id"], op=w["op"], op_file=w.get("op_file"), family=w["family"],
                    cost=w["cost"], canary=w["canary"], correctness=correctness,
                    dtypes=tuple(w["dtypes"]) if w.get("dtypes") else None,
                    inventory_override_reason=w.get("inventory_override_reason"),
                    benchmark=w.get("benchmark"),
                    benchmark_scope_reason=w.get("benchmark_scope_reason"))
