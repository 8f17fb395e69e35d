"""What must hold before a campaign measures anything; the first check that fails ends it with
`PREFLIGHT_FAILED check=<name>` (exit 3) and nothing is run.

    frozen_hash      manifest.json, manifest.sha256, task-matrix.json, budget.json and the
                     frozen shape file agree with each other
    source_commit    the compiler and library checkouts and zlh itself are at the named
                     commits (a git checkout, or a tree carrying a COMMIT file)
    targets          every task's op resolves in the corpus, its accuracy tests exist
    import_path      a process with the cells' environment imports the compiler and the
                     library from the frozen paths (the compiler binary's sha256 is recorded)
    visible_devices  exactly the manifest's device count is visible to it (and its name)
    device_idle      the device's utilisation is at most the manifest's bound in one of
                     three readings a second apart (skipped, with the reason recorded, where
                     the backend has no telemetry tool)
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import adapters
import backends

from ..common.errors import PreflightError, ZlhError, one_line
from ..common.files import read_text
from ..launch import launcher
from ..store.identity import git_commit
from .cells import cell_lane
from .freeze import BUDGET, MATRIX, MANIFEST, MANIFEST_SHA, SHAPES, Frozen, plan_difference
from .inventory import corpus_adapter, test_file_problems
from .receipts import ZLH_ROOT, sha256_file

PROBE_TIMEOUT_S = 300.0
IDLE_READINGS, IDLE_INTERVAL_S = 3, 1.0


def check_contract(frozen: Frozen, python: str = sys.executable) -> dict:
    """Run every check in order; the contract receipt's body when all hold."""
    checks: list[dict] = []
    observed: dict = {"python": python}
    _frozen_hashes(frozen, checks)
    observed["sources"] = _sources(frozen, checks)
    _targets(frozen, checks)
    observed.update(_probe(frozen, python, checks))
    observed["telemetry"] = _idle(frozen, checks)
    return {"kind": "contract", "campaign_id": frozen.manifest.campaign_id,
            "selection": frozen.matrix.get("selection"),
            "manifest_sha256": frozen.manifest.sha256, "frozen_dir": str(frozen.path),
            "checks": checks, "observed": observed}


def _ok(checks: list[dict], name: str, detail: str, status: str = "ok") -> None:
    checks.append({"check": name, "status": status, "detail": detail})


def _frozen_hashes(frozen: Frozen, checks: list[dict]) -> None:
    sha = sha256_file(frozen.path / MANIFEST)
    recorded = read_text(frozen.path / MANIFEST_SHA, errors="replace").split()
    claims = {MANIFEST_SHA: recorded[0] if recorded else None,
              MATRIX: frozen.matrix.get("manifest_sha256"),
              BUDGET: frozen.budget.get("manifest_sha256")}
    for name, value in claims.items():
        if value != sha:
            raise PreflightError("frozen_hash", f"{frozen.path / name} names manifest sha256 "
                                 f"{value}, {MANIFEST} hashes to {sha}")
    if frozen.matrix.get("campaign_id") != frozen.manifest.campaign_id:
        raise PreflightError("frozen_hash", f"{MATRIX} belongs to campaign "
                             f"{frozen.matrix.get('campaign_id')!r}")
    want = frozen.matrix.get("shapes_sha256")
    if want is not None:
        have = sha256_file(frozen.path / SHAPES) if (frozen.path / SHAPES).is_file() else None
        if have != want:
            raise PreflightError("frozen_hash", f"{frozen.path / SHAPES} hashes to {have}, "
                                 f"the task matrix names {want}")
    edited = plan_difference(frozen)
    if edited:
        raise PreflightError("frozen_hash", f"{frozen.path / edited} (edited after prepare?)")
    _ok(checks, "frozen_hash", f"manifest sha256 {sha}")


def source_commit(path: Path) -> str | None:
    """The commit a tree is at: git's HEAD, else the first word of its COMMIT file."""
    commit = git_commit(path)
    if commit:
        return commit
    stamp = path / "COMMIT"
    if stamp.is_file():
        words = read_text(stamp, errors="replace").split()
        return words[0] if words else None
    return None


def _sources(frozen: Frozen, checks: list[dict]) -> dict:
    found = {}
    for name, source in frozen.manifest.sources.items():
        if source is None:
            continue
        path = ZLH_ROOT if name == "zlh" else Path(source.path)
        actual = source_commit(path) if path.is_dir() else None
        if actual != source.commit:
            why = (f"is at {actual}" if actual else "has no git HEAD and no COMMIT file"
                   if path.is_dir() else "does not exist")
            raise PreflightError("source_commit", f"{name} {path} {why}; the manifest names "
                                 f"{source.commit}")
        found[name] = {"path": str(path), "commit": actual}
    _ok(checks, "source_commit", ", ".join(f"{n} {v['commit'][:12]}" for n, v in found.items()))
    return found


def _targets(frozen: Frozen, checks: list[dict]) -> None:
    adapter = corpus_adapter(frozen.manifest)
    for task in frozen.matrix["tasks"]:
        wanted = frozen.manifest.workload(task["task_id"]).op_name
        try:
            resolved = adapter.resolve(wanted)
        except (adapters.UnknownOp, ZlhError) as exc:
            if task.get("inventory_override_reason"):
                continue
            raise PreflightError("targets", f"task {task['task_id']}: {wanted} does not "
                                 f"resolve: {getattr(exc, 'message', exc)}") from None
        if resolved != task["op_name"]:
            raise PreflightError("targets", f"task {task['task_id']}: {wanted} resolves to "
                                 f"{resolved}, the task matrix names {task['op_name']}")
    problems = test_file_problems(frozen.manifest)
    if problems:
        raise PreflightError("targets", problems[0])
    _ok(checks, "targets", f"{len(frozen.matrix['tasks'])} task(s) resolve")


def _probe(frozen: Frozen, python: str, checks: list[dict]) -> dict:
    manifest = frozen.manifest
    packages = [{"name": name, "package": s.package,
                 "prepend": s.import_from if name == "library" else None}
                for name, s in manifest.sources.items() if s is not None and s.package]
    lane = cell_lane(manifest, manifest.protocol.baseline, python)
    spec = {"backend": manifest.device.backend, "packages": packages}
    try:
        proc = launcher.capture([python, "-m", "harness.product.probe", json.dumps(spec)],
                                lane.env, PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise PreflightError("import_path", f"{python} could not be probed: {exc}") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ZLH_PROBE ")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise PreflightError("import_path", f"{python} probe failed (rc={proc.returncode}): "
                             f"{tail}")
    seen = json.loads(lines[-1][len("ZLH_PROBE "):])
    observed = {"imports": _imports(manifest, seen, python, checks)}
    observed["device"] = _devices(manifest, seen, checks)
    return observed


def _imports(manifest, seen: dict, python: str, checks: list[dict]) -> dict:
    out = {}
    for name, source in manifest.sources.items():
        if source is None or not source.package:
            continue
        got = seen["packages"].get(name, {})
        file = got.get("file")
        if not file:
            raise PreflightError("import_path", f"{python} cannot import {source.package} "
                                 f"({one_line(got.get('error') or 'no file')})")
        if not Path(file).resolve().is_relative_to(Path(source.import_from).resolve()):
            raise PreflightError("import_path", f"{python} imports {source.package} from "
                                 f"{file}, not from {source.import_from}")
        out[name] = {"package": source.package, "file": file}
        if source.binary:
            binary = Path(file).parent / source.binary
            if not binary.is_file():
                raise PreflightError("import_path", f"{binary} (sources.{name}.binary) is "
                                     f"missing")
            out[name]["binary"], out[name]["binary_sha256"] = str(binary), sha256_file(binary)
    _ok(checks, "import_path", ", ".join(f"{n} {v['file']}" for n, v in out.items()))
    return out


def _devices(manifest, seen: dict, checks: list[dict]) -> dict:
    device = manifest.device
    count, name = seen.get("device_count"), seen.get("device_name")
    if count != device.visible_device_count:
        raise PreflightError("visible_devices", f"{count} device(s) visible with "
                             f"{device.backend} device {device.physical_device}, the manifest "
                             f"binds {device.visible_device_count}"
                             + (f" ({seen['device_error']})" if seen.get("device_error") else ""))
    if device.name_contains and device.name_contains not in (name or ""):
        raise PreflightError("visible_devices", f"the visible device is {name!r}, the manifest "
                             f"wants a name containing {device.name_contains!r}")
    _ok(checks, "visible_devices", f"{count} visible: {name}")
    return {"count": count, "name": name, "backend": device.backend,
            "physical_device": device.physical_device}


def _idle(frozen: Frozen, checks: list[dict]) -> dict | None:
    device = frozen.manifest.device
    backend = backends.get_backend(device.backend)
    if not backend.telemetry_command:
        _ok(checks, "device_idle", f"backend {backend.name} has no telemetry tool: not checked",
            status="skipped")
        return None
    for reading in range(IDLE_READINGS):         # busy means busy in every reading
        samples = backend.read_telemetry()
        sample = next((s for s in samples or () if str(s.index) == device.physical_device),
                      None)
        if sample is None or sample.util_pct is None:
            raise PreflightError("device_idle", f"no utilisation reading for {backend.name} "
                                 f"device {device.physical_device} "
                                 f"({backend.telemetry_command[0]})")
        if sample.util_pct <= device.idle_util_pct_max:
            break
        if reading + 1 < IDLE_READINGS:
            time.sleep(IDLE_INTERVAL_S)
    if sample.util_pct > device.idle_util_pct_max:
        raise PreflightError("device_idle", f"{backend.name} device {device.physical_device} "
                             f"is busy: utilisation {sample.util_pct:g}% > "
                             f"{device.idle_util_pct_max:g}%")
    _ok(checks, "device_idle", f"utilisation {sample.util_pct:g}%")
    return sample.to_dict()
