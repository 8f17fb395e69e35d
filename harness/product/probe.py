"""The child process of the contract check: started with a cell's environment, it reports
where each named package is imported from and which devices it sees, as one JSON line.

    python -m harness.product.probe '{"backend": "cuda", "packages": [...]}'

Each package entry is {"name", "package", "prepend"}: `prepend` puts a directory first on
sys.path, as the adapter does for its library checkout before importing it.
"""
from __future__ import annotations

import importlib
import json
import sys

import backends


def probe(spec: dict) -> dict:
    out: dict = {"python": sys.executable, "packages": {}}
    for entry in spec.get("packages", []):
        if entry.get("prepend"):
            sys.path.insert(0, entry["prepend"])
        try:
            module = importlib.import_module(entry["package"])
            out["packages"][entry["name"]] = {"file": getattr(module, "__file__", None)}
        except Exception as exc:  # noqa: BLE001 - reported, judged by the parent
            out["packages"][entry["name"]] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        backend = backends.get_backend(spec["backend"])
        indices = backend.enumerate_devices(env={}) if backend.is_available() else []
        out["device_count"] = len(indices)
        out["device_name"] = backend.identity(indices[0]).name if indices else None
    except Exception as exc:  # noqa: BLE001
        out["device_count"], out["device_error"] = 0, f"{type(exc).__name__}: {exc}"
    return out


def main() -> int:
    spec = json.loads(sys.argv[1])
    print("ZLH_PROBE " + json.dumps(probe(spec), sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
