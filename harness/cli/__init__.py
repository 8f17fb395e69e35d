"""The `zlh` command line (click). Each command is a thin layer over the Python API.

    group.py   the `zlh` group the commands register on, each loaded when asked for;
               one-line usage errors
    common.py  errors and exit codes, bench options shared by bench and ab
    devices.py  --devices: the indices given, and those the backend sees
    corpus_options.py  the options batch, screen and campaign share (selection, lanes,
               executor, --allow-env-change, --shard); the lanes they give, the executor
               a resume keeps
    overlap.py  --overlap and --overlap-width of batch and screen
    rounds.py  --rounds N|auto and its options, of ab and calibrate
    bench.py   zlh bench
    ab.py      zlh ab
    report.py  zlh report (any root), zlh history (roots across builds)
    batch.py   zlh batch
    screen.py  zlh screen
    merge.py   zlh merge (one root from the shards of a batch or screen)
    campaign.py  zlh partition, zlh campaign (rounds over the devices of a host)
    calibrate.py  zlh calibrate
    product.py   zlh product prepare | run | reaccount (pre-registered product campaigns)
    info.py    zlh ops, show, fingerprint, backends
    shapes.py  zlh shapes derive / check / model
    output.py  --color, -v, -q, --format on every command; shell completion helpers
    reference.py  the generated docs/reference pages (python -m harness.cli.reference)

Shell completion is click's: `eval "$(_ZLH_COMPLETE=bash_source zlh)"` (zsh: zsh_source,
fish: fish_source).
"""
from __future__ import annotations

from .group import main    # each command's module loads when it is asked for (group.py)

__all__ = ["main"]
