"""Every workload of a manifest against the corpus (`zlh ops`): present, not skip-marked, its
dtypes within the adapter's vocabulary, its accuracy tests present in the library checkout.

A workload may carry `inventory_override_reason` to be run although the corpus scan does not
list it or marks it skipped; the reason is frozen into the task matrix and its receipt.

What every cell's `zlh bench` would refuse is refused here, before anything is frozen: the
shape file (readable, serving each op), each cell's environment switches, the timer and L2
policy on the manifest's backend.
"""
from __future__ import annotations

from pathlib import Path

import adapters
import backends

from ..common.errors import UsageError, ZlhError
from ..run.options import BenchOptions
from ..run.plan import check_timer
from ..run.shapes import ShapeFileError, load_shape_file
from .manifest import Manifest, Workload


def corpus_adapter(manifest: Manifest):
    library = manifest.sources.get("library")
    try:
        return adapters.get_adapter(manifest.protocol.adapter,
                                    flaggems_dir=library.path if library else None)
    except adapters.UnknownAdapter as exc:
        raise UsageError(str(exc)) from None


def cross_check(manifest: Manifest, adapter) -> tuple[list[str], dict[str, str]]:
    """(violations, {task id: the op name zlh runs})."""
    backend = backends.get_backend(manifest.device.backend)
    try:
        rows = {r["op"]: r for r in adapter.describe_ops(include_hidden=True)}
    except ZlhError as exc:
        return [f"corpus: {exc.message}"], {}
    problems, shapes = _protocol_problems(manifest, adapter, backend)
    resolved: dict[str, str] = {}
    for i, w in enumerate(manifest.workloads):
        where = f"workloads[{i}] ({w.id})"
        try:
            name = adapter.resolve(w.op_name)
        except (adapters.UnknownOp, ZlhError) as exc:
            if w.inventory_override_reason:
                resolved[w.id] = w.op_name
                continue
            problems.append(f"{where}: not in the corpus: {getattr(exc, 'message', exc)}")
            continue
        row = rows.get(name, {})
        if row.get("unconditional_skip") and not w.inventory_override_reason:
            problems.append(f"{where}: the corpus marks it skipped ({row.get('skip_marks')}); "
                            f"give inventory_override_reason to run it anyway")
        problems += _dtype_problems(adapter, backend, name, w, manifest, where)
        problems += _shape_problems(adapter, name, shapes, manifest, where)
        resolved[w.id] = name
    problems += test_file_problems(manifest)
    return problems, resolved


def _protocol_problems(manifest: Manifest, adapter, backend) -> tuple[list[str], object]:
    """(violations, the loaded shape file or None): shape file, cell switches, timer."""
    p, problems, shapes = manifest.protocol, [], None
    if p.shapes:
        try:
            shapes = load_shape_file(p.shapes)
        except ShapeFileError as exc:
            problems.append(f"protocol.shapes: {exc}")
            shapes = False
    for i, cell in enumerate(p.cells):
        try:
            adapter.check_environment({k: v for k, v in cell.env.items() if v is not None})
        except ZlhError as exc:
            problems.append(f"protocol.cells[{i}].env: {exc.message}")
        for name, value in cell.env.items():       # a value the backend replaces never applies
            forced = backend.forced_env().get(name)
            if forced is not None and (value is None or value.strip() != forced):
                problems.append(f"protocol.cells[{i}].env.{name}: backend {backend.name} sets "
                                f"{name}={forced} for every run; the cell's value would not "
                                f"apply")
    try:
        check_timer(BenchOptions.from_flat(timer=p.timer, l2=p.bench.get("l2", "warm")),
                    backend)
    except ZlhError as exc:
        problems.append(f"protocol.timer: {exc.message}")
    return problems, shapes


def _shape_problems(adapter, name: str, shapes, manifest: Manifest, where: str) -> list[str]:
    if shapes is False:                 # the shape file itself is already a violation
        return []
    try:
        adapter.check_shapes(name, shapes, manifest.protocol.bench.get("level", "core"))
    except adapters.MissingShapes as exc:
        return [f"{where}: {exc}"]
    return []


def _dtype_problems(adapter, backend, name: str, w: Workload, manifest: Manifest,
                    where: str) -> list[str]:
    dtypes = w.dtypes or manifest.protocol.dtypes
    field = f"{where}.dtypes" if w.dtypes else f"protocol.dtypes (for {w.id})"
    try:
        adapter.check_dtypes(name, backend, list(dtypes))
    except adapters.UnsupportedDtype as exc:
        return [f"{field}: {exc}"]
    return []


def test_file_problems(manifest: Manifest) -> list[str]:
    """Accuracy-test files a workload names that its library checkout does not hold."""
    library = manifest.sources.get("library")
    problems = []
    for i, w in enumerate(manifest.workloads):
        spec = w.correctness
        if spec is None:
            continue
        if library is None:
            problems.append(f"workloads[{i}] ({w.id}).correctness: no library checkout to "
                            f"run tests in (sources.library is null)")
            continue
        files = [spec.file] if spec.file else [n.split("::")[0] for n in spec.node_ids or ()]
        for file in files:
            if not (Path(library.path) / file).is_file():
                problems.append(f"workloads[{i}] ({w.id}).correctness: {file} not found "
                                f"under {library.path}")
    return problems
