"""Files that are not what zlh expects: a symbolic link loop, a directory where a file
belongs, a damaged or unfinished record run, an output path that cannot be made, values that
no measurement or shape can hold, and a stored plan whose options cannot run.

Each one is one line on stderr starting `zlh: ` that names what is wrong, with the exit
code of SPEC section 5, and no traceback.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

from fake_runs import fake_run
from test_bad_inputs import FAST, SH
from conftest import FIXTURES

LOOP = "a symbolic link loop (the link leads back to itself)"
BENCH = ["bench", "add", *SH, *FAST]


def _edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _run(root: Path, name: str) -> Path:
    """A fake record run at exactly root/name (fake_run makes root/name/<op>_<time>)."""
    made = fake_run(root, f"made/{name}")
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    made.rename(target)
    return target


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_files")
    (root / "sh").mkdir()
    (root / "sh" / "add.yaml").write_text("add: [[64]]\n")
    (root / "sh" / "big.yaml").write_text("add: [[64, 9223372036854775808]]\n")
    (root / "loop").symlink_to("loop")
    (root / "adir").mkdir()
    _run(root, "fx/rec")
    dirjson = _run(root, "fx/dirjson")
    (dirjson / "run.json").unlink()
    (dirjson / "run.json").mkdir()
    (_run(root, "fx/broken") / "run.json").write_text("{not json")
    killed = _run(root, "fx/killed")
    _edit_json(killed / "run.json", lambda d: d.update(status="running", pid=2 ** 22 + 12345))
    huge = _run(root, "fx/huge")
    lines = [json.loads(ln) for ln in (huge / "results.jsonl").read_text().splitlines()]
    lines[0]["gems"]["samples_ms"] = [1e308] * 5
    (huge / "results.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    (root / "screen.tsv").write_text("op\tverdict\telapsed_a\telapsed_b\n"
                                     "add\tIR_CHANGED\t1e308\t0\nmul\tIR_CHANGED\t1e308\t1\n"
                                     "sub\tIR_CHANGED\t3\t4\n")
    return root


def R(*argv, code, first, id=None):
    return pytest.param(list(argv), code, first, id=id or " ".join(argv)[:70])


ROWS = [
    # ---- a symbolic link loop: said so, not "not found" ----------------------------------
    R(*BENCH[:2], "--shapes", "loop", *FAST, code=2, first=f"shape file loop: {LOOP}"),
    R("show", "loop", code=2, first=f"loop: {LOOP}"),
    R("fingerprint", "loop", code=2, first=f"loop: {LOOP}"),
    R(*BENCH, "--replay", "loop", code=2, first=f"--replay loop: {LOOP}"),
    # ---- a directory where a file belongs: named by its path, not a descriptor number ----
    R(*BENCH[:2], "--shapes", "adir", *FAST, code=2, first="shape file adir is a directory"),
    R("show", "fx/dirjson", code=2,
      first="fx/dirjson/run.json is a directory, not a file"),
    R("fingerprint", "fx/dirjson", code=2,
      first="fx/dirjson/run.json is a directory, not a file"),
    # ---- a record run that is damaged or did not finish: bench refuses it as ab does -----
    R(*BENCH, "--replay", "fx/broken", code=2, first="fx/broken/run.json cannot be read"),
    R("ab", "--replay", "fx/broken", "--root", "abr", code=2,
      first="fx/broken/run.json cannot be read"),
    R(*BENCH, "--replay", "fx/killed", code=4,
      first="--replay fx/killed: the run did not complete (status abandoned"),
    R("ab", "--replay", "fx/killed", "--root", "abk", code=4,
      first="--replay fx/killed: the run did not complete (status abandoned"),
    # ---- an output file whose folder cannot be made --------------------------------------
    R("shapes", "derive", "--flaggems-dir", str(FIXTURES /
                                               "fake_flaggems"),
      "--out", "/proc/x/y.yaml", code=2, first="--out /proc/x/y.yaml: /proc/x: cannot create"),
    # ---- numbers no time or shape can be ---------------------------------------------------
    R("partition", "screen.tsv", "--devices", "0", code=2,
      first="screen.tsv: line 2: elapsed_a 1e308 is not a plausible time in seconds"),
    R("show", "fx/huge", code=2,
      first="fx/huge/results.jsonl: line 1 is not a result row (field gems.samples_ms"),
    R("ab", "fx/rec", "fx/huge", code=2, first="fx/huge/results.jsonl: line 1 is not a result"),
    R(*BENCH[:2], "--shapes", "sh/big.yaml", *FAST, code=2,
      first="sh/big.yaml: 'add' has a size 9223372036854775808 beyond int64"),
]


def _invoke(workspace, monkeypatch, argv):
    monkeypatch.chdir(workspace)
    for name in ("FLAGGEMS_DIR", "FLAGGEMS_VLLM_DIR", "ZLH_BUILTIN_SLOW", "ZLH_REPLAY_PARTIAL"):
        monkeypatch.delenv(name, raising=False)
    return CliRunner().invoke(main, argv)


def _check(result, code, first):
    assert result.exc_info is None or result.exc_info[0] is SystemExit, \
        "".join(__import__("traceback").format_exception(*result.exc_info))
    assert "Traceback" not in result.output
    assert "Warning" not in result.stderr, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == code, result.output
    assert lines and lines[0].startswith("zlh: "), result.output
    assert first in lines[0], lines[0]
    assert len(lines) == 1, result.stderr


@pytest.mark.parametrize("argv, code, first", ROWS)
def test_bad_file(workspace, monkeypatch, argv, code, first):
    _check(_invoke(workspace, monkeypatch, argv), code, first)


@pytest.mark.e2e
def test_a_resumed_batch_with_an_option_that_cannot_run_is_refused_at_once(tmp_path,
                                                                          monkeypatch,
                                                                          corpus_batch):
    """batch.json's options.plant_pct without a replay: one line before any op runs (exit 2),
    as `zlh bench --plant-pct` without --replay is, not a FAIL for every op."""
    shutil.copytree(corpus_batch, tmp_path / "bt")  # a finished `zlh batch` on the cpu
    monkeypatch.chdir(tmp_path)
    _edit_json(tmp_path / "bt" / "batch.json",
               lambda d: d["options"].update(plant_pct=1.5))
    resumed = CliRunner().invoke(main, ["batch", "--resume", "bt"])
    _check(resumed, 2, "bt/batch.json: --plant-pct needs --replay RUN_A")
