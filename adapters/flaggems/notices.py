"""What the adapter tells FlagGems and the user besides cases: the shape file in the form
FlagGems' own lookup reads, and marker lines (skip guards ignored, another vendor's modules)."""
from __future__ import annotations

import atexit
import os
import sys
import tempfile
from pathlib import Path

import yaml

from harness.common import markers
from harness.common.markers import marker

_SHAPE_COPIES: dict[str, str] = {}


def upstream_shape_file(shapes) -> str | None:
    """FlagGems reads the shape file itself and wants `{key: {shapes: [...]}}`; a zlh file
    may hold bare lists. Give it the normalised document, written once per file content to a
    temporary file removed at exit."""
    if shapes is None:
        return None
    if shapes.sha256 not in _SHAPE_COPIES:
        doc = {key: {k: v for k, v in entry.items() if v != ""}
               for key, entry in shapes.doc.items()}
        fd, path = tempfile.mkstemp(prefix="zlh-shapes-", suffix=".yaml")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(doc, handle, sort_keys=False)
        atexit.register(lambda: os.path.exists(path) and os.unlink(path))
        _SHAPE_COPIES[shapes.sha256] = path
    return _SHAPE_COPIES[shapes.sha256]


def guard_marker(op: str, backend: str, node, reason: str) -> str:
    return marker("SKIP_GUARD_IGNORED", op=op, backend=backend, node=node.node_id,
                  detail=f"stale on this backend: {reason}")


def foreign_vendor_markers() -> list[str]:
    """FOREIGN_VENDOR_MODULE for each other vendor's backend modules found imported (only
    when flag_gems itself was imported: a FlagGems-vllm run must not import it for this)."""
    flag_gems = sys.modules.get("flag_gems")
    if flag_gems is None or not getattr(flag_gems, "__file__", None):
        return []
    vendor = getattr(flag_gems, "vendor_name", os.environ.get("GEMS_VENDOR"))
    backend_dir = Path(flag_gems.__file__).parent / "runtime" / "backend"
    vendors = sorted(p.name[1:] for p in backend_dir.glob("_*") if p.is_dir())
    loaded = set()
    for name in list(sys.modules):
        root = name.split(".")[-1] if name.startswith("flag_gems.runtime.backend._") else \
            name.split(".")[0]
        for other in vendors:
            if other != vendor and (root == f"_{other}" or root.startswith(f"_{other}_")):
                loaded.add(other)
    return [markers.marker("FOREIGN_VENDOR_MODULE", active=vendor, loaded=other)
            for other in sorted(loaded)]
