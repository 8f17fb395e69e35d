"""The `zlh` command line (click). Each command is a thin layer over the Python API.

    common.py  errors and exit codes, bench options shared by bench and ab
    bench.py   zlh bench
    ab.py      zlh ab, zlh report
    batch.py   zlh batch
    screen.py  zlh screen
    campaign.py  zlh partition, zlh campaign (rounds over devices)
    product.py   zlh campaign prepare | run | reaccount (pre-registered product campaigns)
    info.py    zlh ops, show, fingerprint, backends
"""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="zlh", message="zlh %(version)s")
def main():
    """zlh: operator timing harness for A/B comparison of Triton compiler and FlagGems builds."""


from . import ab, batch, bench, campaign, info, product, screen  # noqa: E402,F401  (registers the commands)

__all__ = ["main"]
