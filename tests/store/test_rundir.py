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


def test_op_names_map_to_distinct_directory_names():
    """FlagGems has `acos` and its in-place `acos_`, `func:op` names and plain ones: no two
    op names may share a run directory, a batch's op directory or its .complete marker."""
    from harness.store.rundir import safe_name
    names = ["acos", "acos_", "_acos", "perf_sort:sort", "perf_sort_sort", "a b", "a_b",
             "vllm:x/y", "vllm_x_y", ".hidden", "_hidden", ""]
    forms = [safe_name(n) for n in names]
    assert len(set(forms)) == len(names)
    assert safe_name("acos_") == "acos_" and safe_name("softmax") == "softmax"
    assert safe_name("perf_sort:sort").startswith("perf_sort_sort-")
    for form in forms:
        assert form and not form.startswith(".") and "/" not in form and ":" not in form
    assert safe_name("perf_sort:sort") == safe_name("perf_sort:sort")      # stable


def test_a_long_op_name_gets_a_directory_name_a_file_system_takes(tmp_path):
    """A name past MAX_NAME_BYTES (file systems take 255 bytes, and a run directory adds a
    stamp) is cut and made one-to-one by its digest, letters of several bytes too."""
    from harness.store.rundir import MAX_NAME_BYTES, safe_name
    names = ["L" * 300, "L" * 299 + "M", "é" * 200, "x" * MAX_NAME_BYTES]
    forms = [safe_name(n) for n in names]
    assert len(set(forms)) == len(names)
    assert forms[3] == names[3]                                # short enough: as it is
    for form in forms:
        assert len(form.encode("utf-8")) <= MAX_NAME_BYTES
        (tmp_path / f"{form}_20261205-000000").mkdir()         # with a run's stamp


def test_an_older_roots_folder_of_a_long_name_is_still_found(tmp_path):
    """A root written before names were cut holds the uncut folder (150 bytes worked): a
    resume, a rescore or a merge reads it there; a new root uses the cut name."""
    from harness.store.rundir import op_folder, safe_name, uncapped_name
    name = "_" + "a" * 150
    assert op_folder(tmp_path, name) == tmp_path / safe_name(name)        # nothing yet
    (tmp_path / uncapped_name(name)).mkdir()
    assert op_folder(tmp_path, name) == tmp_path / uncapped_name(name)
    assert op_folder(tmp_path, "softmax") == tmp_path / "softmax"


def test_find_runs_tells_an_op_from_its_in_place_twin_and_finds_older_names(tmp_path):
    """`acos`'s run directories are `acos_<stamp>`, `acos_`'s `acos__<stamp>`: each op finds
    its own (run.json's op decides), and a run written under the older naming, which
    dropped the trailing `_`, is still found."""
    from harness.store.reader import find_runs
    now = 1_800_000_000.0
    mine = RunDir.create(tmp_path, "acos", now)
    mine.write_run_json({"op": "acos", "status": "complete", "started_at": "1"})
    twin = RunDir.create(tmp_path, "acos_", now)
    twin.write_run_json({"op": "acos_", "status": "complete", "started_at": "2"})
    legacy = tmp_path / "perf_sort_sort_20270115-080000"          # before the one-to-one form
    RunDir(legacy).path.mkdir()
    RunDir(legacy).write_run_json({"op": "perf_sort:sort", "status": "complete",
                                   "started_at": "3"})
    assert twin.path.name.startswith("acos__")
    assert find_runs(tmp_path, "acos") == [mine.path]
    assert find_runs(tmp_path, "acos_") == [twin.path]
    assert find_runs(tmp_path, "perf_sort:sort") == [legacy]


def test_a_full_disk_final_run_json_leaves_out_its_largest_details_to_fit(tmp_path):
    """run.json written over itself must end `failed` even when the final details outgrow the
    space the `running` file holds: the largest details go first, identity and status stay."""
    from harness.store.reader import load_info
    run = RunDir.create(tmp_path, "softmax")
    running = {"run_id": "r1", "op": "softmax", "status": "running", "pid": 1,
               "options": {"warmup_ms": 10}, "command": ["zlh", "bench", "softmax"]}
    run.write_run_json(running)
    room = max(os.stat(run.file("run.json")).st_blocks * 512,
               os.path.getsize(run.file("run.json")))
    final = {**running, "status": "failed", "reason": "disk full", "counts": {"ok": 1},
             "ir": {"text": "x" * room}, "telemetry": {"samples": "y" * (room // 2)}}
    assert run.write_run_json_in_place(final)
    info = load_info(run.path).info
    assert (info["status"], info["reason"], info["counts"]) == ("failed", "disk full", {"ok": 1})
    assert info["omitted_for_space"] == ["ir"] and "ir" not in info       # the largest only
    assert info["telemetry"] == final["telemetry"] and info["command"] == running["command"]
    run.write_run_json(running)                # a complete run that loses details: failed
    written = run.write_run_json_in_place({**final, "status": "complete", "reason": None},
                                          "disk full")
    assert (written["status"], written["reason"]) == ("failed", "disk full")
    assert load_info(run.path).info["status"] == "failed"
    run.write_run_json(running)
    huge = {**running, "status": "failed", "reason": "z" * (2 * room)}
    assert not run.write_run_json_in_place(huge)             # essentials alone do not fit
    assert load_info(run.path).info["status"] == "running"   # and nothing was half-written


def _row(shape: str, ms: float):
    from harness.measure.measurement import Measurement
    from harness.store.results import Row
    samples = tuple(ms * (1 + k / 100) for k in range(50))      # raw samples, as runs keep
    return Row(op="softmax", dtype="bfloat16", shape=None, shape_detail=shape, status="SUCCESS",
               torch=Measurement(samples, "event"), gems=Measurement(samples[::2], "event"))


def test_results_rewritten_per_case_serialise_each_row_once_and_stay_whole(tmp_path,
                                                                          monkeypatch):
    from harness.store import results
    made = []
    to_dict = results.Row.to_dict
    monkeypatch.setattr(results.Row, "to_dict", lambda row: made.append(1) or to_dict(row))
    run, rows, serialised = RunDir.create(tmp_path, "softmax"), [], 0
    for k in range(40):                     # what a run does after every case
        rows.append(_row(f"{k}x64", 1.0 + k))
        before = len(made)
        run.write_results(rows)
        serialised += len(made) - before
        assert (run.path / "results.jsonl").read_text() == results.rows_to_jsonl(rows)
        assert (run.path / "results.csv").read_text() == results.rows_to_csv(rows)
    assert serialised == 2 * 40     # once per row and file (2 * 820 before: 1 + 2 + … + 40)
    rows[3] = _row("replaced", 9.0)           # another row object at a kept place
    run.write_results(rows)
    assert "replaced" in (run.path / "results.jsonl").read_text()
    rows[5].reason = "changed after it was kept"
    run.write_results(rows, fresh=True)       # a run's last write: every row again
    assert (run.path / "results.jsonl").read_text() == results.rows_to_jsonl(rows)
    assert (run.path / "results.csv").read_text() == results.rows_to_csv(rows)
    assert run.rows_written == 40
