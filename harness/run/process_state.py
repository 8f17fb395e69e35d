"""What an op may change in its process that the next op of a reused worker would inherit and
a fresh process would not: torch's global switches (default dtype and device, grad mode,
deterministic mode, TF32 and reduced-precision matmul flags, cuDNN flags, float32 matmul
precision, CPU threads), the working directory, the interpreter's own (file mode mask, stop
signal handlers, warnings made errors, logging switched off, Python threads left running:
not a thread pool's idle workers, not the placeholders of threads Python did not start), and
torch's public functions (in `torch`, `torch.nn.functional` and on `torch.Tensor`) replaced
by a monkeypatch left in place.

A worker takes a snapshot after each op and compares it with the one the previous op left;
what differs ends the worker before the next op (note `process_state=NAME,…`), as leaked
device memory does. The first op of a worker is compared with the state before it, on the
switches no import is expected to set (FIRST_OP: the default dtype and device, grad mode,
deterministic mode, threads, the working directory, the interpreter's switches but its
threads): importing a library during the op may set the others itself (FlagGems' benchmark
package turns TF32 off), start a thread or wrap torch's functions, which a fresh process does
as well.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

_TORCH_SWITCHES = {
    "default_dtype": lambda t: str(t.get_default_dtype()),
    "default_device": lambda t: str(t.get_default_device()),
    "grad_enabled": lambda t: t.is_grad_enabled(),
    "deterministic_algorithms": lambda t: (t.are_deterministic_algorithms_enabled(),
                                           t.is_deterministic_algorithms_warn_only_enabled()),
    "float32_matmul_precision": lambda t: t.get_float32_matmul_precision(),
    "num_threads": lambda t: t.get_num_threads(),
    "cuda_matmul_allow_tf32": lambda t: t.backends.cuda.matmul.allow_tf32,
    "cuda_matmul_fp16_reduced":
        lambda t: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    "cuda_matmul_bf16_reduced":
        lambda t: t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    "cudnn_enabled": lambda t: t.backends.cudnn.enabled,
    "cudnn_allow_tf32": lambda t: t.backends.cudnn.allow_tf32,
    "cudnn_benchmark": lambda t: t.backends.cudnn.benchmark,
    "cudnn_deterministic": lambda t: t.backends.cudnn.deterministic,
}


# Public functions an op could monkeypatch and leave patched: a later op's baseline would
# call the replacement. Names present in both snapshots are compared by identity (a module
# imported in between adds names, which is no change); a replacement that torch itself made
# (importing torch._dynamo wraps torch.manual_seed, say) keeps a `torch…` __module__ and is
# not counted.
_PATCHABLE = {"torch": lambda t: t, "torch.nn.functional": lambda t: t.nn.functional,
              "torch.Tensor": lambda t: t.Tensor}


def _attributes(owner) -> dict:
    """{public callable name: (id, defining module)}. A module's own namespace only (reading
    names through getattr would import torch's lazily loaded submodules); a class's
    inherited methods too (torch.Tensor's come from its C base class)."""
    if isinstance(owner, type):
        items = []
        for name in dir(owner):
            try:
                items.append((name, getattr(owner, name)))
            except Exception:  # noqa: BLE001 - a descriptor that cannot be read on the class
                continue
    else:
        items = list(vars(owner).items())
    return {name: (id(value), str(getattr(value, "__module__", None) or ""))
            for name, value in items if not name.startswith("_") and callable(value)}


_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))


def _python_state(state: dict) -> None:
    """The interpreter's own switches an op may leave changed: the file mode mask (a later
    run's files unreadable), the handlers of the stop signals (a stop ignored), warnings made
    errors (a later op's warning fails it), logging switched off, and the Python threads
    alive (one left spinning slows every later measurement)."""
    state["umask"] = _umask()
    state["signal_handlers"] = tuple(repr(signal.getsignal(s)) for s in _SIGNALS)
    warnings = sys.modules.get("warnings")
    state["warnings_as_errors"] = sum(1 for f in getattr(warnings, "filters", ())
                                      if f and f[0] == "error")
    logging = sys.modules.get("logging")
    if logging is not None:
        state["logging_disabled"] = logging.root.manager.disable
    state["python_threads"] = frozenset(
        thread.ident for thread in threading.enumerate()
        if not isinstance(thread, threading._DummyThread) and not pool_worker(thread))


def pool_worker(thread: threading.Thread) -> bool:
    """A worker of a concurrent.futures pool (a compiler's, a library's): it waits idle for
    its pool's next task, spinning nothing, and a pool grows its workers as its load does."""
    target = getattr(thread, "_target", None)
    return getattr(target, "__module__", "") == "concurrent.futures.thread"


def _umask() -> str:
    """The file mode mask, read where the system shows it (setting it to read it would hold
    another mask for an instant, for the process's other threads too)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return oct(int(line.split()[1], 8))
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return oct(mask)


def snapshot() -> dict:
    """The switches as they are now; one that cannot be read (an older torch) is left out."""
    state = {}
    try:
        state["cwd"] = os.getcwd()
    except OSError:                  # the directory was removed under the process
        state["cwd"] = None
    _python_state(state)
    torch = sys.modules.get("torch")
    if torch is None:
        return state
    for name, read in _TORCH_SWITCHES.items():
        try:
            state[name] = read(torch)
        except Exception:  # noqa: BLE001 - a switch this torch does not have
            continue
    for name, owner in _PATCHABLE.items():
        try:
            state[name] = _attributes(owner(torch))
        except Exception:  # noqa: BLE001
            continue
    return state


NEW_ONLY = ("python_threads",)     # a change only where one is there that was not
FIRST_OP = ("cwd", "default_dtype", "default_device", "grad_enabled",
            "deterministic_algorithms", "num_threads", "umask", "signal_handlers",
            "warnings_as_errors", "logging_disabled")


def changes(before: dict, after: dict, only=None) -> list[str]:
    """`name: old -> new` for every switch whose value differs between two snapshots (those
    named in `only`, when given), and `torch.Tensor: replaced add, mul` for functions
    replaced on a patchable owner."""
    found = []
    for name in before:
        if only is not None and name not in only:
            continue
        if name not in after or before[name] == after[name]:
            continue
        if name in _PATCHABLE:
            replaced = sorted(k for k in before[name].keys() & after[name].keys()
                              if before[name][k][0] != after[name][k][0]
                              and not after[name][k][1].startswith("torch"))
            if replaced:
                more = f" (+{len(replaced) - 5} more)" if len(replaced) > 5 else ""
                found.append(f"{name}: replaced {', '.join(replaced[:5])}{more}")
            continue
        if name in NEW_ONLY:         # a thread that ended is no leak; one left running is
            if after[name] - before[name]:
                found.append(f"{name}: {len(after[name] - before[name])} more alive")
            continue
        found.append(f"{name}: {before[name]!r} -> {after[name]!r}")
    return found


class InheritedState:
    """`zlh bench a b …` runs its ops in one process, so what one op changed reaches the ops
    after it. `after(op, rest)` compares the state with what the op before it left (the first
    op with the state when this was made, on FIRST_OP only, as in a corpus worker:
    importing a library may set the other switches) and gives a warning line when something
    changed and ops are left to inherit it."""

    def __init__(self):
        """Made once the ops are planned: the state the first op is compared with."""
        self.left: dict | None = None
        self.first: dict | None = snapshot()

    def after(self, op: str, rest) -> str | None:
        state = snapshot()
        changed = (changes(self.left, state) if self.left is not None else
                   changes(self.first, state, only=FIRST_OP) if self.first is not None else [])
        self.left = state
        if not changed or not rest:
            return None
        names = ", ".join(dict.fromkeys(c.split(":")[0] for c in changed))
        return (f"WARNING [process] {op} changed {names} in this process and left it so: "
                f"{', '.join(rest)} run with that (zlh batch gives each op a clean worker)")
