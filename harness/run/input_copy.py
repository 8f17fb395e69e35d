"""Copies of a case's inputs and the memory they use: `pristine_copy` (the inputs a call may
mutate, the originals untouched: the output check), `storages` (their distinct storages and
bytes) and `storage_refs` / `handed_back` (a placement tells inputs an adapter built anew
from the tensors of an earlier placement handed back)."""
from __future__ import annotations

import copy
import weakref

from adapters.base import CaseInputs


def pristine_copy(inputs: CaseInputs) -> CaseInputs:
    """A copy of the inputs that a call may mutate without touching the originals. Tensors
    get their own storage with the same sizes, strides and offsets (inputs that share a
    storage still share one copy of it); other values are deep-copied, or shared where
    they cannot be (then a function mutating them is not isolated)."""
    try:
        return copy.deepcopy(inputs)
    except Exception:  # noqa: BLE001 - a non-leaf tensor, an object refusing deepcopy
        memo: dict = {}
        return CaseInputs(tuple(_copied(a, memo) for a in inputs.args),
                          {k: _copied(v, memo) for k, v in inputs.kwargs.items()})


def _copied(value, memo: dict):
    import torch
    if isinstance(value, torch.Tensor):
        try:
            storage = value.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes(), str(value.device))
            if key not in memo:
                memo[key] = storage.clone()
            with torch.no_grad():
                out = torch.empty(0, dtype=value.dtype, device=value.device).set_(
                    memo[key], value.storage_offset(), value.size(), value.stride())
            return out.requires_grad_(value.requires_grad and out.is_floating_point())
        except (RuntimeError, TypeError, NotImplementedError):  # sparse, quantized, subclass
            return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (tuple, list)):
        return type(value)(_copied(v, memo) for v in value) if type(value) in (tuple, list) \
            else value
    if isinstance(value, dict) and type(value) is dict:
        return {k: _copied(v, memo) for k, v in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - shared as is (see pristine_copy)
        return value


def tensors_in(inputs: CaseInputs | None):
    """Every tensor the inputs hold (args and kwargs, inside lists, tuples and dicts too;
    a container met again, one holding itself included, is walked once)."""
    import torch  # heavy: imported only where used

    todo = [*inputs.args, *inputs.kwargs.values()] if inputs is not None else []
    walked: set = set()
    while todo:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple, dict)) and id(value) not in walked:
            walked.add(id(value))
            todo.extend(value.values() if isinstance(value, dict) else value)


def _storage(tensor) -> tuple:
    """(the object that owns the tensor's memory, its key, its bytes): the tensor's storage
    (one object for all its views), keyed by (data pointer, device); the tensor itself where
    it has no plain storage (sparse, some subclasses), keyed by its identity."""
    try:
        storage = tensor.untyped_storage()
        return storage, (storage.data_ptr(), str(tensor.device)), storage.nbytes()
    except (RuntimeError, TypeError, NotImplementedError):
        return tensor, ("tensor", id(tensor)), tensor.numel() * tensor.element_size()


def storages(inputs: CaseInputs | None) -> dict:
    """{key: bytes} of the distinct tensor storages in the inputs."""
    return {key: size for _, key, size in map(_storage, tensors_in(inputs))}


def storage_refs(inputs: CaseInputs | None) -> list:
    """Weak references to what owns the memory of the inputs' tensors (a view or a detached
    tensor keeps its storage's object alive)."""
    return [weakref.ref(owner) for owner, _, _ in map(_storage, tensors_in(inputs))]


def handed_back(built: CaseInputs, earlier: list) -> bool:
    """Whether `built` uses non-empty memory whose owner `earlier` (storage_refs of the
    previous inputs) names and that is still alive: an adapter whose build hands back the
    tensors it made once (or views of them), rather than memory the allocator gave out
    again."""
    alive = {id(owner) for owner in (ref() for ref in earlier) if owner is not None}
    return any(size and id(owner) in alive
               for owner, _, size in map(_storage, tensors_in(built)))
