"""A screen's side B whose side A runs again (`--resume --retry`) is forgotten on disk too:
a later resume must not pair B's old run, which replayed A's old record, with A's new one."""
from __future__ import annotations

import shutil

from harness.corpus import files
from harness.corpus.batch import Batch, BatchPlan


def test_a_forgotten_op_is_no_longer_finished_on_disk(corpus_batch, tmp_path):
    root = tmp_path / "b"
    shutil.copytree(corpus_batch, root)
    plan = BatchPlan.from_dict(root, files.read_batch_json(root))
    batch = Batch(plan, echo=lambda _: None, progress=None, resume=True)
    batch.carry_over()
    assert "add" in batch.outcomes and files.read_complete(root, "add") is not None
    batch.forget("add")
    assert "add" not in batch.outcomes
    assert files.read_complete(root, "add") is None          # a later resume runs it again
    assert any((root / "add").glob("run.attempt*.log"))        # its earlier attempt is kept
    assert files.read_complete(root, "softmax") is not None    # the others stay finished
