"""A resumed batch or screen never follows a link out of its root: a `.abandoned`, an op's
folder or a side's folder that is a symbolic link is refused, and nothing outside moves."""
import json
import shutil

from click.testing import CliRunner

from harness.cli import main


def _batch(corpus_batch, root):
    """A copy at `root` of conftest's finished batch of add and softmax (FAST, on the CPU)."""
    shutil.copytree(corpus_batch, root, symlinks=True)


def _unfinish(root, op):
    (root / op / ".complete").unlink()          # as if the batch had been killed in it


def test_a_resume_refuses_an_abandoned_folder_that_is_a_link_out_of_the_root(tmp_path,
                                                                              corpus_batch):
    root, outside = tmp_path / "b", tmp_path / "elsewhere"
    _batch(corpus_batch, root)
    _unfinish(root, "add")
    outside.mkdir()
    (root / ".abandoned").symlink_to(outside)
    before = sorted(p.name for p in (root / "add").iterdir())
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 2, result.output
    assert ".abandoned is a symbolic link" in result.output
    assert list(outside.iterdir()) == [] and sorted(p.name for p in (root / "add").iterdir()) \
        == before


def test_a_resume_refuses_an_op_folder_that_is_a_link(tmp_path, corpus_batch):
    root, outside = tmp_path / "b", tmp_path / "elsewhere"
    _batch(corpus_batch, root)
    (root / "softmax").rename(outside)
    (root / "softmax").symlink_to(outside)
    _unfinish(outside, "")                      # the linked op is unfinished
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 2, result.output
    assert "softmax is a symbolic link" in result.output and "folder of op softmax" in \
        result.output
    assert (outside / "run.attempt1.log").exists() and not (root / ".abandoned").exists()
    assert json.loads((root / "batch.json").read_text())["ops"]
