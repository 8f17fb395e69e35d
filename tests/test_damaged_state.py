"""Files zlh keeps beside its results — lock files, stored plans, card tables, IR indexes,
markers, documents with aliases — when damaged or edited: one line and a usage error (or
the damaged file left out), never a traceback, a hang or another file overwritten."""
from __future__ import annotations

import os
import time

import pytest

from harness.common.documents import MAX_DEPTH, loads_yaml
from harness.common.errors import UsageError
from harness.common.fields import Fields
from harness.compile.ir.fingerprint import read_index
from harness.corpus import lock
from harness.corpus.campaign import card_files
from harness.corpus.outcome import Outcome
from harness.corpus.product.manifest import _given
from harness.corpus.screen import side_from

STATUS_HEADER = ("round\top\tside\trc\telapsed_s\trows_ok\trows_failed\treplay_fallbacks\t"
                 "graph_fallbacks\tpoisoned\trun_dir")


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    (tmp_path / "batch.json").write_text('{"kind": "batch"}')
    os.symlink("batch.json", tmp_path / lock.LOCK_NAME)
    with pytest.raises(UsageError, match="symbolic link"):
        lock.claim_root(tmp_path, "batch")
    assert (tmp_path / "batch.json").read_text() == '{"kind": "batch"}'


def test_a_lock_file_that_is_a_fifo_neither_hangs_nor_is_written(tmp_path):
    os.mkfifo(tmp_path / lock.LOCK_NAME)
    started = time.monotonic()
    assert lock.root_in_use(tmp_path) is None          # --replay's look at another root
    with pytest.raises(UsageError, match="not a plain file"):
        lock.claim_root(tmp_path, "batch")
    assert time.monotonic() - started < 5


def test_claiming_a_root_that_does_not_exist_says_so(tmp_path):
    with pytest.raises(UsageError, match="no such directory"):
        lock.claim_root(tmp_path / "gone", "screen")


def side_doc(**side):
    return Fields({"A": {"label": "A", "python": "/usr/bin/python3", "env": {}, **side}},
                  "screen.json")


@pytest.mark.parametrize("side, wrong", [
    ({"label": "../escape"}, "field label"),
    ({"label": ""}, "field label"),
    ({"env": {"X\0": "1"}}, "NUL"),
    ({"env": {"X": "1\0"}}, "NUL"),
    ({"env": {"A=B": "1"}}, "names without '='"),
    ({"env": {"": "1"}}, "names without '='"),
])
def test_a_stored_side_with_another_label_or_an_impossible_variable_is_refused(side, wrong):
    with pytest.raises(UsageError, match=wrong):
        side_from(side_doc(**side), "A")


def test_a_stored_side_as_written_is_read_back():
    side = side_from(side_doc(env={"TRITON_F32_DEFAULT": "ieee", "GONE": None}), "A")
    assert side.label == "A" and side.env == {"TRITON_F32_DEFAULT": "ieee", "GONE": None}


def test_an_ir_index_that_is_not_text_reads_as_no_index(tmp_path):
    (tmp_path / "ttgir").mkdir()
    (tmp_path / "ttgir" / "index.tsv").write_bytes(b"\xff\xfe\nrole\thash\n")
    assert read_index(tmp_path) == []
    (tmp_path / "ttgir" / "index.tsv").write_text("role\thash\nmeasured\tab12\n")
    assert read_index(tmp_path) == [{"role": "measured", "hash": "ab12"}]


@pytest.mark.parametrize("body, why", [
    ("round\top\n1\tadd\n", "header"),
    (STATUS_HEADER + "\n1\tadd\tA\t0\t1.0\t5\t0\t0\t0\t0\t/r\textra\n", "12 fields"),
    (STATUS_HEADER + "\n1\tadd\tA\t0\t1.0\t5\t0\tx\t0\t0\t/r\n", "replay_fallbacks"),
    (STATUS_HEADER + "\n1\tadd\tA\t0\t1.0\t5\t0\t0\t1.5\t0\t/r\n", "graph_fallbacks"),
])
def test_a_damaged_card_table_is_left_out_of_the_merge_with_a_line(tmp_path, body, why):
    (tmp_path / "status.tsv").write_text(body)
    said = []
    rows, reports = card_files(tmp_path, said.append)
    assert rows == [] and reports == []
    assert len(said) == 1 and "left out of the merge" in said[0] and why in said[0]


def test_a_card_table_as_written_is_merged(tmp_path):
    (tmp_path / "status.tsv").write_text(STATUS_HEADER + "\n1\tadd\tA\t-9\t1.0\t5\t0\t0\t2\t0\t/r\n")
    rows, _ = card_files(tmp_path, None)
    assert rows[0]["op"] == "add" and rows[0]["rc"] == "-9" and rows[0]["graph_fallbacks"] == "2"


@pytest.mark.parametrize("run_dir", ["a\0b", "x" * 5000, 3])
def test_a_marker_with_an_impossible_run_dir_is_refused(run_dir):
    doc = {"status": "PASS", "rc": 0, "elapsed_s": 1.0, "run_dir": run_dir}
    with pytest.raises(UsageError, match="run_dir"):
        Outcome.from_dict(doc)


def test_null_optional_numbers_of_a_manifest_take_their_defaults():
    assert _given({"max_k": None}, "max_k", 0) == 0
    assert _given({}, "good_pct", 2.0) == 2.0
    assert _given({"good_pct": 1.5}, "good_pct", 2.0) == 1.5


def test_a_yaml_alias_bomb_is_refused_at_once():
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
    started = time.monotonic()
    with pytest.raises(ValueError, match="expands to more than"):
        loads_yaml(text)
    assert time.monotonic() - started < 5
    assert loads_yaml("a: &a [1, 2]\nb: [*a, *a]\n")["b"] == [[1, 2], [1, 2]]


def test_an_alias_that_nests_a_node_deeper_than_allowed_is_refused():
    half = MAX_DEPTH // 2 + 5
    text = f"a: &a {'[' * half}{']' * half}\nb: {'[' * half}*a{']' * half}\n"
    with pytest.raises(ValueError, match="levels deep"):
        loads_yaml(text)


def test_a_result_file_replaced_by_a_directory_is_named_not_its_temporary(tmp_path):
    from harness.common.files import atomic_write_text
    (tmp_path / "status.tsv").mkdir()
    with pytest.raises(OSError) as caught:
        atomic_write_text(tmp_path / "status.tsv", "x\n")
    assert caught.value.filename == str(tmp_path / "status.tsv")
    assert [p.name for p in tmp_path.iterdir()] == ["status.tsv"]      # no temporary left
