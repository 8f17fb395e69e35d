"""The import graph of the code: no circle between modules, no arrow running up the layers,
and imports inside functions only where the allow list says why.

Every module under harness/, adapters/ and backends/ is parsed with `ast`; each `import` and
`from ... import` (module level and inside functions, relative ones resolved against the
importing module) gives an arrow between modules. `from pkg import name` points at the
submodule `pkg.name` when there is one, else at `pkg`. Imports under `if TYPE_CHECKING:` count
too: a circle a type checker sees is still a circle. Importing `a.b.c` first runs the
`__init__` of `a` and of `a.b`: the circle check follows those arrows as well (the layer check
does not: every module sits inside its own packages).

Run `python tests/project/test_architecture.py --report` for the modules per package, the largest
module and the largest function, and the imports made inside functions.
"""
from __future__ import annotations

import ast
import importlib
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("harness", "adapters", "backends")

# The layers, lowest first. A module may import from its own layer and the layers below,
# never from one above. A unit is the longest prefix listed here (`harness.ab` holds every
# module under harness/ab/). The Python API (harness/__init__.py, harness/api.py) sits on top
# with the CLI; its __init__ loads the API names on first use, so that the layers below can
# import harness.common without running it into the layers above.
LAYERS = [
    ["backends", "harness.version", "harness.common", "harness.launch"],  # runtimes, helpers, child processes
    ["harness.measure"],                                     # the timing core and its stats
    ["harness.store"],                                       # run directories, identities
    ["harness.telemetry", "harness.compile"],                # clocks; what the compiler did
    ["adapters"],                                            # where cases come from
    ["harness.run"],                                         # zlh bench
    ["harness.ab"],                                          # zlh ab
    ["harness.calibrate", "harness.embed"],                  # built on ab and run
    ["harness.corpus"],                                      # batches, screens, campaigns
    ["harness.product"],                                     # product campaigns
    ["harness.report"],                                      # pages over every root kind
    ["harness.cli", "harness", "harness.api", "harness.__main__"],
]

# The adapters give cases; they never time them.
ADAPTERS_NEVER = ("harness.measure", "harness.telemetry")

# Imports inside a function. Project modules: (importing module, imported module) -> why it
# cannot be at module level. Libraries are matched on their top-level name. PENDING lists the
# ones in files that are still being reworked elsewhere: each is to go, or to move into
# ALLOWED_INNER with its reason.
HEAVY = "heavy or optional library, imported only where it is used"
WORKER = "torch comes with it: a worker imports it after it has asked to end with its parent"
ALLOWED_INNER: dict[tuple[str, str], str] = {
    ("adapters.builtin", "adapters.builtin.kernels"):
        "Triton kernels: compiled or interpreted as the backend activated before decides",
    ("adapters.builtin.faults", "adapters.builtin.kernels"):
        "Triton kernels: compiled or interpreted as the backend activated before decides",
    ("harness.corpus.worker", "harness.run.options"): WORKER,
    ("harness.corpus.worker", "harness.run.runner"): WORKER,
    ("harness.corpus.worker", "harness.run.plan"): WORKER,
    ("harness.corpus.worker", "harness.run.phases"): WORKER,
    ("harness.corpus.worker", "adapters"): WORKER,
    ("harness.corpus.worker", "backends"): WORKER,
    ("harness.corpus.worker", "harness.compile.reset"): WORKER,
    ("harness.corpus.worker", "harness.compile.warm"): WORKER,
    ("harness.cli.common", "harness.ab.gate"):
        "zlh ab's statistics load only where --fail-on is parsed, not in every zlh bench process",
}
ALLOWED_INNER_LIBRARIES: dict[str, str] = {
    "torch": HEAVY,
    "triton": HEAVY,
    "torch_npu": "a vendor's torch extension, present on its machines only",
    "torch_musa": "a vendor's torch extension, present on its machines only",
    "flag_gems": "the library under test: imported by the adapter that measures it",
    "pytest": "the FlagGems benchmarks' test runner: needed only to collect their cases",
    "ray": "optional (the zlh[ray] extra): only the ray executor, once chosen, needs it",
}
PENDING_INNER: dict[tuple[str, str], str] = {}     # work in progress elsewhere; empty when none
PENDING_ALL: set[str] = set()
PENDING_CYCLES: list[set[str]] = []


@dataclass(frozen=True)
class Arrow:
    source: str          # importing module
    target: str          # imported project module, or a library's top-level name
    line: int
    inner: bool          # inside a function (or a lambda)
    project: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for top in TOP:
        for path in sorted((ROOT / top).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve(node: ast.ImportFrom, name: str, path: Path) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(name, path).split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class _Imports(ast.NodeVisitor):
    def __init__(self, name: str, path: Path, known: set[str]):
        self.name, self.path, self.known = name, path, known
        self.depth = 0
        self.arrows: list[Arrow] = []

    def _inside(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _inside

    def _add(self, target: str, line: int):
        project = target.split(".")[0] in TOP
        if project:
            while target and target not in self.known:
                target = target.rpartition(".")[0]
            if not target:
                return
        else:
            target = target.split(".")[0]
        self.arrows.append(Arrow(self.name, target, line, self.depth > 0, project))

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom):
        base = _resolve(node, self.name, self.path)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.known else base, node.lineno)


def arrows() -> list[Arrow]:
    """Every import between the modules (one arrow per module imported per statement)."""
    found = modules()
    known = set(found)
    out = []
    for name, path in found.items():
        visitor = _Imports(name, path, known)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        out.extend(dict.fromkeys(visitor.arrows))
    return out


def runtime_edges(found: list[Arrow]) -> set[tuple[str, str]]:
    """(importer, imported) for every project import, plus the package __init__ files the
    import runs first: `import a.b.c` runs a/__init__.py and a/b/__init__.py (those of the
    importer's own packages have run already)."""
    edges = set()
    for a in found:
        if not a.project:
            continue
        edges.add((a.source, a.target))
        parts = a.target.split(".")
        for n in range(1, len(parts)):
            package = ".".join(parts[:n])
            if not (a.source == package or a.source.startswith(package + ".")):
                edges.add((a.source, package))
    return edges


def unit(module: str) -> str:
    """The layer unit a module belongs to: the longest prefix named in LAYERS."""
    best = ""
    for layer in LAYERS:
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best = prefix
    return best


def level(module: str) -> int:
    u = unit(module)
    return next(i for i, layer in enumerate(LAYERS) if u in layer)


def cycles(edges) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    graph = defaultdict(set)
    for a, b in edges:
        if a != b:
            graph[a].add(b)
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(set(graph) | {b for bs in graph.values() for b in bs}):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def upward(found: list[Arrow]) -> list[str]:
    bad = []
    for a in found:
        if not a.project:
            continue
        if level(a.target) > level(a.source):
            bad.append(f"{a.source}:{a.line} imports {a.target} "
                       f"({unit(a.source)} is below {unit(a.target)})")
        if a.source.startswith("adapters") and a.target.startswith(ADAPTERS_NEVER):
            bad.append(f"{a.source}:{a.line} imports {a.target} (adapters never time)")
    return bad


def circles(found: list[Arrow]) -> list[list[str]]:
    pending = [set(c) for c in PENDING_CYCLES]
    return [c for c in cycles(runtime_edges(found)) if set(c) not in pending]


def inner_not_allowed(found: list[Arrow]) -> list[str]:
    bad = []
    for a in found:
        if not a.inner or (a.source, a.target) in ALLOWED_INNER or \
                (a.source, a.target) in PENDING_INNER:
            continue
        if not a.project and a.target in ALLOWED_INNER_LIBRARIES:
            continue
        bad.append(f"{a.source}:{a.line} imports {a.target} inside a function")
    return bad


def test_every_module_sits_in_a_layer():
    missing = [name for name in modules() if not unit(name)]
    assert not missing, missing


def test_no_import_circle():
    found = circles(arrows())
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_no_arrow_runs_up():
    bad = upward(arrows())
    assert not bad, "\n".join(bad)


def test_imports_inside_functions_are_allow_listed():
    bad = inner_not_allowed(arrows())
    assert not bad, "\n".join(bad)


def test_allow_lists_have_no_stale_entries():
    found = arrows()
    used = {(a.source, a.target) for a in found if a.inner}
    stale = sorted(set(ALLOWED_INNER) - used) + sorted(set(PENDING_INNER) - used)
    stale += [sorted(c) for c in PENDING_CYCLES
              if set(c) not in [set(x) for x in cycles(runtime_edges(found))]]
    assert not stale, stale


def public_faces() -> list[Path]:
    """harness/__init__.py, each harness/<package>/__init__.py, adapters' and backends'."""
    faces = [ROOT / "harness" / "__init__.py", ROOT / "adapters" / "__init__.py",
             ROOT / "backends" / "__init__.py"]
    return faces + sorted((ROOT / "harness").glob("*/__init__.py"))


def declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "__all__":
            return list(ast.literal_eval(node.value))
    return None


def test_every_public_face_declares_all():
    missing = [str(p.relative_to(ROOT)) for p in public_faces()
               if declared_all(p) is None and p.parent.name not in PENDING_ALL]
    assert not missing, missing


@pytest.mark.parametrize("package", ["harness", "adapters", "backends", "harness.cli",
                                     "harness.telemetry", "harness.compile.autotune"])
def test_all_names_exist(package):
    module = importlib.import_module(package)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


def report() -> str:
    """Modules per package, the largest module and function, the inner imports."""
    found = modules()
    per_package = defaultdict(int)
    largest_module, largest_function = ("", 0), ("", 0)
    for name, path in found.items():
        text = path.read_text()
        per_package[unit(name) or "?"] += 1
        lines = len(text.splitlines())
        if lines > largest_module[1]:
            largest_module = (name, lines)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > largest_function[1]:
                    largest_function = (f"{name}:{node.lineno} {node.name}", length)
    out = ["modules per package:"]
    out += [f"  {package:28} {count:3}" for package, count in sorted(per_package.items())]
    out.append(f"largest module:   {largest_module[0]} ({largest_module[1]} lines)")
    out.append(f"largest function: {largest_function[0]} ({largest_function[1]} lines)")
    everything = arrows()
    inner = [a for a in everything if a.inner]
    out.append(f"imports inside functions: {len(inner)} "
               f"({sum(a.project for a in inner)} of project modules)")
    out += [f"  {a.source}:{a.line} -> {a.target}" for a in inner]
    problems = upward(everything) + inner_not_allowed(everything)
    problems += [" <-> ".join(c) for c in circles(everything)]
    problems += [f"pending: {' <-> '.join(sorted(c))}" for c in PENDING_CYCLES]
    problems += [f"pending: {s} imports {t} inside a function ({why})"
                 for (s, t), why in PENDING_INNER.items()]
    out.append(f"problems: {len(problems)}")
    out += [f"  {p}" for p in problems]
    return "\n".join(out)


if __name__ == "__main__":
    if "--report" in sys.argv[1:]:
        print(report())
    else:
        print(__doc__)
