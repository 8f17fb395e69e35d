"""The environment switches a corpus root was started under: recorded in batch.json,
screen.json and campaign.json, and compared when the root is resumed, so that a resume under
other values (a compiler switch, ZLH_*, a visibility variable) never measures half the corpus
one way and half the other without a word."""
from __future__ import annotations

from pathlib import Path

import backends

from ..common.errors import UsageError
from ..common.log import Echo
from ..common.process import PARENT_ENV
from ..store import identity
from . import files


def environment_switches(adapter_prefixes=(), environ=None) -> dict:
    """The environment switches a corpus root records: the variables run.json records (the
    compiler's, zlh's, every backend's visibility variables, the adapter's), less the
    parent-process marker a child of zlh carries."""
    visibility = [k for b in backends.all_backends() for k in b.visibility_keys]
    env = identity.recorded_env(identity.env_prefixes(visibility, adapter_prefixes), environ)
    env.pop(PARENT_ENV, None)
    return env


def env_changes(recorded: dict, now: dict) -> list[str]:
    """`NAME: 'old' -> 'new'` (or unset) for each switch whose value differs."""
    shown = lambda v: "unset" if v is None else repr(v)      # noqa: E731
    return [f"{k}: {shown(recorded.get(k))} -> {shown(now.get(k))}"
            for k in sorted(set(recorded) | set(now)) if recorded.get(k) != now.get(k)]


def check_resume_env(recorded: dict | None, now: dict, where: str, allow: bool,
                     warn: Echo) -> list[str]:
    """A resume under other environment switches than the root was started with would
    measure half its ops one way and half the other: UsageError naming the differences,
    unless `allow` (then a warning). The differences (none for an older root that recorded
    no switches)."""
    changes = env_changes(recorded, now) if recorded is not None else []
    if changes and not allow:
        raise UsageError(f"environment switches differ from those {where} records "
                         f"({'; '.join(changes)}): a resume now would measure its ops two "
                         f"ways; set them back, or add --allow-env-change to go on anyway")
    if changes:
        warn(f"zlh: WARNING resuming under other environment switches ({'; '.join(changes)}): "
             f"the ops run from now on are measured under the new values (recorded in "
             f"{where})")
    return changes


def record_env_change(root: Path, change: dict) -> None:
    """batch.json of a resume allowed under other switches: the new values, and the change
    (when, from, to) appended to `env_changes`."""
    doc = files.read_batch_json(root)
    doc.pop("schema_version", None)
    doc["env"] = change["to"]
    doc["env_changes"] = [*(doc.get("env_changes") or []), change]
    files.write_batch_json(root, doc)
