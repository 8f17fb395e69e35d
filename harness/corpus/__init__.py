"""Corpus work: many ops at once — selection, the batch engine (isolated, resumable, over
devices, with reused workers), and the screen and the rounds over GPUs (`zlh campaign`) built
on it. Pre-registered product campaigns (`zlh product`) are a package of their own,
harness/product.

    selection.py   which ops: --all / --ops / --ops-file, dismiss list, skip marks
    sharding.py    which device an op runs on (stable across reordering and resume), and
                   which shard of a job array (`--shard K/N`)
    worker.py      a long-lived process that runs one op after another, isolated
    supervisor.py  the workers' keeper: start, hand an op, time out, replace
    executor.py    who runs a unit of work (units.py: the interface and `local`;
                   ray_executor.py, ray_actor.py: `ray`, a lane per GPU of a Ray cluster)
    outcome.py     an op's status (PASS, FAIL, SKIP, TIMEOUT, CRASH, POISONED) and notes
    batch_plan.py  the batch's plan (batch.json)
    batch.py       the batch: retries, dtype fallback, resume, devices
    files.py       batch.json, ops_status.csv, summary.csv, .complete markers
    check.py, threads.py, progress.py  a plan checked, the lanes' threads, what a batch
                   prints (one command per root: harness/common/lock.py)
    screen_plan.py the screen's plan (screen.json) and its file names
    screen.py      zlh screen: one cheap pair per op; verdict.py: the verdict per op
    partition.py   ops spread over devices by their measured cost
    campaign.py    zlh campaign: rounds on a screen's ops over the GPUs of a host, merged
    shard_roots.py, merge.py   zlh merge: the shards' roots checked, one root built
"""

__all__: list[str] = []      # its modules are imported by name
