"""Where an op runs: on which device of a host (a stable hash of its name), and in which shard
of a job array (`--shard K/N`: its rank in the sorted selection).

Devices: the same op goes to the same device whatever the order of the selection, and again
on resume. Shards: the selection's op names are sorted (by code point, the same on every
machine and whatever the order of the ops file) and dealt round-robin, the op of rank i to
shard i mod N + 1; so the N shards differ by at most one op, and neighbouring names (one
family's variants, often of one cost) land in different shards. K counts from 1 (`--array=1-N`);
`--shard auto/N` reads the index of a Slurm array task or a Kubernetes indexed job.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..common.errors import UsageError

MAX_SHARDS = 100_000        # more shards than a corpus has ops by far: a typo
AUTO = "auto"
SLURM_TASK = "SLURM_ARRAY_TASK_ID"
K8S_INDEX = "JOB_COMPLETION_INDEX"


def device_for(op: str, devices: Sequence[int]) -> int:
    if not devices:
        raise ValueError("no devices")
    digest = int(hashlib.sha1(op.encode("utf-8")).hexdigest()[:12], 16)
    return devices[digest % len(devices)]


def shard(ops: Sequence[str], devices: Sequence[int]) -> dict[int, list[str]]:
    """{device: ops in their given order}."""
    out: dict[int, list[str]] = {d: [] for d in devices}
    for op in ops:
        out[device_for(op, devices)].append(op)
    return out


@dataclass(frozen=True)
class Shard:
    """The K-th (1-based) of N shards of a selection."""
    k: int
    n: int

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"

    def ops(self, names: Sequence[str]) -> set[str]:
        """The names of `names` that fall in this shard."""
        return {name for rank, name in enumerate(sorted(set(names)))
                if rank % self.n == self.k - 1}

    def take(self, items: Sequence) -> list:
        """The items (with an `op`) of this shard, in their given order."""
        mine = self.ops([item.op for item in items])
        return [item for item in items if item.op in mine]

    def record(self, items: Sequence, left_out: Sequence = ()) -> dict:
        """What a shard's batch.json / screen.json holds of it: K, N, the whole selection (in
        its order) and its digest, which every shard of one command shares."""
        selection = [{"op": i.op, "dtypes": list(i.dtypes) if i.dtypes else None}
                     for i in items]
        return {"k": self.k, "n": self.n, "selection": selection,
                "digest": selection_digest(selection, left_out)}


def selection_digest(selection: list[dict], left_out: Sequence = ()) -> str:
    """sha256 (16 hex digits) of a whole selection and what it left out."""
    text = json.dumps([selection, [list(x) for x in left_out]], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def parse_shard(text: str | None, environ: Mapping[str, str] | None = None) -> Shard | None:
    """`--shard K/N` (K from 1 to N), or `auto/N`: K from the job array's task index (Slurm:
    the task's rank in its array, whatever the array's first index and step; Kubernetes: the
    0-based completion index plus one). None when not given; one UsageError line when bad."""
    if text is None:
        return None
    k_text, slash, n_text = text.strip().partition("/")
    if not slash or not n_text.isascii() or not n_text.isdigit() or \
            not (k_text == AUTO or (k_text.isascii() and k_text.isdigit())):
        raise UsageError(f"--shard expects K/N (the K-th of N shards, K from 1 to N) or "
                         f"auto/N, got {text[:40]!r}")
    n = int(n_text)
    if not 1 <= n <= MAX_SHARDS:
        raise UsageError(f"--shard {text}: N is the number of shards, from 1 to {MAX_SHARDS}")
    k = _auto_k(n, os.environ if environ is None else environ) if k_text == AUTO \
        else int(k_text)
    if k == 0 and k_text != AUTO:
        raise UsageError(f"--shard {text}: shards count from 1 (1/{n} to {n}/{n}); for a "
                         f"0-based index (--array=0-{n - 1}, a Kubernetes completion index) "
                         f"give --shard auto/{n}")
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text}: K must be from 1 to {n}" +
                         (f" (the job array's task is number {k})" if k_text == AUTO else ""))
    return Shard(k, n)


def _auto_k(n: int, env: Mapping[str, str]) -> int:
    """K of `--shard auto/N` from the job array's variables."""
    if env.get(SLURM_TASK):
        task = _int_var(env, SLURM_TASK)
        low = _int_var(env, "SLURM_ARRAY_TASK_MIN", min(task, 1))    # (Slurm sets it)
        step = max(_int_var(env, "SLURM_ARRAY_TASK_STEP", 1), 1)
        count = env.get("SLURM_ARRAY_TASK_COUNT")
        if count and count.strip().isdigit() and int(count) != n:
            raise UsageError(f"--shard auto/{n}: the Slurm array has {count} tasks "
                             f"(SLURM_ARRAY_TASK_COUNT); give --shard auto/{count} or an "
                             f"array of {n} tasks (--array=1-{n})")
        return (task - low) // step + 1
    if env.get(K8S_INDEX):
        return _int_var(env, K8S_INDEX) + 1
    raise UsageError(f"--shard auto/{n}: neither {SLURM_TASK} (a Slurm array task) nor "
                     f"{K8S_INDEX} (a Kubernetes indexed job) is set; outside a job array "
                     f"give the shard as K/{n}")


def _int_var(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    value = env.get(name, "").strip()
    if not value and default is not None:
        return default
    if not value.isascii() or not value.isdigit():
        raise UsageError(f"--shard auto: {name}={value[:40]!r} is not a task index")
    return int(value)


def refuse_merged(batch_doc: dict, root, verb: str) -> None:
    """A root `zlh merge` made holds links to its shards' runs: it is read (reports, rescore,
    replay, campaigns), never resumed into (a later merge would replace what ran there)."""
    if batch_doc.get("merged"):
        raise UsageError(f"{root} was made by zlh merge from shards; resume the shard that "
                         f"is unfinished (zlh {verb} --resume SHARD_ROOT), then merge again")


def ops_phrase(shard: Shard | None, ran: int, whole: int) -> str:
    """`shard K/N: R of W ops` for the line a sharded command starts with; `W ops` else."""
    return f"shard {shard}: {ran} of {whole} ops" if shard else f"{whole} ops"
