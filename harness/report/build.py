"""The model of any root: its kind detected, then read by that kind's model."""
from __future__ import annotations

from pathlib import Path

from . import abroot, corpus, kinds, product
from .model import Report


def build(root, page_dir=None) -> Report:
    """The report of ROOT; links are made relative to `page_dir` (default: ROOT)."""
    kind = kinds.detect(root)
    root = Path(root)
    page_dir = Path(page_dir) if page_dir is not None else root
    if kind in (kinds.AB, kinds.CALIBRATE, kinds.CAMPAIGN):
        return abroot.ab(root, page_dir, kind)
    if kind == kinds.SCREEN:
        return corpus.screen(root, page_dir)
    if kind == kinds.BATCH:
        return corpus.batch(root, page_dir)
    return product.product(root, page_dir)
