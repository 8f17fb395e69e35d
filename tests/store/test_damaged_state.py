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
from harness.common import lock
from harness.corpus.campaign import card_files
from harness.corpus.outcome import Outcome
from harness.product.manifest import _given
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


def test_clocks_that_all_read_zero_still_chart():
    from harness.telemetry.chart import clock_svg
    svg = clock_svg([{"time": 0.0, "sm_clock_mhz": 0, "mem_clock_mhz": 0},
                     {"time": 1.0, "sm_clock_mhz": 0, "mem_clock_mhz": None}])
    assert svg.startswith("<svg") and "polyline" in svg


def test_an_ir_file_name_that_is_not_utf8_is_listed_not_fatal(tmp_path):
    from harness.compile.ir.fingerprint import fingerprint, ir_files
    (tmp_path / "ttgir").mkdir()
    with open(os.path.join(os.fsencode(tmp_path / "ttgir"), b"\xff.ttgir"), "w") as handle:
        handle.write("module {}\n")
    (tmp_path / "ttgir" / "k.ttgir").write_text("module {}\n")
    assert [rel for rel, _ in ir_files(tmp_path, "ttgir", "measured")][0] == "k.ttgir"
    assert fingerprint(tmp_path) is not None


def test_values_a_results_file_should_not_hold_are_shown_as_unknown():
    import numpy as np
    from harness.run.table import _fmt
    assert _fmt("x", ".2f") == "?" and _fmt([1], ".1f") == "?" and _fmt(True, ".1f") == "?"
    assert _fmt(None, ".1f") == "-" and _fmt(np.float32(1.5), ".1f") == "1.5"


def test_a_damaged_running_run_json_is_shown(tmp_path, fast_rule, fast_budget):
    """host null, a pid no process can have, a caliber that is not an object."""
    import json
    from harness.run.runner import run_op
    from harness.run.show import show_run
    from scripted import plan_for
    run_dir = run_op(plan_for(["ok"], tmp_path, fast_rule, fast_budget), "op",
                     echo=lambda _: None).run_dir
    path = run_dir / "run.json"
    info = json.loads(path.read_text())
    info.update(status="running", host=None, pid=2147483653, caliber="x")
    path.write_text(json.dumps(info))
    text = show_run(str(run_dir))
    assert "status=abandoned" in text and "did not complete" in text


@pytest.mark.parametrize("damaged", [5, [5], [{"a": 1}], [{"shape": [2]}],
                                     [{"dtype": "float32", "shape": [2], "norm": "x"}],
                                     [{"dtype": "float32", "shape": [2], "norm": 1.0,
                                       "sample": 5}]])
def test_a_damaged_output_digest_reads_as_outputs_that_cannot_be_compared(damaged):
    from harness.run.outputs import compare
    good = [{"dtype": "float32", "shape": [2], "norm": 1.0, "nan": 0, "inf": 0,
             "sample": [0.5, 0.5], "elements": 2}]
    assert compare(good, good) is None
    assert "output digest damaged" in compare(damaged, good)


@pytest.mark.parametrize("side_fields", [{"clocks": [5]}, {"clocks": "ab"},
                                         {"repeat_medians_ms": ["x", "y"]}])
def test_a_result_row_with_damaged_side_fields_is_refused_on_one_line(tmp_path, fast_rule,
                                                                      fast_budget, side_fields):
    import json
    from harness.run.runner import run_op
    from harness.store.reader import read_rows
    from scripted import plan_for
    run_dir = run_op(plan_for(["ok"], tmp_path, fast_rule, fast_budget), "op",
                     echo=lambda _: None).run_dir
    results = run_dir / "results.jsonl"
    row = json.loads(results.read_text().splitlines()[0])
    row["torch"].update(side_fields)
    results.write_text(json.dumps(row) + "\n")
    with pytest.raises(UsageError, match="line 1 is not a result row"):
        read_rows(results)


def test_a_report_summary_without_side_spreads_still_renders():
    from harness.ab.render import _num, _summary_lines
    assert _num("x", ".2f") == "?" and _num(None, ".2f") == "-" and _num(1.234, ".2f") == "1.23"
    summary = {"n": 3, "faster": 1, "slower": 1, "unchanged": 1, "rounds": 3,
               "per_round_median_delta_pct": [0.1, -0.2, 0.05], "sign_unstable": 0,
               "side_spread_median_pct": {}}
    text = "\n".join(_summary_lines(summary))
    assert "side spread (median over shapes) A -% B -%" in text
