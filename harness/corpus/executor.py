"""Who runs the corpus engine's units of work: one op attempt (of a batch, of a screen side) or
one command (a campaign card's `zlh ab`), on one device lane, ending as an `Attempt`.

The engine (batch.py, screen.py, campaign.py) decides what runs where and when: one lane per
device, its units one after another (never two measurements on one device at once), retries,
dtype and timer fallbacks, the verdicts. An executor decides how a unit runs and hands back
its exit status, log and run directory; the engine judges it (outcome.judge). The engine
gets its executor from `make_executor` only: the kinds are named here (`EXECUTORS`), their
interface is units.py.

`local` (units.py): the lane's units run on this machine (supervisor.py): an op in the lane's
reused worker, or with `fresh_process` in its own `zlh bench` process; a command in its own
process. The supervisor's guarantees hold for every attempt: the op timeout (TIMEOUT), a
worker that died (CRASH), a poisoned device, device memory held or a process switch changed
past the op's reset (the worker is replaced), a retry in a fresh worker (`renew`).

`ray` (ray_executor.py): a lane is a Ray actor holding one GPU of a Ray cluster; inside it a
local lane runs the units, so the same guarantees hold, and the actor's death is the op's
CRASH. `ray` is an optional library, imported only when this kind is chosen.
"""
from __future__ import annotations

from ..common.errors import UsageError
from ..common.fields import Fields
from .ray_executor import RayExecutor
from .units import Executor, LaneRunner, LocalExecutor, LocalLane, OpWork

EXECUTORS = {LocalExecutor.kind: LocalExecutor, RayExecutor.kind: RayExecutor}


def make_executor(kind: str = "local", **options) -> Executor:
    """The executor the corpus engine runs its units with (`options`: the kind's own, e.g.
    `fresh_process` for `local`; `address`, `backend` too for `ray`)."""
    try:
        cls = EXECUTORS[kind]
    except KeyError:
        raise UsageError(f"executor {kind!r}: not one of {', '.join(EXECUTORS)}") from None
    return cls(**options)


def executor_fields(f: Fields) -> tuple[str, str | None]:
    """A stored plan's executor and Ray address (an older plan has none: local)."""
    kind = f.str("executor", "local")
    if kind not in EXECUTORS:
        raise f.error("executor", " or ".join(EXECUTORS), kind)
    address = f.get("ray_address", None)
    if address is not None and not (isinstance(address, str) and address):
        raise f.error("ray_address", "null or auto or HOST:PORT", address)
    return kind, address


__all__ = ["EXECUTORS", "Executor", "LaneRunner", "LocalExecutor", "LocalLane", "OpWork",
           "RayExecutor", "executor_fields", "make_executor"]
