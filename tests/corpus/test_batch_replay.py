"""`zlh batch --replay BATCH_DIR`: every op replays the record its run in an earlier batch
made (configs pinned), an op without one is SKIP, and bad roots are refused in one line."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.corpus.files import replay_source
from conftest import FAST

pytestmark = pytest.mark.e2e        # every test here starts zlh processes


def batch(tmp_path, *args):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\nmm: [[16, 16, 16]]\n")
    return CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                     "--shapes", str(shapes), *FAST, *args])


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Record batches made once (ops: "add", "add,mm", "add,mm,softmax"); each test replays
    or damages its own copy, made by `record_of`."""
    base = tmp_path_factory.mktemp("records")
    for ops in ("add", "add,mm", "add,mm,softmax"):
        result = batch(base, "--ops", ops, "--out", str(base / ops))
        assert result.exit_code == 0, result.output
    return base


def record_of(records: Path, ops: str, to: Path) -> Path:
    """A copy at `to` of the record batch of `ops`, as if `zlh batch --ops OPS` had made it
    there."""
    shutil.copytree(records / ops, to, symlinks=True)
    return to


def rows(root: Path) -> dict[str, dict]:
    with open(root / "ops_status.csv", newline="") as handle:
        return {r["op"]: r for r in csv.DictReader(handle)}


def run_info(root: Path, row: dict) -> dict:
    return json.loads((root / row["run_dir"] / "run.json").read_text())


def test_a_batch_replays_each_ops_record_and_skips_ops_without_one(tmp_path, records):
    record = record_of(records, "add,mm", tmp_path / "rec")
    result = batch(tmp_path, "--ops", "add,mm,softmax", "--replay", str(record),
                   "--out", str(tmp_path / "rep"))
    assert result.exit_code == 0, result.output
    got = rows(tmp_path / "rep")
    assert got["add"]["status"] == got["mm"]["status"] == "PASS"
    assert got["softmax"]["status"] == "SKIP" and got["softmax"]["notes"] == "no_record"
    assert "did not finish in --replay" in got["softmax"]["reason"]
    recorded = rows(record)
    for op in ("add", "mm"):
        info = run_info(tmp_path / "rep", got[op])
        assert info["caliber"]["autotune_mode"] == "replay"
        assert run_info(record, recorded[op])["caliber"]["autotune_mode"] == "record"
    doc = json.loads((tmp_path / "rep" / "batch.json").read_text())
    assert doc["replay_root"] == str(record.resolve())


def test_a_replay_batch_cannot_serve_as_a_record(tmp_path, records):
    record, again = record_of(records, "add", tmp_path / "rec"), tmp_path / "rep"
    assert batch(tmp_path, "--ops", "add", "--replay", str(record),
                 "--out", str(again)).exit_code == 0
    reason = replay_source(again, "add", "cpu")
    assert isinstance(reason, str) and "replayed configs" in reason
    assert replay_source(record, "add", "cpu") == record / rows(record)["add"]["run_dir"]
    result = batch(tmp_path, "--ops", "add", "--replay", str(again),
                   "--out", str(tmp_path / "third"))
    assert result.exit_code == 2 and "none of the 1 selected ops has a usable record" in \
        result.output


def test_a_record_run_that_did_not_complete_is_not_replayed(tmp_path, records):
    record = record_of(records, "add,mm", tmp_path / "rec")
    info_path = record / rows(record)["add"]["run_dir"] / "run.json"
    info = json.loads(info_path.read_text())
    info["status"] = "poisoned"                    # as a record run the device ended
    info_path.write_text(json.dumps(info))
    reason = replay_source(record, "add", "cpu")
    assert isinstance(reason, str) and "did not complete (status poisoned" in reason, reason
    result = batch(tmp_path, "--ops", "add,mm", "--replay", str(record),
                   "--out", str(tmp_path / "rep"))
    assert result.exit_code == 0, result.output
    got = rows(tmp_path / "rep")
    assert (got["add"]["status"], got["add"]["notes"]) == ("SKIP", "no_record")
    assert got["mm"]["status"] == "PASS"


def test_bad_replay_roots_are_one_line_usage_errors(tmp_path, records):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    for root, words in ((tmp_path / "missing", "no such batch root"),
                        (tmp_path / "file", "is a file"),
                        (tmp_path / "empty", "not a batch root")):
        result = batch(tmp_path, "--ops", "add", "--replay", str(root),
                       "--out", str(tmp_path / "out"))
        assert result.exit_code == 2 and words in result.output, result.output
        assert "Traceback" not in result.output
    record = record_of(records, "add", tmp_path / "rec")
    result = batch(tmp_path, "--ops", "add", "--replay", str(record), "--out", str(record))
    assert result.exit_code == 2 and "is also --out" in result.output


def test_a_resumed_replay_batch_needs_its_record_batch(tmp_path, records):
    record, rep = record_of(records, "add", tmp_path / "rec"), tmp_path / "rep"
    assert batch(tmp_path, "--ops", "add", "--replay", str(record),
                 "--out", str(rep)).exit_code == 0
    (rep / "add" / ".complete").unlink()                 # as if killed before it finished
    result = CliRunner().invoke(main, ["batch", "--resume", str(rep)])
    assert result.exit_code == 0, result.output
    assert run_info(rep, rows(rep)["add"])["caliber"]["autotune_mode"] == "replay"
    record.rename(tmp_path / "moved")
    (rep / "add" / ".complete").unlink()
    result = CliRunner().invoke(main, ["batch", "--resume", str(rep)])
    assert result.exit_code == 2 and "no such batch root" in result.output


def test_a_replay_that_would_measure_nothing_or_on_another_backend_is_refused(tmp_path,
                                                                                 records):
    record = record_of(records, "add", tmp_path / "rec")
    result = batch(tmp_path, "--ops", "softmax,mm", "--replay", str(record),
                   "--out", str(tmp_path / "none"))
    assert result.exit_code == 2 and "none of the 2 selected ops has a usable record" in \
        result.output
    assert not (tmp_path / "none").exists()
    doc = json.loads((record / "batch.json").read_text())
    doc["caliber"]["backend"] = "cuda"
    (record / "batch.json").write_text(json.dumps(doc))
    result = batch(tmp_path, "--ops", "add", "--replay", str(record),
                   "--out", str(tmp_path / "other"))
    assert result.exit_code == 2 and "recorded on backend cuda" in result.output


def test_records_that_were_never_completed_or_are_damaged_are_skips(tmp_path, records):
    record = record_of(records, "add,mm,softmax", tmp_path / "rec")
    recorded = rows(record)
    for meta in (record / recorded["mm"]["run_dir"]).rglob("meta.json"):
        meta.unlink()                          # as if the op was killed before writing it
    info = record / recorded["softmax"]["run_dir"] / "run.json"
    info.write_text(json.dumps({**json.loads(info.read_text()), "caliber": "damaged"}))
    doc = json.loads((record / "batch.json").read_text())
    (record / "batch.json").write_text(json.dumps({**doc, "caliber": ["damaged"]}))
    result = batch(tmp_path, "--ops", "add,mm,softmax", "--replay", str(record),
                   "--out", str(tmp_path / "rep"))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    got = rows(tmp_path / "rep")
    assert got["add"]["status"] == "PASS"
    assert got["mm"]["status"] == "SKIP" and got["mm"]["notes"] == "no_record"
    assert "not a record run" in got["mm"]["reason"]
    assert got["softmax"]["status"] == "PASS"        # its record files are intact


def test_a_resume_tries_again_the_ops_the_record_batch_has_finished_since(tmp_path, records):
    record, rep = record_of(records, "add,mm,softmax", tmp_path / "rec"), tmp_path / "rep"
    (record / "softmax" / ".complete").unlink()          # the record batch was cut short
    assert batch(tmp_path, "--ops", "add,softmax", "--replay", str(record),
                 "--out", str(rep)).exit_code == 0
    assert rows(rep)["softmax"]["notes"] == "no_record"
    assert CliRunner().invoke(main, ["batch", "--resume", str(record)]).exit_code == 0
    result = CliRunner().invoke(main, ["batch", "--resume", str(rep)])
    assert result.exit_code == 0, result.output
    assert rows(rep)["softmax"]["status"] == "PASS"
    assert run_info(rep, rows(rep)["softmax"])["caliber"]["autotune_mode"] == "replay"


def test_a_record_batch_still_being_written_is_refused(tmp_path, records):
    record = record_of(records, "add", tmp_path / "rec")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0)\n"
         "os.pwrite(fd, b'zlh batch, pid 1', 0)\n"
         "print('held', flush=True); time.sleep(60)", str(record / ".zlh-lock")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = batch(tmp_path, "--ops", "add", "--replay", str(record),
                       "--out", str(tmp_path / "rep"))
        assert result.exit_code == 2 and "is still being written (zlh batch, pid 1)" in \
            result.output
    finally:
        holder.kill()
        holder.wait()
    assert batch(tmp_path, "--ops", "add", "--replay", str(record),
                 "--out", str(tmp_path / "rep2")).exit_code == 0
