import os

import pytest

from harness.common.files import atomic_write_text
from harness.store.rundir import RunDir


def test_atomic_write_keeps_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "results.jsonl"
    atomic_write_text(target, "old\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, "new\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]   # no temp left behind


def test_run_dirs_are_unique_within_one_second(tmp_path):
    now = 1_800_000_000.0
    dirs = [RunDir.create(tmp_path, "softmax", now).path for _ in range(3)]
    assert len(set(dirs)) == 3
    assert dirs[0].name.startswith("softmax_") and dirs[1].name.endswith("-2")


def test_op_names_are_made_safe_for_paths(tmp_path):
    path = RunDir.create(tmp_path, "benchmark/test_x.py::test_y").path
    assert path.parent == tmp_path and "/" not in path.name and "::" not in path.name


def test_log_strips_colour(tmp_path):
    run = RunDir.create(tmp_path, "x")
    run.log("\x1b[32m1.5\x1b[0m")
    assert (run.path / "run.log").read_text() == "1.5\n"
