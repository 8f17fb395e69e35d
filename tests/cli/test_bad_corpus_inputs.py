"""Bad inputs to the corpus commands and their files that still ended badly after
test_corpus_inputs.py, test_damaged_roots.py and test_bad_inputs.py: a file where a resumed
root keeps a folder (or the reverse) failed as a write (exit 1, "free space") after the ops
ran; an outcome copied from another op was taken as this op's; an option given as '' was
read as "not given"; a shape set with sizes beyond int64 was written; OSError texts with
their errno and path repeated inside the one line.

Each row: exactly one line on stderr, starting `zlh: `, with its key words, the exit code,
no traceback; a refused resume leaves the root as it was (nothing run, nothing lost).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

from test_corpus_inputs import FAST, listing



def run(args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def one_line(result, code: int, *fragments: str) -> str:
    """The contract: exit `code`, one stderr line `zlh: …` holding `fragments`, no
    traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == code, result.output
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("zlh: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "[Errno" not in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def roots(corpus_roots, corpus_campaign):
    """batch (add, softmax), screen (add) and campaign: conftest makes them once."""
    return corpus_roots


def copy(roots: Path, tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(roots / name, root, symlinks=True)
    return root


def replace(path: Path, kind: str, data: bytes = b"x") -> None:
    """`path` (file or folder) replaced by a file, a folder or a FIFO."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    {"file": lambda: path.write_bytes(data), "dir": path.mkdir,
     "fifo": lambda: os.mkfifo(path)}[kind]()


# ---- zlh batch --resume ----------------------------------------------------------------------
COMPLETE = {"schema_version": 1, "op": "add", "status": "PASS", "rc": 0, "elapsed_s": 1.0,
            "reason": "", "run_dir": None, "rows_total": 0, "rows_success": 0, "notes": []}
BATCH = [
    # before: exit 1, "zlh: ROOT/.abandoned: File exists; … free space (or make it writable)"
    # after the first op ran
    ("file", ".abandoned", None, "/.abandoned is not a folder"),
    # before: "is damaged ([Errno 22] not a regular file (a pipe or device): 'ROOT/…')"
    ("fifo", "add/.complete", None, "add/.complete is damaged (not a regular file (a pipe"),
    ("dir", "add/.complete", None, "add/.complete is damaged (Is a directory)"),
    ("fifo", "batch.json", None, "batch.json cannot be read: not a regular file (a pipe"),
    # before: accepted, add counted as finished with softmax's outcome
    ("file", "add/.complete", dict(COMPLETE, op="softmax"),
     "add/.complete is damaged (field op: expected 'add', got 'softmax')"),
    # before: accepted, more rows succeeded than there were
    ("file", "add/.complete", dict(COMPLETE, rows_total=2, rows_success=5),
     "add/.complete is damaged (field rows_success: expected an integer from 0 to 2, got 5)"),
    # before: "(ROOT/add/.complete: schema_version 99 … written by zlh a newer zlh …)"
    ("file", "add/.complete", dict(COMPLETE, schema_version=99),
     "add/.complete is damaged (schema_version 99 is newer than this zlh reads (1); it was "
     "written by a newer zlh"),
]


@pytest.mark.parametrize("kind,rel,doc,first", BATCH, ids=[r[3][:40] for r in BATCH])
@pytest.mark.e2e
def test_batch_resume_of_a_root_with_a_damaged_part(roots, tmp_path, kind, rel, doc, first):
    root = copy(roots, tmp_path, "batch")
    (root / "softmax" / ".complete").unlink()           # work left to do
    replace(root / rel, kind, json.dumps(doc).encode() if doc else b"x")
    before = listing(root)
    one_line(run(["batch", "--resume", root, "-q"]), 2, first)
    assert listing(root) == before


# ---- zlh screen --resume ---------------------------------------------------------------------
SCREEN = [
    # before: exit 1 and two lines ("A/batch.json written again … [Errno 20] Not a directory",
    # then "zlh: ROOT/A: File exists")
    ("file", "A", "/A is not a folder: side A's batch belongs there"),
    ("file", "B", "/B is not a folder: side B's batch belongs there"),
    ("dir", "A/batch.json", "side A plan"),
    # before: each of these ran every op, then failed the write: exit 1
    ("dir", "screen.tsv", "screen file"),
    ("dir", "ir_changed.txt", "screen file"),
    ("dir", "A/ops_status.csv", "batch table"),
    ("file", "B/.abandoned", "/B/.abandoned is not a folder"),
]


@pytest.mark.parametrize("kind,rel,first", SCREEN, ids=[f"{r[1]} {r[0]}" for r in SCREEN])
@pytest.mark.e2e
def test_screen_resume_of_a_root_with_a_damaged_part(roots, tmp_path, kind, rel, first):
    root = copy(roots, tmp_path, "screen")
    for side in "AB":
        complete = root / side / "add" / ".complete"
        if complete.exists():
            complete.unlink()
    replace(root / rel, kind)
    before = listing(root)
    line = one_line(run(["screen", "--resume", root]), 2, first)
    assert str(root) in line
    assert listing(root) == before


# ---- zlh campaign --resume -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["merged.json", "report.html", "status.tsv", "plan.tsv"])
@pytest.mark.e2e
def test_campaign_resume_with_a_folder_where_a_merged_file_belongs(roots, tmp_path, name):
    """Before: every card ran again, then the merge failed to write: exit 1."""
    root = copy(roots, tmp_path, "campaign")
    (root / "card0" / "report.json").unlink()           # work left to do
    replace(root / name, "dir")
    before = listing(root)
    one_line(run(["campaign", "--resume", root]), 2, f"campaign file {root}/{name}: exists "
                                                       f"and is a directory")
    assert listing(root) == before


@pytest.mark.e2e
def test_campaign_card_file_left_out_is_named_without_errno(roots, tmp_path):
    root = copy(roots, tmp_path, "campaign")
    replace(root / "card0" / "status.tsv", "dir")
    result = run(["campaign", "--resume", root])
    assert result.exit_code == 0, result.output
    said = [ln for ln in result.output.splitlines() if "left out of the merge" in ln]
    assert said == [f"zlh campaign: {root}/card0/status.tsv left out of the merge: "
                    f"Is a directory"]


# ---- options given as '' ------------------------------------------------------------------------
EMPTY = [
    ["batch", *FAST, "--ops", "add", "--dismiss", ""],      # before: the default list, rc 0
    ["batch", *FAST, "--all", "--dismiss", ""],
    ["batch", *FAST, "--ops-file", ""],
    ["screen", *FAST, "--ops", "add", "--switch", "X=0,1", "--dismiss", ""],
    ["screen", *FAST, "--ops", "add", "--recipe", ""],     # before: "say what differs …"
    ["screen", *FAST, "--ops", "add", "--switch", "X=0,1", "--python-b", ""],
    ["screen", *FAST, "--ops", "add", "--switch", ""],
]


@pytest.mark.parametrize("args", EMPTY, ids=[" ".join(a[len(FAST) + 1:]) for a in EMPTY])
def test_an_option_given_as_an_empty_value_is_refused(tmp_path, args):
    out = ["--out" if args[0] == "batch" else "--root", tmp_path / "new"]
    one_line(run([*args, *out]), 2, "an empty value")
    assert not (tmp_path / "new").exists()


# ---- zlh calibrate, partition, shapes ----------------------------------------------------------
@pytest.mark.parametrize("where", ["batch", "screen", "campaign", "batch/add"])
@pytest.mark.e2e
def test_calibrate_refuses_a_corpus_root_as_its_root(roots, tmp_path, where):
    """Before: the A/A runs were written into the batch's op folders (add/r1_A, …) and a
    report.json beside batch.json."""
    root = copy(roots, tmp_path, where.split("/")[0])
    target = tmp_path / where
    before = listing(root)
    one_line(run(["calibrate", "add", *FAST, "--root", target]), 2,
             f"--root {target} is the root of a zlh batch, screen or campaign")
    assert listing(root) == before


def test_partition_of_a_fifo_says_what_it_is(tmp_path):
    os.mkfifo(tmp_path / "screen.tsv")
    one_line(run(["partition", tmp_path / "screen.tsv", "--devices", "0"]), 2,
             "screen.tsv: not a regular file (a pipe or device)")


def test_shapes_check_with_a_folder_where_its_unmatched_file_goes(tmp_path):
    """Before: the keys were matched, then the write failed: exit 1 (and a folder named
    like a stale unmatched file: exit 1 when it was to be removed)."""
    for keys in ("nosuchop: [[4]]\n", "add: [[4]]\n"):
        (tmp_path / "s.yaml").write_text(keys)
        (tmp_path / "s.unmatched.yaml").mkdir(exist_ok=True)
        one_line(run(["shapes", "check", tmp_path / "s.yaml", "--adapter", "builtin"]), 2,
                 "s.unmatched.yaml: exists and is a directory")


def test_shapes_check_of_an_empty_path(tmp_path):
    one_line(run(["shapes", "check", "", "--adapter", "builtin"]), 2, "an empty path")


MODEL = {"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
         "vocab_size": 256}


@pytest.mark.parametrize("change,tokens,first", [
    ({}, str(2 ** 63), f"--tokens {2 ** 63} is beyond int64"),
    ({"hidden_size": 10 ** 30}, "1", "hidden_size=1000000000000000000000000000000 is not a "
                                     "whole number >= 1 within int64")])
def test_shapes_model_refuses_sizes_beyond_int64(tmp_path, change, tokens, first):
    """Before: a shape set no shape file reader takes was written (exit 0)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**MODEL, **change}))
    one_line(run(["shapes", "model", config, "--tokens", tokens, "--out", tmp_path / "m.yaml"]),
             2, first)
    assert not (tmp_path / "m.yaml").exists()


# ---- options and lines that were silently ignored or read as "the op's own" ---------------------
def test_include_skipped_without_all_is_refused(tmp_path):
    """Before: accepted and ignored (named ops run whatever their skip marks)."""
    one_line(run(["batch", *FAST, "--ops", "add", "--include-skipped", "--out", tmp_path / "b"]),
             2, "--include-skipped goes with --all")
    assert not (tmp_path / "b").exists()


def test_an_ops_file_dtypes_field_of_commas_only_is_refused(tmp_path):
    """Before: `add::,` fell back to the op's own dtypes while `--dtypes ,` was refused."""
    (tmp_path / "ops.txt").write_text("add::,\n")
    one_line(run(["batch", *FAST, "--ops-file", tmp_path / "ops.txt", "--out", tmp_path / "b"]),
             2, "ops.txt:1: the dtypes field ',' names no dtype")
    assert not (tmp_path / "b").exists()


def test_an_unknown_verdict_is_refused(tmp_path):
    """Before: accepted; it matched no op ("no op with verdict IR_CHANGD")."""
    (tmp_path / "screen.tsv").write_text("op\tverdict\telapsed_a\telapsed_b\nadd\tIR_CHANGED\t1\t1\n")
    one_line(run(["partition", tmp_path / "screen.tsv", "--devices", "0", "--verdict",
                  "IR_CHANGD"]), 2, "'IR_CHANGD' is not one of 'IR_CHANGED'")
