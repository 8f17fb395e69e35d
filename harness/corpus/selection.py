"""Which ops a corpus command runs.

`--all` is the whole corpus of the named checkouts minus functions with an unconditional
skip mark (unless `--include-skipped`) and minus the dismiss list; `--ops a,b` and
`--ops-file F` name them. Ops-file lines are `[vllm:]op[:op_file[:dtypes]]` (dtypes comma-separated,
empty = the op's own set), with `#` comments and blank lines. Dismiss-list lines are
`[repo:]op  # reason, date`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import adapters

from ..common.errors import UsageError, one_line
from ..common.files import read_bytes

# The curated dismiss list: package data (recipes/dismiss.txt links to it in a checkout), so
# an installed zlh has it too.
DEFAULT_DISMISS = Path(__file__).resolve().parent / "dismiss.txt"


@dataclass(frozen=True)
class Item:
    """One op of a corpus command: its name as the adapter resolves it, and the dtypes asked
    for it (None: the command's --dtypes, else the op's own)."""
    op: str
    dtypes: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return self.op


def parse_ops_file(path: str) -> list[Item]:
    text = _read(path, "ops file")
    items = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # `vllm:` names the repository and belongs to the op: vllm:op[:op_file[:dtypes]]
        repo, line = _split_repo(line)
        parts = line.split(":")
        if len(parts) > 3 or not parts[0].strip():
            raise UsageError(f"{path}:{number}: expected [vllm:]op[:op_file[:dtypes]], got "
                             f"{raw.strip()!r}")
        op = parts[0].strip()
        op_file = parts[1].strip() if len(parts) > 1 else ""
        dtypes = tuple(dict.fromkeys(d.strip() for d in parts[2].split(",") if d.strip())) \
            if len(parts) > 2 else ()
        if any(" " in p.strip() for p in parts[:2]):
            raise UsageError(f"{path}:{number}: op names have no spaces: {raw.strip()!r}")
        if len(parts) > 2 and parts[2].strip() and not dtypes:
            raise UsageError(f"{path}:{number}: the dtypes field {parts[2].strip()!r} names no "
                             f"dtype; leave it empty for the op's own")
        check_dtype_names(dtypes, f"{path}:{number}")
        items.append(Item(repo + (f"{op}:{op_file}" if op_file else op), dtypes or None))
    return items


def _split_repo(name: str) -> tuple[str, str]:
    """("vllm:", the rest) for a FlagGems-vllm name, else ("", name)."""
    return ("vllm:", name[len("vllm:"):]) if name.startswith("vllm:") else ("", name)


def _is_dtype(name: str) -> bool:
    import torch  # heavy: imported only where used
    return isinstance(getattr(torch, name, None), torch.dtype)


def check_dtype_names(names, where: str) -> None:
    """UsageError when a name is no torch dtype (a typo): without this, an op that lacks
    the dtype falls back to its own dtypes and the typo goes unnoticed."""
    if not names:
        return
    bad = [n for n in names if not _is_dtype(n)]
    if bad:
        raise UsageError(f"{where}: unknown dtype {', '.join(bad)} (torch dtype names, e.g. "
                         f"float16, bfloat16, float32)")


class DismissList(dict):
    """{op (with `repo:` when given): reason}; `where[op]` is the `file:line` naming it."""

    def __init__(self):
        super().__init__()
        self.where: dict[str, str] = {}
        self.curated = False        # the shipped list: names ops of the real corpus


def dismiss_list(path: str | None, all_ops: bool, no_dismiss: bool = False
                 ) -> DismissList | None:
    """What a corpus command leaves out: `--dismiss FILE` (for any selection), else the
    curated list with `--all` — unless `--no-dismiss`, which keeps every op."""
    if no_dismiss:
        if path:
            raise UsageError("--no-dismiss keeps every op; it does not go with --dismiss FILE")
        return None
    if path:
        return parse_dismiss(path)
    if not all_ops or not DEFAULT_DISMISS.is_file():
        return None
    curated = parse_dismiss(DEFAULT_DISMISS)
    curated.curated = True
    return curated


def parse_dismiss(path: str | Path) -> DismissList:
    text = _read(path, "dismiss list")
    out = DismissList()
    for number, raw in enumerate(text.splitlines(), 1):
        name, _, reason = raw.partition("#")
        if name.strip():
            out[name.strip()] = reason.strip() or "dismissed"
            out.where.setdefault(name.strip(), f"{path}:{number}")
    return out


def _read(path: str | Path, what: str) -> str:
    """A text input file (UTF-8, a byte-order mark dropped), or one UsageError line."""
    try:
        return read_bytes(path).decode("utf-8-sig")     # a FIFO is refused, not waited on
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{what} {path} cannot be read: {_why(exc)}") from None


def select(adapter, all_ops: bool, ops: Sequence[str] | None, ops_file: str | None,
           include_skipped: bool = False, dismiss: dict[str, str] | None = None,
           warn: Callable[[str], None] | None = None
           ) -> tuple[list[Item], list[tuple[str, str]]]:
    """(items to run, [(op, why left out)]). Exactly one of the three forms; names are
    resolved by the adapter here, so a typo is a usage error before anything runs. `warn`
    gets one line naming the ops named more than once, and one per dismiss entry that matches
    no op."""
    given = sum(bool(x) for x in (all_ops, ops, ops_file))
    if given != 1:
        raise UsageError("name the ops with exactly one of --all, --ops a,b,… or --ops-file F")
    if include_skipped and not all_ops:
        raise UsageError("--include-skipped goes with --all (ops named by --ops or an ops "
                         "file run whatever their skip marks)")
    left_out: list[tuple[str, str]] = []
    if all_ops:
        items = []
        for row in adapter.describe_ops():
            if row.get("unconditional_skip") and not include_skipped:
                left_out.append((row["op"], "unconditional skip mark"))
            else:
                items.append(Item(row["op"]))
    else:
        items = parse_ops_file(ops_file) if ops_file else [Item(o) for o in ops]
    items = _resolve(adapter, items, warn, "ops file" if ops_file and not all_ops else "--ops")
    if dismiss and warn is not None and not getattr(dismiss, "curated", False):
        _unmatched_dismissals(adapter, dismiss, warn)   # the curated list: another checkout
                                                        # may lack some of its ops
    if dismiss:
        kept = []
        for item in items:
            reason = dismiss.get(item.op) or dismiss.get(f"{adapter.repo_of(item.op)}:{item.op}")
            if reason:
                left_out.append((item.op, f"dismissed: {reason}"))
            else:
                kept.append(item)
        items = kept
    if not items:
        raise UsageError("the selection is empty: no op left to run" +
                         (f" ({len(left_out)} left out: skip marks or dismissed)"
                          if left_out else ""))
    return items, left_out


def _unmatched_dismissals(adapter, dismiss: dict[str, str], warn) -> None:
    """A dismiss entry naming no op of the corpus (a typo, a renamed op) dismisses nothing:
    said once per entry, with its file and line."""
    names = set()
    for row in adapter.describe_ops(include_hidden=True):
        names |= {row["op"], f"{row.get('repo', adapter.repo_of(row['op']))}:{row['op']}"}
    where = getattr(dismiss, "where", {})
    for name in dismiss:
        if name not in names:
            warn(f"WARNING: {where.get(name, 'dismiss list')}: dismiss entry {name!r} matches "
                 f"no op of the corpus; it dismisses nothing (check the name)")


def _resolve(adapter, items: Iterable[Item], warn=None, source: str = "--ops") -> list[Item]:
    resolved, seen, unknown, times = [], {}, [], {}
    for item in items:
        try:
            name = adapter.resolve(item.op)
        except adapters.UnknownOp as exc:
            unknown.append(one_line(exc, 300) + _dtype_hint(item.op, source))
            continue
        if name in seen and seen[name] != item.dtypes:
            raise UsageError(f"op {name} is named twice with different dtypes; name it once "
                             f"(op::dtype,dtype in an ops file)")
        times[name] = times.get(name, 0) + 1
        if name not in seen:
            seen[name] = item.dtypes
            resolved.append(Item(name, item.dtypes))
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise UsageError(unknown[0] + more)
    repeated = [f"{name} ({n} times)" for name, n in times.items() if n > 1]
    if repeated and warn is not None:          # one line, however often a name repeats
        shown = ", ".join(repeated[:10]) + (f" and {len(repeated) - 10} more"
                                           if len(repeated) > 10 else "")
        warn(f"WARNING: ops named more than once run once each (first occurrence kept): "
             f"{shown}")
    return resolved


def _dtype_hint(name: str, source: str) -> str:
    """`softmax:bfloat16` that names no op: the dtype stood where the op's file goes."""
    repo, rest = _split_repo(name)
    op, _, op_file = rest.partition(":")
    if not op_file or not all(_is_dtype(d.strip()) for d in op_file.split(",")):
        return ""
    if source == "ops file":
        return (f"; {op_file!r} stands where the op's file goes (op[:op_file[:dtypes]]): for "
                f"dtypes write {repo}{op}::{op_file}")
    return f"; {op_file!r} is a dtype: name ops with --ops and dtypes with --dtypes {op_file}"


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc).splitlines()[0]
