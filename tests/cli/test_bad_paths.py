"""Paths that are not what they claim to be, wherever zlh reads or writes: a FIFO in place of
a file inside a run directory or a root (refused, never waited on), a symbolic link that loops
(one line, exit 2, not pathlib's RuntimeError), a name longer than the file system allows
(exit 2, not 1 as a failed write), an environment value no process can be started with, and
device lists with absurdly long numbers.

Same contract as test_bad_inputs.py: one first line on stderr starting `zlh: `, the exit
code, no traceback. Each row runs under an alarm, so a read that would block fails the test
instead of hanging the suite.
"""
from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

from fake_runs import fake_run
from test_bad_inputs import FAST, SH

LOOP = "a symbolic link loop (the link leads back to itself)"
NOWHERE = "a symbolic link that leads nowhere"


def _fifo_in(root: Path, src: Path, name: str, rel: str) -> Path:
    target = root / "bad" / name
    shutil.copytree(src, target)
    (target / rel).unlink(missing_ok=True)
    os.mkfifo(target / rel)
    return target


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_paths")
    (root / "sh").mkdir()
    (root / "sh" / "add.yaml").write_text("add: [[64]]\n")
    rec = fake_run(root, "fx/rec")
    rep = fake_run(root, "fx/rep", mode="replay", replay_from=rec)
    (root / "r").mkdir()
    (root / "r" / "rec").symlink_to(rec)
    (root / "r" / "rep").symlink_to(rep)
    _fifo_in(root, rep, "results", "results.jsonl")
    _fifo_in(root, rec, "records", "autotune/records.json")
    (root / "loop").symlink_to("loop")
    (root / "nowhere").symlink_to(root / "no" / "such" / "target")
    (root / "bigenv.yaml").write_text("ops: [add]\nenv_a: {X: '1'}\nenv_b: {X: '%s'}\n"
                                      % ("v" * 140000))
    return root


def R(*argv, code, first, id=None):
    return pytest.param(list(argv), code, first, id=id or " ".join(argv)[:70])


BENCH = ["bench", "add", *SH, *FAST]
ROWS = [
    # ---- a FIFO inside a run directory: refused, not waited on --------------------------
    R("show", "bad/results", code=2, first="results.jsonl cannot be read: not a regular file"),
    R("ab", "r/rec", "bad/results", code=2, first="results.jsonl cannot be read: not a regular"),
    R(*BENCH, "--replay", "bad/records", code=2, first="records.json"),
    # ---- a symbolic link that loops, as any path argument -------------------------------
    R("ab", "r/rec", "loop", code=2, first=LOOP),
    R("ab", "--replay", "loop", code=2, first="loop"),
    R(*BENCH, "--replay", "loop", code=2, first=f"--replay loop: {LOOP}"),
    R("screen", "--rescore", "loop", code=2, first=LOOP),
    R("product", "run", "loop", code=2, first=LOOP),
    R("product", "reaccount", "loop", "--out", "re", code=2, first=LOOP),
    R("ops", "--flaggems-dir", "loop", code=2, first=LOOP),
    R("shapes", "derive", "--flaggems-dir", "loop", "--out", "d.yaml", code=2, first=LOOP),
    R(*BENCH, "--adapter", "flaggems", "--flaggems-dir", "loop", code=2, first=LOOP),
    # ---- an output folder or file that is a link to nowhere ------------------------------
    R(*BENCH, "--out", "loop", code=2, first=f"--out loop: {NOWHERE}"),
    R(*BENCH, "--out", "nowhere", code=2, first=f"--out nowhere: {NOWHERE}"),
    R("ab", "add", "--env-b", "X=1", *SH, *FAST, "--root", "loop", code=2,
      first=f"--root loop: {NOWHERE}"),
    R("shapes", "model", "m.json", "--tokens", "1", "--out", "loop", code=2,
      first=f"--out loop: {NOWHERE}"),
    # ---- a name too long for the file system; an environment value too long to pass -----
    R("ab", "x" * 300, "--env-b", "X=1", *SH, *FAST, code=2,
      first="unknown op 'xxxxxxxx", id="ab op of 300 characters"),
    R("ab", "r/rec", "x" * 300, code=2, first="a name longer than the file system allows",
      id="ab run dir of 300 characters"),
    R("ab", "--recipe", "bigenv.yaml", code=2,
      first="NAME=VALUE is 140002 bytes; a process takes at most 131071 per variable"),
    # ---- device lists: a number too long to be an index ---------------------------------
    *[R(*cmd, "--devices", "0" * 5000, code=2, first="--devices expects indices such as 0,1,2",
        id=f"{cmd[0]} --devices 0*5000")
      for cmd in (["batch", "--ops", "add", *SH, *FAST],
                  ["campaign", "--screen", "nonexistent"])],
    R("batch", "--ops", "add", *SH, *FAST, "--devices", "123456", code=2,
      first="--devices expects indices such as 0,1,2"),
]


def _alarm(signum, frame):
    raise TimeoutError("the command blocked (a read waiting on a FIFO?)")


@pytest.mark.parametrize("argv, code, first", ROWS)
def test_bad_path(workspace, monkeypatch, argv, code, first):
    monkeypatch.chdir(workspace)
    for name in ("FLAGGEMS_DIR", "FLAGGEMS_VLLM_DIR", "ZLH_BUILTIN_SLOW"):
        monkeypatch.delenv(name, raising=False)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        result = CliRunner().invoke(main, argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert result.exc_info is None or result.exc_info[0] is SystemExit, \
        "".join(__import__("traceback").format_exception(*result.exc_info))
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == code, result.output
    assert lines and lines[0].startswith("zlh: "), result.output
    assert first in lines[0], lines[0]
