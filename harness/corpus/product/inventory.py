"""Every workload of a manifest against the corpus (`zlh ops`): present, not skip-marked, its
dtypes within the adapter's vocabulary, its accuracy tests present in the library checkout.

A workload may carry `inventory_override_reason` to be run although the corpus scan does not
list it or marks it skipped; the reason is frozen into the task matrix and its receipt.
"""
from __future__ import annotations

from pathlib import Path

import adapters
import backends

from ...common.errors import UsageError, ZlhError
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
    problems: list[str] = []
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
        resolved[w.id] = name
    problems += test_file_problems(manifest)
    return problems, resolved


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
