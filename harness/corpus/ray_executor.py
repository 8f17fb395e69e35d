"""The `ray` executor: each device lane of a corpus command is a Ray actor holding one GPU of a
Ray cluster (`num_gpus=1`: Ray sets the visibility variable, the actor checks it through the
backend), and the actor is the lane's reused worker's keeper (ray_actor.py): it runs op
after op in a local lane, so the supervisor's guarantees hold unchanged.

On the driver, a lane's runner calls its actor once per unit and waits for the answer. The
actor's death (killed, its node lost) is that op's CRASH, and the next unit (a retry) gets a
new actor; an actor that does not answer within the op timeout and the worker's start is
killed (TIMEOUT). One actor per lane, one call at a time: never two measurements on one GPU.
A screen's two sides of one lane share its actor (they run one after the other).

Run directories: the actors write them under the root the command names, so that root must
be on a file system every node and the driver share; the first unit of a lane checks it (a
file the actor writes there must be seen by the driver), one line otherwise.

Ray is an optional library (`pip install 'zlh[ray]'`), imported when this kind is used.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Sequence

from ..common.errors import PreflightError, UsageError, one_line
from ..common.files import atomic_write_text
from ..common.tsv import append_tsv_row
from ..run.child_env import ZLH_ROOT
from .outcome import CRASH_RC, TIMEOUT_RC, Attempt
from .ray_actor import PROBE_PREFIX, LaneActor
from .supervisor import GRACE_S, START_TIMEOUT_S, Lane, newest_run_dir, run_dirs
from .units import Executor, LaneRunner, OpWork

INSTALL = "pip install 'zlh[ray]' (or: pip install 'ray>=2.40')"
NAMESPACE = "zlh"                 # the actors' names are zlh-<lane>-<random>, in this namespace
ACTOR_START_S = 600.0             # a lane waits this long for a GPU of the cluster to come free
CALL_SLACK_S = 60.0               # beyond an op's timeout and its worker's start
PROBE_WAIT_S = 5.0                # a shared file system may show a new file a little later
# Set when this process exits (before Ray's own exit handler ends the connection): a lane's
# thread still waiting on its actor then ends without recording anything and starts nothing,
# so a command stopped by Ctrl-C or SIGTERM leaves its cut-short ops to --resume.
CLOSING = threading.Event()
WAIT_STEP_S = 0.5                 # a lane waits on its actor in steps this long (see closing)
CLOSE_WAIT_S = 5.0                # at exit, how long the lanes get to stop waiting
WAITING: set[int] = set()         # the lane threads waiting on an actor now
RECORD_COLUMNS = ("op", "log", "node", "gpus", "actor_pid", "started", "ended", "ray_s", "rc")


def import_ray():
    # Ray joins a cluster on its own when any call finds it not joined; zlh joins once, in
    # connect(), and a call made while the process exits must not join again from a thread.
    os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")
    try:
        import ray  # optional library: only the ray executor needs it
    except ImportError:
        raise UsageError(f"--executor ray needs Ray, which is not installed for "
                         f"{sys.executable}: {INSTALL}") from None
    return ray


def connect(address: str | None):
    """Ray, connected to the cluster at `address` (`auto`: the one this host runs or
    RAY_ADDRESS names); a process already connected stays on its cluster."""
    ray = import_ray()
    if CLOSING.is_set():                    # this process is ending: never join again
        _ending()
    if not ray.is_initialized():
        with own_signal_handlers():
            try:
                ray.init(address=address or "auto", namespace=NAMESPACE, log_to_driver=False,
                         logging_level=logging.ERROR)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise UsageError(f"--ray-address {address or 'auto'}: no Ray cluster to join "
                                 f"({one_line(exc, 160)}); start one (ray start --head "
                                 f"--num-gpus N) or name its HOST:PORT") from None
        atexit.register(closing)            # runs before Ray's handler (registered earlier)
    return ray


@contextlib.contextmanager
def own_signal_handlers():
    """The process's Python handlers of SIGTERM, SIGHUP and SIGINT put back after what runs
    inside: joining a cluster installs Ray's core worker's own (it prints a stack and ends the
    process), and zlh's ending — one line, what finished kept, the run directory finalised —
    must stay (only the main thread can set them; elsewhere nothing is changed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    kept = {sig: signal.getsignal(sig) for sig in
            (getattr(signal, n) for n in names if hasattr(signal, n))}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            if handler is not None:
                signal.signal(sig, handler)


def closing() -> None:
    """This process exits: the lanes stop waiting on their actors (each within a wait step)
    before Ray's own exit handler ends the connection — a thread still inside a Ray call
    then could crash the interpreter on its way out."""
    CLOSING.set()
    deadline = time.time() + CLOSE_WAIT_S
    while WAITING and time.time() < deadline:
        time.sleep(0.05)


def wait_for(ray, ref, limit: float | None):
    """`ray.get(ref)` within `limit` seconds (GetTimeoutError past it), in steps, so that a
    process that exits meanwhile finds its lanes out of Ray's calls (closing)."""
    deadline = None if limit is None else time.time() + limit
    me = threading.get_ident()
    WAITING.add(me)
    try:
        while True:
            if CLOSING.is_set():
                _ending()
            step = WAIT_STEP_S if deadline is None else max(0.0, min(WAIT_STEP_S,
                                                                     deadline - time.time()))
            try:
                return ray.get(ref, timeout=step)
            except ray.exceptions.GetTimeoutError:
                if deadline is not None and time.time() >= deadline:
                    raise
    finally:
        WAITING.discard(me)


def _ending() -> None:
    """A lane's thread while this process exits: it stops here, recording nothing."""
    raise SystemExit(0)


def cluster_lanes(address: str | None, devices: list[int] | None,
                  option: str = "--devices") -> list[int]:
    """The lanes of a command on the Ray cluster: one per GPU of the cluster (or those of
    `devices`, each below the cluster's GPU count)."""
    ray = connect(address)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus < 1:
        raise PreflightError("device", f"--executor ray: the Ray cluster at {address or 'auto'} "
                                       f"has no GPU (start its nodes with --num-gpus N)")
    devices = devices or list(range(gpus))
    if any(d >= gpus for d in devices):
        raise PreflightError("device", f"{option} {','.join(map(str, devices))}: the Ray "
                                       f"cluster has {gpus} GPU(s), lanes 0 to {gpus - 1}")
    return devices


@functools.cache
def _actor_class():
    return import_ray().remote(LaneActor)


def _python_path() -> str:
    return os.pathsep.join(p for p in (ZLH_ROOT, os.environ.get("PYTHONPATH")) if p)


class ActorHolder:
    """The actor of one device lane, shared by the lane's runners; started when a unit needs
    it, again after it died or was killed."""

    def __init__(self, ray, label: str, backend: str | None):
        self.ray, self.label, self.backend = ray, label, backend
        self.handle = None
        self.info: dict = {}
        self.users = 0
        self.started = 0                  # actors started so far (a new one probes again)

    def actor(self):
        if CLOSING.is_set() or not self.ray.is_initialized():
            _ending()
        if self.handle is None:
            self.handle = self._start()
            self.started += 1
        return self.handle

    def _start(self):
        name = f"zlh-{re.sub(r'[^A-Za-z0-9_.-]', '_', self.label)}-{uuid.uuid4().hex[:8]}"
        actor = _actor_class().options(
            num_gpus=1, num_cpus=0, name=name, namespace=NAMESPACE, max_restarts=0,
            runtime_env={"env_vars": {"PYTHONPATH": _python_path()}}).remote(self.backend)
        exceptions = self.ray.exceptions
        try:
            self.info = self.ray.get(actor.ready.remote(), timeout=ACTOR_START_S)
        except exceptions.GetTimeoutError:
            self.ray.kill(actor, no_restart=True)
            raise PreflightError("device", f"--executor ray: no GPU of the Ray cluster came "
                                           f"free for lane {self.label} within "
                                           f"{ACTOR_START_S:g} s") from None
        except exceptions.RayError as exc:
            raise PreflightError("ray", f"the Ray actor of lane {self.label} did not start: "
                                        f"{one_line(exc, 300)}") from None
        if self.info.get("problem"):
            self.ray.kill(actor, no_restart=True)
            raise PreflightError("device", f"--executor ray, lane {self.label} on node "
                                           f"{self.info.get('node')}: {self.info['problem']}")
        return actor

    def kill(self) -> None:
        """The actor is gone (killed now if it was not): the next unit gets a new one."""
        if self.handle is not None and not CLOSING.is_set():
            try:
                self.ray.kill(self.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already dead: nothing to kill
                pass
        self.handle = None


class RayLane(LaneRunner):
    """One runner of a lane (a slot of its actor): its units, one remote call each."""

    def __init__(self, lane: Lane, holder: ActorHolder, worker_log: Path | None,
                 fresh_process: bool):
        super().__init__(lane)
        self.holder, self.ray = holder, holder.ray
        self.worker_log = None if fresh_process else worker_log
        self.record = worker_log.with_name(worker_log.stem + ".ray.tsv") if worker_log \
            else None
        self.slot = uuid.uuid4().hex
        self.checked: set[tuple[int, Path]] = set()     # (the holder's actor, directory)

    def run_op(self, work: OpWork) -> Attempt:
        before = run_dirs(work.out)
        started = time.time()
        limit = work.timeout_s + START_TIMEOUT_S + 2 * GRACE_S + CALL_SLACK_S
        worker_log = str(self.worker_log) if self.worker_log else None
        reply = self._call("run_op", work.out.parent, limit, self.slot, self.lane, worker_log,
                           work)
        if isinstance(reply, str):
            return self._lost(reply, work.log, started, newest_run_dir(work.out, before))
        attempt, info = reply
        self._note(self.record, work.op, work.log, attempt, info)
        return dataclasses.replace(attempt, elapsed_s=attempt.elapsed_s + info["ray_s"])

    def run_command(self, cmd: Sequence[str], log: Path,
                    timeout_s: float | None = None) -> Attempt:
        started = time.time()
        limit = None if timeout_s is None else timeout_s + 2 * GRACE_S + CALL_SLACK_S
        reply = self._call("run_command", log.parent, limit, self.slot, self.lane, list(cmd),
                           str(log), timeout_s)
        if isinstance(reply, str):
            return self._lost(reply, log, started, None)
        attempt, info = reply
        self._note(log.with_name(log.stem + ".ray.tsv"), "-", log, attempt, info)
        return dataclasses.replace(attempt, elapsed_s=attempt.elapsed_s + info["ray_s"])

    def _call(self, method: str, directory: Path, limit: float | None, *args):
        """The actor's answer (its `ray_s`: the call's time beyond the actor's own, what Ray
        adds to the unit's elapsed time), or why there is none ("timeout", the actor died)."""
        actor = self.holder.actor()
        self._check_shared(actor, directory)
        exceptions = self.ray.exceptions
        called = time.time()
        try:
            reply = wait_for(self.ray, getattr(actor, method).remote(*args), limit)
        except exceptions.GetTimeoutError:
            self.holder.kill()
            return "timeout"
        except exceptions.RayTaskError as exc:          # raised by zlh's code in the actor
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, Exception) else exc) from None
        except exceptions.RayError as exc:              # the actor died: killed, node lost
            if CLOSING.is_set():                        # or this process is ending
                _ending()
            self.holder.kill()
            return f"the Ray actor of lane {self.lane.label} died: {one_line(exc, 200)}"
        except Exception:
            if CLOSING.is_set():
                _ending()
            raise
        if CLOSING.is_set():
            _ending()
        reply[1]["ray_s"] = max(0.0, time.time() - called -
                                (reply[1]["ended"] - reply[1]["started"]))
        return reply

    def _lost(self, why: str, log: Path, started: float, run_dir: Path | None) -> Attempt:
        timed_out = why == "timeout"
        if timed_out:
            why = f"the Ray actor of lane {self.lane.label} did not answer in time"
        if not log.exists():        # the actor went before the attempt's log: keep one anyway
            with contextlib.suppress(OSError):
                atomic_write_text(log, f"zlh: {why} (the attempt wrote nothing here)\n")
        return Attempt(TIMEOUT_RC if timed_out else CRASH_RC, time.time() - started, log,
                       run_dir, why)

    def _check_shared(self, actor, directory: Path) -> None:
        """Once per actor and directory: a file the actor writes there is seen here (one file
        system), else one line."""
        if (self.holder.started, directory) in self.checked:
            return
        directory.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        node = self.holder.info.get("node", "?")
        try:
            written = Path(self.ray.get(actor.probe.remote(str(directory), token), timeout=60))
        except self.ray.exceptions.RayError as exc:
            raise UsageError(f"--executor ray: the actor of lane {self.lane.label} on node "
                             f"{node} cannot write under {directory} ({one_line(exc, 160)}): "
                             f"the root must be on a file system every Ray node shares with "
                             f"this host") from None
        deadline = time.time() + PROBE_WAIT_S
        while not (written.is_file() and written.read_text(encoding="utf-8") == token):
            if time.time() > deadline:
                raise UsageError(f"--executor ray: {written}, written by the actor of lane "
                                 f"{self.lane.label} on node {node}, is not seen here: the "
                                 f"root must be on a file system every Ray node shares with "
                                 f"this host")
            time.sleep(0.1)
        written.unlink()
        self.checked.add((self.holder.started, directory))

    def _note(self, record: Path | None, op: str, log: Path, attempt: Attempt,
              info: dict) -> None:
        """Where and when a unit ran, a line in `record`: an op's in .workers/dev<d>.ray.tsv,
        a command's beside its log (<log name>.ray.tsv)."""
        if record is None:
            return
        record.parent.mkdir(parents=True, exist_ok=True)
        append_tsv_row(record, RECORD_COLUMNS, (
            op, log.name, self.holder.info.get("node", "-"),
            ",".join(self.holder.info.get("gpus", [])) or "-", info.get("pid", "-"),
            f"{info['started']:.6f}", f"{info['ended']:.6f}", f"{info['ray_s']:.4f}",
            attempt.rc))

    def renew(self) -> None:
        self._quietly("renew", self.slot)

    def close(self) -> None:
        self._quietly("close", self.slot)
        self.holder.users -= 1
        if self.holder.users <= 0:
            self.holder.kill()

    def _quietly(self, method: str, *args) -> None:
        """A call whose failure only means the actor is gone (its worker with it); none
        while the process exits (Ray ends the actors then)."""
        if self.holder.handle is None or CLOSING.is_set():
            return
        try:
            self.ray.get(getattr(self.holder.handle, method).remote(*args),
                         timeout=4 * GRACE_S + CALL_SLACK_S)
        except self.ray.exceptions.RayError:
            self.holder.kill()


class RayExecutor(Executor):
    kind = "ray"

    def __init__(self, fresh_process: bool = False, address: str | None = None,
                 backend: str | None = None):
        self.fresh_process, self.address, self.backend = fresh_process, address, backend
        self.holders: dict[str, ActorHolder] = {}
        self.lock = threading.Lock()

    def open_lane(self, lane: Lane, worker_log: Path | None = None) -> RayLane:
        ray = connect(self.address)
        with self.lock:
            holder = self.holders.get(lane.label)
            if holder is None:
                holder = self.holders[lane.label] = ActorHolder(ray, lane.label, self.backend)
            holder.users += 1
        return RayLane(lane, holder, worker_log, self.fresh_process)


__all__ = ["RayExecutor", "RayLane", "cluster_lanes", "connect", "PROBE_PREFIX"]
