"""A worker: one long-lived process that runs ops one after another.

`python -m harness.corpus.worker [--warm SPEC]` reads one job per line on stdin (JSON: op,
`args` — the `zlh bench` arguments a fresh process would get, `BenchOptions.to_argv` — log
path, argv; a round of an A/B adds `round` and `turns`, see corpus/rounds.py; `last`: the
worker is stopped after this job, so the reset between ops is skipped) and answers one
line per job on its original stdout (JSON: op, rc, message, pid, held_bytes, state_changed,
job_import_s: what this job spent importing zlh's runner and torch — a cold worker's first job
—, and in its first reply import_s: all its start imported). Its ready line says import_s too:
with `--warm` (a standby: {"op", "args"} of the lane's latest job; "activate": its device
context made too) it imports torch, zlh's runner and the adapter's library before it.
Everything an op prints — zlh's own lines, the library's, the compiler's, even at the
file-descriptor level — goes to that op's log, so the
protocol line is all the supervisor reads. Between ops the compiler's in-memory kernel and
tuner caches are emptied and the adapter drops its per-op state, so each op compiles into its
own private cache and measures as a fresh `zlh bench` would; what cannot be reset (a poisoned
device, device memory the op keeps alive, a global switch of torch it changed) ends the worker,
and the supervisor starts another.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import time
from pathlib import Path

from ..common import spelling
from ..common.environ import import_failure, safe_streams, std_stream
from ..common.errors import (EXIT_OK, EXIT_POISONED, DevicePoisonedError, OpExitError,
                             Terminated, ZlhError, one_line, op_exit_reason, run_write_failure)
from ..common.process import die_with_parent, install_terminate_handlers
from ..run import placement, process_state, turns
from .outcome import CRASH_RC, GIB, held_over_limit

PROTOCOL_VERSION = 2          # 2: a job carries `args` (zlh bench arguments), not `options`


def _raise_terminated(signum):
    raise Terminated(signum)      # the op's run.json says why: SIGTERM (or SIGHUP)


@contextlib.contextmanager
def _output_to(log: Path):
    """fd 1 and 2 (and Python's streams) into the op's log for the length of the op; after
    it, Python's streams are the worker's again, whatever the op made of them (replaced,
    closed), so that the next op's output reaches its own log."""
    streams = _flushed()
    saved = os.dup(1), os.dup(2)
    with open(log, "a", encoding="utf-8") as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        _JOB.update(log=handle, streams=streams)     # _say's way to the log, whatever the op
        try:                                         # did to Python's streams
            yield handle
        finally:
            _JOB.clear()
            _flushed()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sys.stdout, sys.stderr = (
                stream if not _closed(stream) else std_stream(fd) or stream
                for fd, stream in ((1, streams[0]), (2, streams[1])))


_JOB: dict = {}          # while an op runs: its log's handle, the worker's Python streams


def _closed(stream) -> bool:
    return getattr(stream, "closed", True) is not False


def _streams_closed() -> list[str]:
    """`python_streams: stdout closed` where the op closed a stream of the worker's own:
    what else holds it (a logging handler) would fail for every later op, so the worker is
    replaced."""
    streams = _JOB.get("streams") or ()
    return [f"python_streams: {name} closed" for name, stream in zip(("stdout", "stderr"),
                                                                      streams)
            if _closed(stream)]


def _flushed() -> tuple:
    """Python's streams (stdout, stderr), flushed where they can be (an op may have closed
    or replaced them)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    return sys.stdout, sys.stderr


def run_job(job: dict) -> dict:
    """One op: run it, keep its output in its log, reset state afterwards."""
    importing = time.perf_counter()
    import torch  # noqa: F401 - every op needs it: its import is the cold worker's cost
    from ..run import phases
    from ..run.options import BenchOptions      # after die_with_parent
    from ..run.runner import run_bench
    imported = time.perf_counter() - importing    # a cold worker's first job: seconds
    if not _RUNNER_IMPORT:
        _RUNNER_IMPORT.append(imported)
    rc, message, reason = EXIT_OK, "", ""
    marks = [("received", time.time())]         # where the job's time went: the worker's log
    log = Path(job["log"])
    log.parent.mkdir(parents=True, exist_ok=True)
    options = None
    # the device's lock (overlap), once the run takes it, is held through the reset below
    with _output_to(log), phases.job_holding():
        try:
            options = BenchOptions.from_argv(job.get("args", ()), argv=job.get("argv"))
            with _round_state(job.get("round"), options), turns.taking(job.get("turns")):
                marks.append(("set up", time.time()))
                _first_state()
                results = run_bench([job["op"]], options, echo=_say, progress=_say)
                marks.append(("bench", time.time()))
            marks.append(("turns ended", time.time()))
            rc = max((r.exit_code for r in results), default=EXIT_OK)
        except OpExitError as exc:          # the run is marked crashed; the worker lives
            rc, message = CRASH_RC, exc.reason
            _say(f"zlh: {exc.message}")
        except ZlhError as exc:
            rc, message = exc.exit_code, exc.message
            reason = run_write_failure(exc)     # disk full, read-only: not the op's fault
            _say(f"zlh: {exc.message}")
        except SystemExit as exc:
            if isinstance(exc, Terminated):
                raise
            rc, message = CRASH_RC, op_exit_reason(exc.code)   # outside a run; worker lives
            _say(f"zlh: {message}")
        except Exception as exc:  # noqa: BLE001 - reported as the op's failure, worker lives
            blamed = import_failure(exc, os.environ)      # the environment, not the op
            if blamed is not None:
                rc, message = blamed.exit_code, blamed.message
                _say(f"zlh: {message}")
            else:
                rc, message = 1, f"{type(exc).__name__}: {one_line(exc)}"
                _say(f"zlh: unexpected error: {message}")
        # the worker's last job (it is stopped after it): no later op inherits its state
        held, changed = (None, []) if job.get("last") else (
            _reset(options or BenchOptions()), _state_left())
    marks.append(("reset", time.time()))
    _say(f"zlh job {job['op']}: " + ", ".join(        # after the op's log: the worker's own
        f"{name} {end - start:.2f} s" for (_, start), (name, end) in zip(marks, marks[1:])))
    return {"op": job["op"], "rc": rc, "message": message, "pid": os.getpid(),
            "write_failure": reason, "held_bytes": held, "state_changed": changed,
            "job_import_s": round(imported, 3)}


@contextlib.contextmanager
def _round_state(spec, options):
    """A round of an A/B run in this worker (corpus/rounds.py): what a new process would
    change, re-randomised — the device allocator's cache emptied, then a random-size
    allocation (from the round's seed, up to `shift_max_bytes`) held while the round builds
    its inputs and measures, so that they land at new addresses. Best effort: a device that
    refuses is said in the op's log and the round runs as it is."""
    with contextlib.ExitStack() as stack:
        if spec:
            import backends
            try:
                backend = backends.backend_for(options.backend)
                device = options.device or 0
                backend.activate(device)        # as the run itself does first
                size = stack.enter_context(placement.elsewhere(
                    backend, device, int(spec["seed"]),
                    int(spec.get("shift_max_bytes", placement.SHIFT_MAX_BYTES))))
                _say(f"zlh: round re-randomised: seed {spec['seed']}, {size} bytes held "
                     f"before the inputs")
            except Exception as exc:  # noqa: BLE001 - the round still measures
                _say(f"zlh: round not re-randomised: {type(exc).__name__}: {one_line(exc)}")
        yield


_RUNNER_IMPORT: list[float] = []    # the first job's import of zlh's runner (torch with it)
_LEFT_BY_PREVIOUS: list = []         # the process state the previous op left (none yet)


_BEFORE_FIRST: list = []              # the state before the worker's first op


def _first_state() -> None:
    """The state before the worker's first op runs (process_state.py compares it)."""
    if not _LEFT_BY_PREVIOUS and not _BEFORE_FIRST:
        _BEFORE_FIRST.append(process_state.snapshot())


def _state_left() -> list[str]:
    """What this op changed in the process state the previous op left (process_state.py);
    said in the op's log. The worker's first op is compared with the state before it, on the
    switches no import is expected to set (process_state.FIRST_OP)."""
    state = process_state.snapshot()
    if _LEFT_BY_PREVIOUS:
        changed = process_state.changes(_LEFT_BY_PREVIOUS[0], state)
    elif _BEFORE_FIRST:
        changed = process_state.changes(_BEFORE_FIRST[0], state, only=process_state.FIRST_OP)
    else:
        changed = []
    changed += _streams_closed()
    _LEFT_BY_PREVIOUS[:] = [state]
    if changed:
        _say(f"zlh: the op changed its process ({'; '.join(changed)}): this worker is "
             f"replaced before the next op")
    return changed


def _say(line: str) -> None:
    """A line for the op's log (through the worker's handle on it while the op runs: the op
    may have closed or replaced Python's streams), else for the worker's stderr."""
    with contextlib.suppress(OSError, ValueError):
        if "log" in _JOB:
            _JOB["log"].write(line + "\n")
            _JOB["log"].flush()
        else:
            print(line, file=sys.stderr)


def _reset(options) -> int | None:
    """The state a later op must not inherit: compiled kernels, tuned configs, the adapter's
    library caches, the device allocator's cache. Returns the device memory still held
    afterwards (bytes; None where the runtime does not say): memory something of the op's
    keeps alive, which a later op on this device would run short of."""
    import adapters
    import backends
    from ..compile.reset import clear_kernel_caches
    with contextlib.suppress(Exception):
        clear_kernel_caches()
    with contextlib.suppress(Exception):
        adapters.get_adapter(options.adapter or
                             adapters.default_adapter_name(options.flaggems_dir),
                             flaggems_dir=options.flaggems_dir).reset_between_ops()
    try:
        backend = backends.backend_for(options.backend)
        backend.empty_cache()
        held = backend.memory_held()
        if held_over_limit(held):
            gc.collect()       # cycles (an exception's frames, graphs) still holding tensors:
            backend.empty_cache()      # a full collection only when something is held
            held = backend.memory_held()
    except Exception:  # noqa: BLE001 - a broken device is the supervisor's to judge
        return None
    if held_over_limit(held):
        _say(f"zlh: {held / GIB:.1f} GiB of device memory still held after the op's reset: "
             f"this worker is replaced before the next op")
    return held


# What the worker's start imported (seconds): before its ready line (a standby's warm start)
# and in its first job (zlh's runner, torch with it); its first reply says it.
_START = {"import_s": 0.0, "said": False}


def _warm(spec: dict) -> float:
    """A standby's start: what a first op would import — torch, zlh's runner, the adapter
    and its library (its `prepare` for the op the lane ran last) — and the checks its run
    makes before it starts (a dry-run plan: the compiler's identity, the shape file read;
    the digest Triton's first compile computes, what a first call imports lazily),
    before the worker says it is ready, while another worker measures. A failure here is
    left for the op to meet."""
    started = time.perf_counter()
    with contextlib.suppress(Exception):
        import adapters
        import backends
        from ..compile.warm import import_first_call_modules, key_compiler
        from ..run.options import BenchOptions
        from ..run.plan import plan_bench, preserved_environ
        from ..run.runner import run_bench  # noqa: F401 - imported for its imports
        options = BenchOptions.from_argv(spec.get("args", ()))
        name = options.adapter or adapters.default_adapter_name(options.flaggems_dir)
        adapter = adapters.get_adapter(name, flaggems_dir=options.flaggems_dir)
        backend = backends.backend_for(options.backend)
        if spec.get("op"):
            adapter.prepare([adapter.resolve(spec["op"])], backend, options.level, None)
            with preserved_environ():      # the checks a run makes before it starts: the
                plan_bench([spec["op"]], options, dry_run=True)   # compiler's identity, shapes
        if spec.get("activate"):           # the device context too (a turns-fresh spare;
                                           # a twins spare leaves it to its run)
            backend.activate(options.device or 0)
        key_compiler()                     # the compiler's digest its first compile needs
        import_first_call_modules()        # what a first call imports lazily
        _reset(options)        # whatever the import compiled or cached: not the first op's
    return time.perf_counter() - started


def main() -> int:
    safe_streams()
    spelling.use_flags()             # its errors reach a command-line batch or screen
    install_terminate_handlers(_raise_terminated)      # SIGTERM, SIGHUP
    die_with_parent()
    if sys.argv[1:2] == ["--warm"]:
        with _output_to(Path(os.devnull)):          # what imports print is nobody's log
            _START["import_s"] += _warm(json.loads(sys.argv[2]))
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    jobs = os.fdopen(os.dup(0), "r", encoding="utf-8")
    # Nothing but protocol lines on the original stdout: stray prints go to stderr. The jobs
    # come on a private copy of stdin: an op that reads or closes fd 0 cannot take them.
    os.dup2(2, 1)
    with open(os.devnull, "rb") as null:
        os.dup2(null.fileno(), 0)
    busy = False
    try:
        protocol.write(json.dumps({"ready": True, "pid": os.getpid(),
                                   "protocol": PROTOCOL_VERSION,
                                   "import_s": round(_START["import_s"], 3)}) + "\n")
        for line in jobs:
            if not line.strip():
                continue
            busy, job = True, json.loads(line)
            try:
                reply = run_job(job)
            except DevicePoisonedError as exc:
                reply = {"op": job.get("op"), "rc": EXIT_POISONED, "message": exc.message,
                         "pid": os.getpid()}
            if not _START["said"]:
                reply["import_s"] = round(_START["import_s"] + sum(_RUNNER_IMPORT), 3)
                _START["said"] = True
            protocol.write(json.dumps(reply) + "\n")
            busy = False
            if reply["rc"] == EXIT_POISONED:
                return EXIT_POISONED          # the device cannot be trusted in this process
    except Terminated as exc:
        if busy:
            raise                 # mid-job: unwind, so that the op's run is finalised
        # stopped between jobs (one run per process, or the supervisor done with it):
        # nothing is left to write, so skip the interpreter's teardown (seconds with torch
        # and a device context loaded) that the next run would wait for
        os._exit(exc.code)
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a process by the supervisor
    sys.exit(main())
