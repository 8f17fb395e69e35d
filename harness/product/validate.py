"""A campaign manifest read: strict JSON, every field checked (one line per violation, naming
its field), then typed (manifest.py).

Nothing is repaired or defaulted silently: an unknown key is a violation too (a misspelt
optional field would otherwise vanish), as is a protocol promise zlh does not keep (fresh
process per op cell, one physical device, serial measurement must all be true).
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import adapters
import backends

from ..common.documents import loads_json
from ..common.errors import UsageError
from ..common.files import read_bytes
from ..common.fields import Checker
from .manifest import COSTS, MANIFEST_SCHEMA, Manifest, ManifestError, build
from .receipts import sha256_bytes
from .validate_protocol import check_protocol

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SHA = re.compile(r"^[0-9a-f]{40}$")
ONE_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
TOP_KEYS = {"schema_version", "campaign_id", "claim", "sources", "device", "protocol",
            "workloads", "notes"}
SOURCE_KEYS = {"commit", "path", "package", "import_from", "binary"}
DEVICE_KEYS = {"backend", "physical_device", "visible_device_count", "name_contains",
               "idle_util_pct_max"}
WORKLOAD_KEYS = {"id", "op", "op_file", "family", "cost", "canary", "correctness", "dtypes",
                 "inventory_override_reason", "notes", "benchmark", "benchmark_scope_reason"}
CORRECTNESS_KEYS = {"file", "k", "node_ids", "reason", "pytest_args"}
# pytest options a manifest may not pass: they would move where the tests run or what
# records their outcome (the receipt's log and counts).
PYTEST_ARGS_REFUSED = ("--rootdir", "--confcutdir", "--junitxml", "--junit-xml",
                       "--result-log", "-o", "--override-ini", "-c", "--pyargs")


def load_manifest(path: str | Path) -> Manifest:
    """Read, validate and type a manifest; ManifestError lists every violation."""
    if str(path) == "":
        raise UsageError("manifest: an empty path; name the manifest file")
    path = Path(path)
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise UsageError(f"manifest {path}: cannot be read ({exc.strerror or exc})") from None
    doc = parse_document(data, str(path))
    problems = violations(doc)
    if problems:
        raise ManifestError(f"manifest {path}", problems)
    return build(doc, sha256_bytes(data), path)


def parse_document(data: bytes, where: str) -> dict:
    """Strict JSON: NaN and Infinity are refused (no JSON zlh reads or writes holds them)."""
    try:
        doc = loads_json(data.decode("utf-8"), constants=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"manifest {where}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"manifest {where}: the top level must be a JSON object")
    return doc


def violations(doc: dict) -> list[str]:
    """Every violation of a manifest document, in field order."""
    c = Checker()
    c.keys(doc, TOP_KEYS, "")
    if doc.get("schema_version") != MANIFEST_SCHEMA:
        c.bad("schema_version", f"must be {MANIFEST_SCHEMA}, got {doc.get('schema_version')!r}")
    c.text(doc, "campaign_id", "campaign_id", pattern=NAME)
    c.text(doc, "claim", "claim")
    protocol = c.obj(doc, "protocol", "protocol")
    adapter = _adapter(c, protocol) if protocol is not None else None
    _sources(c, doc, adapter)
    _device(c, doc)
    workloads = _workloads(c, doc)
    if protocol is not None:
        check_protocol(c, protocol, workloads)
    return c.problems


def _adapter(c: Checker, protocol: dict) -> str | None:
    return c.text(protocol, "adapter", "protocol.adapter",
                  choices=[a for a in adapters.adapter_names() if a != "user"])


def _sources(c: Checker, doc: dict, adapter: str | None) -> None:
    sources = c.obj(doc, "sources", "sources")
    if sources is None:
        return
    c.keys(sources, {"compiler", "library", "zlh"}, "sources")
    for name in ("compiler", "library", "zlh"):
        where = f"sources.{name}"
        if name == "library" and adapter == "builtin":
            if sources.get(name) is not None:
                c.bad(where, "must be null for adapter builtin (its kernels are zlh's own)")
            continue
        entry = c.obj(sources, name, where)
        if entry is None:
            continue
        c.keys(entry, {"commit"} if name == "zlh" else SOURCE_KEYS, where)
        if not isinstance(entry.get("commit"), str) or not SHA.match(entry.get("commit")):
            c.bad(f"{where}.commit", "must be a lowercase 40-character hex commit, got "
                  f"{entry.get('commit')!r}")
        if name == "zlh":
            continue
        path = c.absolute(entry, "path", f"{where}.path", optional=False)
        c.text(entry, "package", f"{where}.package", pattern=re.compile(r"^[A-Za-z_][\w.]*$"))
        where_from = c.absolute(entry, "import_from", f"{where}.import_from", optional=False)
        if name == "library" and path and where_from and \
                not PurePosixPath(where_from).is_relative_to(PurePosixPath(path)):
            c.bad(f"{where}.import_from", f"must be inside sources.library.path ({path}): the "
                  f"adapter imports the library from its checkout")
        binary = c.text(entry, "binary", f"{where}.binary", optional=True)
        if binary and not _relative_inside(binary):
            c.bad(f"{where}.binary", f"must be a path inside the package, got {binary!r}")


def _device(c: Checker, doc: dict) -> None:
    device = c.obj(doc, "device", "device")
    if device is None:
        return
    c.keys(device, DEVICE_KEYS, "device")
    name = c.text(device, "backend", "device.backend")
    if name is not None:
        try:
            backends.get_backend(name)
        except backends.UnknownBackend as exc:
            c.bad("device.backend", str(exc))
    physical = c.text(device, "physical_device", "device.physical_device")
    if physical is not None and not ONE_DEVICE.match(physical):
        c.bad("device.physical_device", f"must name one device (an index or a UUID), got "
              f"{physical!r}")
    count = c.number(device, "visible_device_count", "device.visible_device_count",
                     optional=True, integer=True)
    if count is not None and count != 1:
        c.bad("device.visible_device_count", f"must be 1 (one physical device for all "
              f"cells), got {count}")
    c.text(device, "name_contains", "device.name_contains", optional=True)
    c.number(device, "idle_util_pct_max", "device.idle_util_pct_max", optional=True, low=0,
             high=100)


def _workloads(c: Checker, doc: dict) -> list[dict]:
    workloads = doc.get("workloads")
    if not isinstance(workloads, list) or not workloads:
        c.bad("workloads", "must be a non-empty list" if "workloads" in doc else "missing")
        return []
    good = []
    for i, w in enumerate(workloads):
        where = f"workloads[{i}]"
        if not isinstance(w, dict):
            c.bad(where, "must be an object")
            continue
        c.keys(w, WORKLOAD_KEYS, where)
        c.text(w, "id", f"{where}.id", pattern=NAME)
        c.text(w, "op", f"{where}.op")
        c.text(w, "op_file", f"{where}.op_file", optional=True)
        c.text(w, "family", f"{where}.family")
        c.text(w, "cost", f"{where}.cost", choices=COSTS)
        if not isinstance(w.get("canary"), bool):
            c.bad(f"{where}.canary", "must be true or false" if "canary" in w else "missing")
        c.strings(w, "dtypes", f"{where}.dtypes", optional=True)
        c.text(w, "inventory_override_reason", f"{where}.inventory_override_reason",
               optional=True)
        _benchmark(c, w, where)
        _correctness(c, w, where)
        good.append(w)
    _unique(c, good)
    return good


def _benchmark(c: Checker, w: dict, where: str) -> None:
    """`benchmark`: the id of the one parametrized call the workload measures (as in a
    pytest node id, `dtype0`); narrowing what is timed needs `benchmark_scope_reason`."""
    call = c.text(w, "benchmark", f"{where}.benchmark", optional=True)
    reason = c.text(w, "benchmark_scope_reason", f"{where}.benchmark_scope_reason",
                    optional=True)
    if call is not None and any(ch in call for ch in "[]\n"):
        c.bad(f"{where}.benchmark", f"a parametrized call's id without brackets, got {call!r}")
    if call is not None and not (reason or "").strip():
        c.bad(f"{where}.benchmark_scope_reason",
              "narrowing the benchmark to one call needs a stated reason")
    if reason is not None and call is None:
        c.bad(f"{where}.benchmark_scope_reason", "given without benchmark (nothing narrowed)")


def _correctness(c: Checker, w: dict, where: str) -> None:
    where = f"{where}.correctness"
    if "correctness" not in w:
        c.bad(where, "missing (null: the output gate against the first cell only)")
        return
    spec = w["correctness"]
    if spec is None:
        return
    if not isinstance(spec, dict):
        c.bad(where, "must be an object or null")
        return
    c.keys(spec, CORRECTNESS_KEYS, where)
    file = c.text(spec, "file", f"{where}.file", optional=True)
    k = c.text(spec, "k", f"{where}.k", optional=True)
    nodes = c.strings(spec, "node_ids", f"{where}.node_ids", optional=True)
    args = spec.get("pytest_args")          # repeats are fine: `-p a -p b`
    if args is not None and not (isinstance(args, list) and
                                 all(isinstance(a, str) and a.strip() for a in args)):
        c.bad(f"{where}.pytest_args", "must be a list of non-empty strings")
        args = None
    for arg in args or ():
        if arg.split("=", 1)[0] in PYTEST_ARGS_REFUSED:
            c.bad(f"{where}.pytest_args", f"{arg!r} would change where the tests run or how "
                                          f"their outcome is recorded; zlh sets it")
    if file is not None and not _relative_inside(file):
        c.bad(f"{where}.file", f"must be a path inside the library checkout, got {file!r}")
    if file is None and nodes is None and "file" not in spec and "node_ids" not in spec:
        c.bad(where, "give file (optionally with k) or node_ids")
    if file is not None and nodes is not None:
        c.bad(where, "give file or node_ids, not both")
    if k is not None and nodes is not None:
        c.bad(where, "k and node_ids are exclusive")
    if (k is not None or nodes is not None) and not (
            isinstance(spec.get("reason"), str) and spec["reason"].strip()):
        c.bad(f"{where}.reason", "narrowing the tests (k or node_ids) needs a stated reason")


def _unique(c: Checker, workloads: list[dict]) -> None:
    seen_ids: dict = {}
    seen_targets: dict = {}
    for i, w in enumerate(workloads):
        wid, target = w.get("id"), (w.get("op"), w.get("op_file"))
        if not all(isinstance(v, (str, type(None))) for v in (wid, *target)):
            continue                    # a field of the wrong type is its own violation
        if wid in seen_ids:
            c.bad(f"workloads[{i}].id", f"{wid!r} repeats workloads[{seen_ids[wid]}]")
        seen_ids.setdefault(wid, i)
        if target in seen_targets:
            c.bad(f"workloads[{i}]", f"(op, op_file) {target!r} repeats "
                  f"workloads[{seen_targets[target]}]")
        seen_targets.setdefault(target, i)


def _relative_inside(path: str) -> bool:
    pure = PurePosixPath(path)
    return not pure.is_absolute() and ".." not in pure.parts
