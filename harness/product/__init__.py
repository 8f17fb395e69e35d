"""Pre-registered product campaigns: a fixed list of workloads run under a protocol frozen in
advance, every claim backed by a receipt that hashes what produced it.

    manifest.py    the manifest as typed records (cells, workloads, protocol, sources, gate)
    validate.py    every field checked; one line per violation, naming the field
    validate_protocol.py  the protocol section (cells, timed cells, canaries, gate, ...)
    fields.py      reading typed fields while collecting violations
    inventory.py   every workload against the corpus (present, not skip-marked, dtypes)
    freeze.py      the frozen plan: staging directory renamed into place, task matrix, budget
    canary.py      which canary receipt authorises the full campaign
    contract.py    what must hold before anything runs (hashes, commits, imports, device)
    probe.py       the child process that reports what an interpreter imports and sees
    environment.py a cell's process environment: its device alone, its env switches
    scope.py       IR scope of one cell: convert counts and fingerprint of measured launches
    cells.py       one cell: a fresh `zlh bench` process, its cell receipt
    correctness.py the output gate against the first cell, the library's own accuracy tests
    classes.py     G / C / B / R / K / X, decided in a fixed order from a task's evidence
    tasks.py       one task: round a, correctness, round b, its class and task receipt
    runner.py      the campaign: contract, tasks (resumable), status.csv, campaign receipt
    gate.py        the canary gate
    receipts.py    canonical JSON, sha256, zlh's own files, status.csv
    reaccount.py   a sealed run classified again with another launch floor, written elsewhere
"""
