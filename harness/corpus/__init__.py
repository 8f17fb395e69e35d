"""Corpus work: many ops at once — selection, the batch engine (isolated, resumable, over
devices, with reused workers), and later the screen and campaigns built on it.

    selection.py   which ops: --all / --ops / --ops-file, dismiss list, skip marks
    sharding.py    which device an op runs on (stable across reordering and resume)
    worker.py      a long-lived process that runs one op after another, isolated
    supervisor.py  the workers' keeper: start, hand an op, time out, replace
    outcome.py     an op's status (PASS, FAIL, SKIP, TIMEOUT, CRASH, POISONED) and notes
    batch.py       the batch: plan, retries, dtype fallback, resume, devices
    files.py       batch.json, ops_status.csv, summary.csv, .complete markers
    product/       pre-registered product campaigns (manifest, frozen plan, receipts, classes)
"""
