"""The corpus-throughput summary (tests/device/corpus_summary.py): the wall during which some
op ran counts overlapped ops once and the gaps between resumed calls not at all, and the
breakdown of op time adds up the worker start and the runs' phases."""
from __future__ import annotations

import importlib.util
import json
import os

from conftest import ROOT

spec = importlib.util.spec_from_file_location("corpus_summary",
                                              ROOT / "tests/device/corpus_summary.py")
summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summary)


def finished(side, op, end, elapsed, start_s=0.0, run=None, import_s=0.0):
    folder = side / op
    folder.mkdir(parents=True)
    path = folder / ".complete"
    path.write_text(json.dumps({"op": op, "elapsed_s": elapsed, "start_s": start_s,
                                "import_s": import_s}))
    os.utime(path, (end, end))
    if run is not None:
        (folder / f"{op}_1").mkdir()
        (folder / f"{op}_1" / "run.json").write_text(json.dumps(run))


def test_lane_wall_counts_overlapped_ops_once_and_no_gaps(tmp_path):
    side = tmp_path / "A"
    finished(side, "a", 1000.0, 10.0)              # 990..1000
    finished(side, "b", 1004.0, 8.0, start_s=2.0)  # 994..1004: overlaps a
    finished(side, "c", 2000.0, 5.0)               # a later call: 1995..2000
    assert summary.lane_wall([side], ["a", "b", "c", "missing"]) == 19.0


def test_where_adds_up_the_phases(tmp_path, capsys):
    side = tmp_path / "A"
    finished(side, "a", 1000.0, 10.0, start_s=1.0, import_s=0.6,
             run={"wall_s": 8.0, "inputs_s": 1.0, "compile_s": 2.0, "sweep_s": 0.5,
                  "measure_s": 3.0, "lock_wait_s": 0.5})
    summary.where([side], ["a"])
    line = capsys.readouterr().out
    assert "op time 11 s = worker start 1 s + imports in ops 1 s + runs' own wall 8 s" in line
    assert "measure 3 s, lock wait 0 s" in line and "rest of the runs 1 s" in line
    assert "outside the runs 1 s" in line
    assert "Triton's own compile time" not in line      # runs without compile times


def test_where_splits_the_sweep_into_compiling_and_the_rest(tmp_path, capsys):
    side = tmp_path / "A"
    finished(side, "a", 1000.0, 10.0,
             run={"wall_s": 8.0, "compile_s": 2.0, "sweep_s": 5.0,
                  "ir": {"kernel_compile_s": 4.2, "sweep_compile_s": 3.1, "compiles": 12}})
    summary.where([side], ["a"])
    line = capsys.readouterr().out
    assert "compile time (run.json ir): 4 s over 12 compiles, 3 s of it inside sweeps" in line
    assert "benchmarking and the rest: 2 s" in line


def test_floors_compare_the_no_ir_diff_ranges_op_by_op(tmp_path, capsys):
    from report_roots import screen_root
    here, there = screen_root(tmp_path / "a", seed=0), screen_root(tmp_path / "b", seed=1)
    mine, theirs = summary.floor_widths(here), summary.floor_widths(there)
    assert mine and set(mine) == set(theirs) and all(w >= 0 for w in mine.values())
    assert summary.floors(here, here) == 0
    assert capsys.readouterr().out.rstrip().endswith("wider here: 0 (none)")
    summary.floors(here, there)
    wider = sorted(op for op in mine if mine[op] > theirs[op])
    assert capsys.readouterr().out.rstrip().endswith(
        f"wider here: {len(wider)} ({', '.join(wider) or 'none'})")


def test_nested_phases_are_said_to_overlap_not_given_a_negative_rest(tmp_path, capsys):
    side = tmp_path / "A"
    finished(side, "a", 1000.0, 10.0,       # a sweep inside input building: 6 + 5 > 8
             run={"wall_s": 8.0, "inputs_s": 6.0, "sweep_s": 5.0})
    summary.where([side], ["a"])
    line = capsys.readouterr().out
    assert "these overlap by 3 s" in line and "rest of the runs" not in line


def test_the_device_view_counts_held_stretches_once_and_names_the_longest_hold(tmp_path,
                                                                                capsys):
    side, timed = tmp_path / "A", tmp_path / "A.timed"
    finished(side, "a", 1000.0, 10.0, run={"wall_s": 10.0, "device_lock": {
        "held_s": 3.0, "run_span": [990.0, 1000.0], "sections": [[990.0, 991.0], [995.0, 997.0]]}})
    finished(side, "b", 1000.0, 10.0, run={"wall_s": 10.0, "device_lock": {
        "held_s": 1.0, "run_span": [992.0, 1002.0], "sections": [[996.0, 997.0]]}})
    finished(timed, "a", 1010.0, 8.0, run={"wall_s": 8.0, "device_lock": {
        "held_s": 8.0, "run_span": [1002.0, 1010.0], "sections": [[1002.0, 1010.0]]}})
    summary.device_view([side, timed], ["a", "b"])
    line = capsys.readouterr().out
    # held: 1 + 2 (b's stretch inside a's) + 8 = 11 s; runs going 990..1010 = 20 s
    assert "held by some run 11 s of the 20 s some run was going (55 %)" in line
    assert "longest single holds: A.timed/a 8s, A/a 2s, A/b 1s" in line
