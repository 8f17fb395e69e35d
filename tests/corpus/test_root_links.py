"""A resumed batch or screen never follows a link out of its root: a `.abandoned`, an op's
folder or a side's folder that is a symbolic link is refused, and nothing outside moves."""
import json

from click.testing import CliRunner

from harness.cli import main
from conftest import FAST



def _batch(tmp_path, root):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\n")
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                       "--ops", "add,softmax", "--shapes", str(shapes), *FAST,
                                       "--out", str(root)])
    assert result.exit_code == 0, result.output


def _unfinish(root, op):
    (root / op / ".complete").unlink()          # as if the batch had been killed in it


def test_a_resume_refuses_an_abandoned_folder_that_is_a_link_out_of_the_root(tmp_path):
    root, outside = tmp_path / "b", tmp_path / "elsewhere"
    _batch(tmp_path, root)
    _unfinish(root, "add")
    outside.mkdir()
    (root / ".abandoned").symlink_to(outside)
    before = sorted(p.name for p in (root / "add").iterdir())
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 2, result.output
    assert ".abandoned is a symbolic link" in result.output
    assert list(outside.iterdir()) == [] and sorted(p.name for p in (root / "add").iterdir()) \
        == before


def test_a_resume_refuses_an_op_folder_that_is_a_link(tmp_path):
    root, outside = tmp_path / "b", tmp_path / "elsewhere"
    _batch(tmp_path, root)
    (root / "softmax").rename(outside)
    (root / "softmax").symlink_to(outside)
    _unfinish(outside, "")                      # the linked op is unfinished
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 2, result.output
    assert "softmax is a symbolic link" in result.output and "folder of op softmax" in \
        result.output
    assert (outside / "run.attempt1.log").exists() and not (root / ".abandoned").exists()
    assert json.loads((root / "batch.json").read_text())["ops"]
