"""Large inputs drawn on the device where upstream draws them on the host.

Some upstream benchmarks build an input on the host and then move it to the device:
`torch.randint(lo, hi, shape, dtype=dtype, device="cpu").to(device)`. At 2**30 elements that
costs seconds per tensor (the host's generator is one thread), and such an op spends most of
its wall building inputs. While an adapter builds one case's inputs inside
`DeviceInputs.scope()`, a call of a torch random factory (`FACTORIES`) is drawn on the run's
device instead when

- the calling source moves its result to a device: the call is the receiver of a `.to(...)`
  that names a device (`.to(device)`, `.to(device=d, dtype=t)`; not `.to(dtype)` alone,
  after which the tensor stays on the host) or of torch's `.cuda()`, directly or through
  arithmetic and other method calls (`(torch.randint(0, 2, s, device="cpu") * 2 - 1)
  .to(device)`), read from the caller's source at the exact position of the call;
- it asks for a CPU tensor (`device="cpu"`, or no device while the default device is the
  CPU) of at least `THRESHOLD` elements;
- it brings no generator and no `out` of its own.

It is then the same function with the same arguments — same dtype, shape and range, the same
distribution — with `device` set to the run's device and a generator seeded from the run's
seed and the call's position among the case's replaced calls. `numpy.random.choice` over a
population of at least `THRESHOLD` (index sets: `np.random.choice(np.arange(2**28), 65536,
replace=False)` permutes 2**28 numbers on the host) is drawn on the device the same way and
handed back as the numpy array it would be: its result stays on the host, so it needs no move.
The run's seed is torch's initial seed when the scope opens (the runner seeds torch with it
before each case is built), so both sides of an A/B comparison and every round draw the same
values, and another seed draws others. Every other call runs exactly as written.
`mode="upstream"` replaces nothing.
Nothing here times anything, and nothing names a device vendor.
"""
from __future__ import annotations

import ast
import collections
import contextlib
import math
import operator
import sys
import threading

import numpy as np

from harness.common import memo

MODES = ("device", "upstream")
DEFAULT_MODE = "device"
THRESHOLD = 1 << 20          # elements: below it the host draws in a few milliseconds
FACTORIES = ("rand", "randn", "randint", "randperm", "normal")
_OWN_RNG = ("generator", "out")
# One scope patches at a time in a process: a second thread building inputs waits, so the
# functions each scope restores are the originals.
_PATCHING = threading.RLock()
_MASK64 = (1 << 64) - 1


def call_seed(seed: int, position: int) -> int:
    """The seed of the `position`-th replaced call of a case under the run's `seed`: two
    rounds of splitmix64, so that neighbouring seeds and positions draw unrelated streams."""
    z = (seed * 0x9E3779B97F4A7C15 + position + 1) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) & ((1 << 63) - 1)


def _factory_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in FACTORIES and \
            isinstance(func.value, ast.Name) and func.value.id == "torch":
        return func.attr
    return None


def _names_a_dtype(node: ast.expr) -> bool:
    """`torch.int32`, `dtype`, `self.src_dtype`, `cur_dtype`: an argument that is a dtype."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "torch":
        return node.attr != "device"
    name = node.id if isinstance(node, ast.Name) else \
        node.attr if isinstance(node, ast.Attribute) else ""
    return "dtype" in name.lower()


def _to_a_device(call: ast.Call) -> bool:
    """Whether a `.to(...)` call names where the tensor goes (`.to(device)`,
    `.to(device=d, dtype=t)`, `.to(other_tensor)`), not only a dtype or a memory format
    (`.to(torch.float32)`, `.to(dtype)`), after which the tensor stays where it was."""
    if any(k.arg == "device" for k in call.keywords):
        return True
    return bool(call.args) and not _names_a_dtype(call.args[0])


def _moved(call: ast.Call, parents: dict) -> bool:
    """Whether the value of `call` reaches `.to(...)` / `.cuda(...)` through arithmetic and
    method calls on it."""
    node, parent = call, parents.get(call)
    while parent is not None:
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            node, parent = parent, parents.get(parent)
            continue
        if isinstance(parent, ast.Attribute) and parent.value is node:
            called = parents.get(parent)
            if isinstance(called, ast.Call) and called.func is parent:
                if parent.attr == "cuda" or (parent.attr == "to" and _to_a_device(called)):
                    return True
                node, parent = called, parents.get(called)
                continue
        return False
    return False


@memo.by_file(copies=False)
def factory_calls(path: str) -> dict:
    """Every `torch.<factory>(...)` call in a source file, by its position (line, end line,
    column, end column): (factory name, whether its result is moved to a device)."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return {}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = {}
    for node in ast.walk(tree):
        name = _factory_name(node) if isinstance(node, ast.Call) else None
        if name:
            where = (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)
            found[where] = (name, _moved(node, parents))
    return found


def caller_moves(frame, name: str) -> bool:
    """Whether the call of torch.`name` that `frame` is making is one whose result its source
    moves to a device. Found by the call's exact position where Python keeps positions (3.11
    on) and it names a factory call of the source; else by its line, when every factory call
    spanning that line moves its result (two on one line, one kept: neither is replaced)."""
    calls = factory_calls(frame.f_code.co_filename)
    if not calls:
        return False
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is not None:
        with contextlib.suppress(IndexError, TypeError, ValueError):
            hit = calls.get(tuple(list(positions())[frame.f_lasti // 2]))
            if hit is not None:
                return hit == (name, True)
    line = frame.f_lineno
    spanning = [hit for (first, last, _, _), hit in calls.items() if first <= line <= last]
    return bool(spanning) and all(hit == (name, True) for hit in spanning)


def elements(name: str, args: tuple, kwargs: dict) -> int | None:
    """How many elements a factory call asks for, read from its arguments (the size given
    as a sequence, as `size=`, as separate ints for rand/randn, or randperm's n); None when
    they say no plain size."""
    size = kwargs.get("size")
    if size is None:
        sequences = [a for a in args if isinstance(a, (tuple, list))]
        if sequences:
            size = sequences[-1]
        elif name in ("rand", "randn") and args:
            size = args
        elif name == "randperm" and args:
            size = args[:1]
    if size is None or isinstance(size, (str, bytes)):
        return None
    try:
        dims = [operator.index(d) for d in size]
    except TypeError:
        return None
    return math.prod(dims) if all(d >= 0 for d in dims) else None


class DeviceInputs:
    """Draws large host-built, device-bound inputs on `device` while a scope is open (module
    docstring); counts what it replaced for the run's record."""

    def __init__(self, device, mode: str = DEFAULT_MODE, threshold: int = THRESHOLD):
        if mode not in MODES:
            raise ValueError(f"inputs mode {mode!r}: expected one of {', '.join(MODES)}")
        self.device, self.mode, self.threshold = device, mode, threshold
        self.replaced: collections.Counter = collections.Counter()
        self._owner: int | None = None
        self._originals: dict = {}
        self._seed = 0
        self._position = 0

    @contextlib.contextmanager
    def scope(self):
        """Replace while the block runs (one case's inputs), in this thread only; torch's
        factories are restored when it ends. A scope inside a scope adds nothing; scopes of
        other threads wait for this one."""
        if self.mode != "device" or self._owner is not None:
            yield
            return
        with _PATCHING:
            yield from self._patched()

    def _patched(self):
        """The scope's body, the process's patching lock held."""
        import torch  # heavy: imported only where used
        originals = {name: getattr(torch, name) for name in FACTORIES}
        choice = np.random.choice
        self._owner, self._seed, self._position = threading.get_ident(), torch.initial_seed(), 0
        self._originals = originals
        try:
            for name, original in originals.items():
                setattr(torch, name, self._wrap(name, original))
            np.random.choice = self._wrap_choice(choice)
            yield
        finally:
            for name, original in originals.items():
                setattr(torch, name, original)
            np.random.choice = choice
            self._owner = None

    def _generator(self):
        """A generator on the device for the next replaced call of the case."""
        import torch  # heavy: imported only where used
        generator = torch.Generator(device=self.device)
        generator.manual_seed(call_seed(self._seed, self._position))
        self._position += 1
        return generator

    def _wrap_choice(self, original):
        def choice(a, size=None, replace=True, p=None):
            if threading.get_ident() == self._owner and p is None and size is not None:
                drawn = self._choose(a, size, replace)
                if drawn is not None:
                    return drawn
            return original(a, size, replace, p)
        choice.__wrapped__ = original
        return choice

    def _choose(self, a, size, replace: bool):
        """`numpy.random.choice(a, size, replace)` over a population of at least `threshold`
        (an int n or a 1-d array, e.g. `np.arange(n)`), uniform, drawn on the device and
        handed back as the numpy array numpy would give (same dtype and shape); None: numpy
        draws it (a host permutation of 2**28 for `replace=False` takes seconds)."""
        population = a if isinstance(a, np.ndarray) and a.ndim == 1 else None
        try:
            n = len(population) if population is not None else operator.index(a)
            shape = tuple(size) if isinstance(size, (tuple, list)) else (operator.index(size),)
            count = math.prod(operator.index(d) for d in shape)
        except TypeError:
            return None
        if n < self.threshold or count < 0 or (not replace and count > n):
            return None
        generator = self._generator()
        if replace:
            picked = self._originals["randint"](0, n, (count,), device=self.device,
                                                generator=generator)
        else:
            picked = self._originals["randperm"](n, device=self.device,
                                                 generator=generator)[:count]
        picked = picked.cpu().numpy().reshape(shape)
        self.replaced["numpy.random.choice"] += 1
        return population[picked] if population is not None else picked

    def _wrap(self, name: str, original):
        def factory(*args, **kwargs):
            if threading.get_ident() == self._owner and caller_moves(sys._getframe(1), name):
                drawn = self._draw(name, original, args, kwargs)
                if drawn is not None:
                    return drawn
            return original(*args, **kwargs)
        factory.__wrapped__ = original
        return factory

    def _draw(self, name: str, original, args, kwargs):
        """The call drawn on the device, or None when it stays as written."""
        import torch  # heavy: imported only where used
        if any(kwargs.get(k) is not None for k in _OWN_RNG):
            return None
        asked = kwargs.get("device")
        try:
            default = getattr(torch, "get_default_device", lambda: "cpu")
            if torch.device(asked if asked is not None else default()).type != "cpu":
                return None
        except (RuntimeError, TypeError, ValueError):   # a device zlh cannot read: upstream's
            return None
        count = elements(name, args, kwargs)
        if count is None or count < self.threshold:
            return None
        changed = {k: v for k, v in kwargs.items() if k != "pin_memory"}
        drawn = original(*args, **{**changed, "device": self.device,
                                   "generator": self._generator()})
        self.replaced[f"torch.{name}"] += 1
        return drawn

    def record(self) -> dict:
        """run.json's `inputs`: how inputs were made."""
        if self.mode != "device":
            return {"mode": self.mode}
        return {"mode": self.mode, "threshold_elements": self.threshold,
                "replaced_calls": sum(self.replaced.values()),
                "replaced": dict(sorted(self.replaced.items()))}
