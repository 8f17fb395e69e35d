"""Results kept per file version for a reused worker: the same file is parsed once, a changed
file is read again, and the compiler's identity follows the interpreter's search path."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from adapters.flaggems import corpus as corpus_mod
from adapters.flaggems import shapesets
from harness.common.memo import by_file
from harness.store import compiler
from conftest import FAKE_FLAGGEMS

FIXTURE = FAKE_FLAGGEMS


def test_a_file_is_read_once_until_it_changes(tmp_path):
    calls = []

    @by_file
    def words(path, upper):
        calls.append(path)
        text = Path(path).read_text()
        return {"words": (text.upper() if upper else text).split()}

    target = tmp_path / "a.txt"
    target.write_text("one two")
    first = words(target, False)
    first["words"].append("changed by the caller")
    assert words(target, False) == {"words": ["one", "two"]}      # a copy was handed out
    assert len(calls) == 1
    assert words(target, True) == {"words": ["ONE", "TWO"]}       # other arguments: computed
    assert len(calls) == 2
    target.write_text("three four five")                          # new size and mtime
    assert words(target, False) == {"words": ["three", "four", "five"]}
    assert len(calls) == 3


def test_a_missing_file_is_not_kept_and_still_reports(tmp_path):
    @by_file
    def size(path):
        return Path(path).stat().st_size

    with pytest.raises(FileNotFoundError):
        size(tmp_path / "absent")
    (tmp_path / "absent").write_text("xy")
    assert size(tmp_path / "absent") == 2


def test_corpus_scan_parses_each_benchmark_file_once(tmp_path, monkeypatch):
    root = tmp_path / "fg"
    shutil.copytree(FIXTURE, root)
    parsed = []
    real_parse = corpus_mod.ast.parse
    monkeypatch.setattr(corpus_mod.ast, "parse",
                        lambda source, filename="<unknown>", **kw:
                        (parsed.append(filename), real_parse(source, filename, **kw))[1])
    first = corpus_mod.Corpus.scan(root)
    files = len(parsed)
    assert files > 0 and first.nodes
    again = corpus_mod.Corpus.scan(root)
    assert len(parsed) == files                                   # nothing parsed again
    assert [n.qualified for n in again.nodes] == [n.qualified for n in first.nodes]
    edited = sorted((root / "benchmark").rglob("test_*.py"))[0]
    source = edited.read_text() + "\n\ndef test_added_later():\n    pass\n"
    edited.write_text(source)
    third = corpus_mod.Corpus.scan(root)
    assert len(parsed) == files + 1                               # only the edited file
    assert "added_later" in {n.op for n in third.nodes}


def test_core_shapes_are_read_again_after_an_edit(tmp_path):
    path = tmp_path / "core_shapes.yaml"
    path.write_text("softmax:\n  shapes: [[2, 3]]\n")
    first = shapesets.core_shapes(path)
    first["softmax"]["shapes"].append([9, 9])                     # the caller's copy only
    assert shapesets.core_shapes(path) == {"softmax": {"shapes": [[2, 3]]}}
    path.write_text("softmax:\n  shapes: [[4, 5], [6, 7]]\n")
    assert shapesets.core_shapes(path) == {"softmax": {"shapes": [[4, 5], [6, 7]]}}


def test_compiler_identity_is_looked_up_once_per_search_path(tmp_path, monkeypatch):
    owners = []
    real_owner = compiler._owner
    monkeypatch.setattr(compiler, "_owner", lambda path: (owners.append(path),
                                                          real_owner(path))[1])
    compiler._identity_at.cache_clear()
    first = compiler.compiler_identity()
    first["version"] = "changed by the caller"
    second = compiler.compiler_identity()
    assert len(owners) == 1 and second["version"] != "changed by the caller"
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])   # another search path
    compiler.compiler_identity()
    assert len(owners) == 2


def test_a_linked_benchmark_file_keeps_its_own_name(tmp_path):
    root = tmp_path / "fg"
    shutil.copytree(FIXTURE, root)
    real = sorted((root / "benchmark").glob("test_*.py"))[0]
    alias = real.with_name("test_zz_alias.py")
    alias.symlink_to(real.name)
    for _ in range(2):                                  # in either order, kept or not
        files = {n.file for n in corpus_mod.Corpus.scan(root).nodes}
        assert str(alias.relative_to(root)) in files and str(real.relative_to(root)) in files


def test_a_symlink_loop_is_the_readers_one_line_error(tmp_path):
    loop = tmp_path / "core_shapes.yaml"
    loop.symlink_to(loop.name)
    with pytest.raises(shapesets.Unsupported):
        shapesets.core_shapes(loop)
