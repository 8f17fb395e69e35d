"""A corpus root is made whole or not at all: a batch or screen whose first write fails (a
full disk) leaves no root that only its lock claims, and a folder holding nothing but a
lock (a start killed before its plan was written) is an empty folder to a new start and a
one-line refusal to --resume."""
from __future__ import annotations

import errno
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.corpus import files as corpus_files
from harness.corpus import screen as screen_mod
from harness.common.lock import LOCK_NAME
from conftest import CPU_FAST



def _disk_full(path, *_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", str(path))


def _batch(tmp_path: Path, *args):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    return CliRunner().invoke(main, ["batch", *CPU_FAST, "--shapes", str(shapes), "--ops", "add",
                                     "-q", *args])


def test_a_batch_whose_plan_cannot_be_written_leaves_no_root(tmp_path, monkeypatch):
    root = tmp_path / "batch"
    with monkeypatch.context() as patch:
        patch.setattr(corpus_files, "write_batch_json", _disk_full)
        failed = _batch(tmp_path, "--out", str(root))
    assert failed.exit_code == 1, failed.output
    assert "No space left" in failed.output or "disk" in failed.output.lower()
    assert not root.exists()                       # nothing that claims to be a batch
    again = _batch(tmp_path, "--out", str(root))   # the same command, once there is room
    assert again.exit_code == 0, again.output
    assert (root / corpus_files.BATCH_JSON).is_file()


def test_a_screen_whose_plan_cannot_be_written_leaves_an_existing_folder_as_it_was(
        tmp_path, monkeypatch):
    root = tmp_path / "screen"
    root.mkdir()                                   # given, empty: kept, still empty
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    with monkeypatch.context() as patch:
        patch.setattr(screen_mod, "atomic_write_json", _disk_full)
        failed = CliRunner().invoke(main, ["screen", *CPU_FAST, "--shapes", str(shapes), "--ops",
                                           "add", "--switch", "ZLH_X=0,1", "--root", str(root)])
    assert failed.exit_code == 1, failed.output
    assert root.is_dir() and list(root.iterdir()) == []


def test_a_folder_holding_only_a_lock_is_empty_to_a_new_start(tmp_path):
    """A start killed between taking the lock and writing its plan leaves the lock file:
    --resume says nothing was started there, the same start goes ahead."""
    root = tmp_path / "batch"
    root.mkdir()
    (root / LOCK_NAME).write_text("zlh batch, pid 999999\n")
    resumed = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert resumed.exit_code == 2, resumed.output
    assert "no batch was started there" in resumed.output and "\n" not in resumed.output.strip()
    again = _batch(tmp_path, "--out", str(root))
    assert again.exit_code == 0, again.output
    assert (root / corpus_files.BATCH_JSON).is_file()
