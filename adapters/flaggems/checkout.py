"""Where the FlagGems checkouts are: named (`--flaggems-dir`/FLAGGEMS_DIR, `--vllm`/
FLAGGEMS_VLLM_DIR), found where only one can be meant (the checkout the importable flag_gems
comes from, ./FlagGems), or named by an op's absolute pytest node id; and the `op[CALL]` form
that selects one parametrized call.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from harness.common import log
from harness.common.errors import PreflightError
from harness.store.identity import git_commit

FLAGGEMS_DIR_ENV = "FLAGGEMS_DIR"
FLAGGEMS_VLLM_DIR_ENV = "FLAGGEMS_VLLM_DIR"
PACKAGES = {"flaggems": "flag_gems", "vllm": "flaggems_vllm"}


def checkout_root(dirs: dict, found: dict, repo: str = "flaggems") -> Path:
    """The checkout of `repo` (`dirs[repo]`, else one found for FlagGems: `dirs` and `found`
    then say which and how); PREFLIGHT_FAILED when there is none or it has no benchmark/."""
    directory = dirs.get(repo)
    label = "FlagGems" if repo == "flaggems" else "FlagGems-vllm"
    option, env = (("--flaggems-dir", FLAGGEMS_DIR_ENV) if repo == "flaggems"
                   else ("--vllm", FLAGGEMS_VLLM_DIR_ENV))
    if not directory and repo == "flaggems":
        directory = _discover(dirs, found)
    if not directory:
        raise PreflightError("flaggems_dir", f"no {label} checkout given: pass {option} DIR "
                                             f"or set {env}" + (
                                                 " (none found beside an importable "
                                                 "flag_gems or in ./FlagGems)"
                                                 if repo == "flaggems" else ""))
    root = Path(directory).expanduser().resolve()
    if not (root / "benchmark").is_dir():
        raise PreflightError("flaggems_dir", f"{label} checkout {root} (set by {option} or "
                                             f"{env}) has no benchmark/ directory")
    return root


def _discover(dirs: dict, found: dict) -> str | None:
    """A FlagGems checkout nobody named, where only one is in sight; two different ones are
    PREFLIGHT_FAILED naming both. The one used is said, and remembered in `dirs`/`found`."""
    seen: dict = {}
    for how, place in discover_checkouts():
        seen.setdefault(place, how)
    if len(seen) > 1:
        shown = "; ".join(f"{place} ({how})" for place, how in seen.items())
        raise PreflightError("flaggems_dir", f"no FlagGems checkout given and more than one "
                                             f"in sight: {shown}; pass --flaggems-dir DIR "
                                             f"or set {FLAGGEMS_DIR_ENV}")
    if not seen:
        return None
    (place, how), = seen.items()
    dirs["flaggems"], found["flaggems"] = str(place), how
    log.progress(f"FlagGems checkout: {place} ({how}; --flaggems-dir chooses another)")
    return str(place)


def discover_checkouts() -> list[tuple[str, Path]]:
    """(how, checkout) of the FlagGems checkouts in sight: the one the importable flag_gems
    comes from (…/src/flag_gems: an editable install of a checkout), and ./FlagGems; each
    only when it holds benchmark/."""
    out = []
    try:
        spec = importlib.util.find_spec(PACKAGES["flaggems"])
    except (ImportError, ValueError):
        spec = None
    origin = getattr(spec, "origin", None)
    if origin:
        checkout = Path(origin).resolve().parent.parent.parent
        if (checkout / "benchmark").is_dir():
            out.append(("the importable flag_gems", checkout))
    local = Path("FlagGems")
    if (local / "benchmark").is_dir():
        out.append(("./FlagGems", local.resolve()))
    return out


def split_call(name: str) -> tuple[str, str | None]:
    """`op[CALL]` -> (op, CALL); anything else -> (name, None)."""
    if name.endswith("]") and "[" in name:
        base, _, call = name[:-1].partition("[")
        if base and call:
            return base, call
    return name, None


def node_checkout(name: str) -> Path | None:
    """The checkout an absolute pytest node id lies in (`/…/FlagGems/benchmark/test_x.py::
    test_y`: the folder holding benchmark/), else None."""
    file_part = name.partition("::")[0]
    if "::" not in name or not Path(file_part).is_absolute():
        return None
    for parent in Path(file_part).parents:
        if parent.name == "benchmark" and parent.is_dir():
            return parent.parent
    return None


def commit(root: Path) -> str | None:
    """The checkout's commit: git's, else the COMMIT file an exported tree (git archive)
    may carry."""
    found = git_commit(root)
    if found:
        return found
    stamp = root / "COMMIT"
    return stamp.read_text().strip() if stamp.is_file() else None
