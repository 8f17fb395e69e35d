"""Which build of the compiler this process imports, and whether two runs' builds differ as
their sides meant them to.

zlh never installs the compiler under test: upstream Triton (`triton`), FlagTree (`flagtree`)
and ROCm's build (`pytorch-triton-rocm`) all install the same `triton` package. So a run
records which installed distribution provides the `triton` it imported — name, version, the
package's directory and a commit where one can be found (a VCS install's direct_url.json, the
git checkout of a source build, or a `+git<hash>` version) — and the caliber guard compares
those records: the two sides of an A/B are meant to run different compilers only when they
run different interpreters (`--python-a/-b`) or import triton from different places (a side's
PYTHONPATH), never by accident.
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

from .identity import git_commit

PACKAGE = "triton"
_GIT_VERSION = re.compile(r"\+git([0-9a-f]{7,40})")


def compiler_identity() -> dict | None:
    """{package, distribution, version, path, commit} of the `triton` this process imports;
    None when there is none. `distribution` is None for a source tree on PYTHONPATH that no
    installed distribution owns."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]).resolve()
    return dict(_identity_at(str(path), tuple(sys.path), _stamp(path)))


def _stamp(path: Path) -> tuple:
    """Changes when the package is installed again (its directory and __init__.py are
    replaced), another distribution is added beside it, or a source checkout holding it moves
    to another commit: the modification times of the package directory, its __init__.py, the
    directory holding it and a checkout's .git/HEAD and .git/index up to three levels above."""
    stamps = []
    heads = [up / ".git" / name for up in list(path.parents)[:3]     # a source checkout's
             for name in ("HEAD", "index")]
    for where in (path, path / "__init__.py", path.parent, *heads):
        try:
            stamps.append(where.stat().st_mtime_ns)
        except OSError:
            stamps.append(None)
    return tuple(stamps)


@functools.lru_cache(maxsize=32)
def _identity_at(where: str, search_path: tuple, stamp: tuple) -> dict:
    """compiler_identity's record for the package at `where`, computed once per process for
    one search path and one state of the installation: looking up the owning distribution
    reads every installed distribution's file list (more than a second with a large
    environment), too slow for a worker that plans one run after another."""
    path = Path(where)
    dist = _owner(path)
    version = dist.version if dist is not None else _module_version()
    return {"package": PACKAGE,
            "distribution": dist.metadata["Name"] if dist is not None else None,
            "version": version, "path": str(path),
            "commit": _commit(dist, path, version)}


def describe(identity: dict | None) -> str:
    """`flagtree 0.3.0 (commit 3059917e2df1) at /site/triton`, for messages."""
    if not identity:
        return "no compiler recorded"
    name = identity.get("distribution") or "unregistered source"
    commit = f" (commit {str(identity['commit'])[:12]})" if identity.get("commit") else ""
    return f"{name} {identity.get('version')}{commit} at {identity.get('path')}"


def short(identity: dict | None) -> str:
    """`flagtree 0.3.0`, `triton 3.9.0` (`triton (source tree) 3.4.0` for a checkout on
    PYTHONPATH): which compiler a side ran, for headers and reports."""
    if not isinstance(identity, dict) or not identity:
        return "compiler not recorded"
    name = identity.get("distribution") or f"{identity.get('package') or 'triton'} (source tree)"
    return f"{name} {identity.get('version') or '?'}"


def _owner(path: Path):
    """The installed distribution whose files hold `path` (the package directory), or whose
    editable install points at a directory holding it."""
    for dist in _claimants():
        try:
            located = Path(dist.locate_file(f"{PACKAGE}/__init__.py")).resolve().parent
        except (OSError, TypeError, ValueError):
            located = None
        if located == path or _editable_dir_holds(dist, path):
            return dist
    return None


_RECORDED = re.compile(rf"^(\.\./)?{PACKAGE}/", re.MULTILINE)   # RECORD; installed-files.txt


def _claimants():
    """The installed distributions that provide a top-level `triton`: declared in their
    top_level.txt, or else files under triton/ in their file list. What
    importlib.metadata.packages_distributions finds, read as text: that function parses every
    file list of the environment into paths (two seconds with torch's CUDA wheels), which a
    fresh round process would pay before its run."""
    for dist in importlib.metadata.distributions():
        try:
            declared = dist.read_text("top_level.txt")
            if declared and declared.strip():
                claims = PACKAGE in declared.split()
            else:
                listed = dist.read_text("RECORD") or dist.read_text("installed-files.txt")
                claims = bool(listed) and _RECORDED.search(listed) is not None
        except (OSError, UnicodeDecodeError):
            continue
        if claims:
            yield dist


def _direct_url(dist) -> dict:
    try:
        return json.loads(dist.read_text("direct_url.json") or "{}")
    except (ValueError, OSError):
        return {}


def _editable_dir_holds(dist, path: Path) -> bool:
    url = str(_direct_url(dist).get("url", ""))
    if not url.startswith("file://"):
        return False
    root = Path(url[len("file://"):]).resolve()
    return root == path or root in path.parents


def _commit(dist, path: Path, version: str | None) -> str | None:
    commit = ((_direct_url(dist).get("vcs_info") or {}).get("commit_id")
              if dist is not None else None)
    if commit:
        return commit
    installed = any(p.name in ("site-packages", "dist-packages") for p in path.parents)
    for parent in [] if installed else list(path.parents)[:3]:    # a source build's checkout
        if (parent / ".git").exists():
            return git_commit(parent)
    match = _GIT_VERSION.search(version or "")
    return match.group(1) if match else None


def _module_version() -> str | None:
    module = sys.modules.get(PACKAGE)
    if module is None:
        try:
            import triton as module  # heavy: imported only where used
        except Exception:  # noqa: BLE001 - a broken build still has an identity: its path
            return None
    return getattr(module, "__version__", None)


def compiler_findings(label: str, a: dict, b: dict) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the guard about the two sides' compilers (run.json infos `a`,
    `b`). A problem: the build differs although both sides ran the same interpreter and
    imported triton from the same place — it changed between the runs, so the difference is
    not what the A/B set out to compare. A warning: different interpreters importing one
    build (the A/B does not compare compilers). Nothing when a side recorded no compiler
    (runs written before zlh recorded it)."""
    ca, cb = a.get("compiler"), b.get("compiler")
    if not isinstance(ca, dict) or not isinstance(cb, dict):
        return [], []
    python_a = (a.get("versions") or {}).get("python_executable")
    python_b = (b.get("versions") or {}).get("python_executable")
    keys = ("distribution", "version", "path", "commit")
    same_build = all(ca.get(k) == cb.get(k) for k in keys)
    if not same_build and python_a == python_b and ca.get("path") == cb.get("path"):
        return [f"!!! [caliber] {label}: compiler differs: A={describe(ca)}, "
                f"B={describe(cb)}, although both sides ran {python_a} and imported triton "
                f"from the same place: the installed build changed between the runs (sides "
                f"are meant to differ in compiler only through --python-a/-b or "
                f"PYTHONPATH)"], []
    if same_build and python_a != python_b:
        return [], [f"WARNING [caliber] {label}: sides ran different interpreters "
                    f"(A={python_a}, B={python_b}) but the same compiler, {describe(ca)}: "
                    f"this A/B does not compare compilers"]
    return [], []
