"""Resume and rescore of batch and screen roots whose files were damaged or edited: one
`zlh:` line naming the file and the field, exit 2, and nothing run; a screen side whose
derived batch.json is gone is written again from screen.json, its finished ops kept."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

from conftest import CPU_FAST

pytestmark = pytest.mark.e2e        # every test here starts zlh processes

FAST = CPU_FAST


@pytest.fixture(scope="module")
def roots(corpus_roots):
    """batch (add, softmax) and screen (add): conftest makes them once."""
    return corpus_roots


def damaged(roots: Path, tmp_path: Path, name: str, file: str, edit) -> Path:
    root = tmp_path / name
    shutil.copytree(roots / name, root, symlinks=True)
    path = root / file
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return root


def set_(key, value):
    return lambda d: d.__setitem__(key, value)


BATCH_CASES = [
    ("batch.json", set_("ops", ["add"]), "batch.json: field ops: expected a list of objects"),
    ("batch.json", set_("ops", [{"op": 5}]), "batch.json: ops[0]: field op: expected a non-empty"),
    ("batch.json", set_("ops", [{"op": "add", "dtypes": "float32"}]),
     "ops[0]: field dtypes: expected null or a non-empty list"),
    ("batch.json", set_("devices", ["0"]), "field devices: expected a non-empty list of distinct"),
    ("batch.json", set_("options", "x"), "batch.json: field options: expected an object"),
    ("batch.json", set_("retries", -1), "field retries: expected an integer >= 0, got -1"),
    ("batch.json", set_("op_timeout_s", "x"), "field op_timeout_s: expected a finite number"),
    ("batch.json", set_("left_out", "x"), "field left_out: expected a list of objects"),
    ("add/.complete", set_("status", "BOGUS"), "add/.complete is damaged (field status: expected"),
    ("add/.complete", set_("notes", "x"), "(field notes: expected a list of strings, got 'x')"),
    ("add/.complete", set_("device", "x"), "(field device: expected a device index, got 'x')"),
]


@pytest.mark.parametrize("file,edit,first", BATCH_CASES, ids=[c[2][:40] for c in BATCH_CASES])
def test_batch_resume_on_a_damaged_root_is_one_line(roots, tmp_path, file, edit, first):
    root = damaged(roots, tmp_path, "batch", file, edit)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip().splitlines()[0]
    assert line.startswith("zlh: ") and first in line, line
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


SCREEN_CASES = [
    (set_("A", "x"), "screen.json: field A: expected an object, got 'x'"),
    (lambda d: d["A"].__setitem__("env", ["X=1"]), "field A.env: expected an object of NAME"),
    (set_("batch", "x"), "screen.json: field batch: expected an object"),
    (lambda d: d["batch"].__setitem__("devices", []),
     "screen.json: batch: field devices: expected a non-empty list"),
    (set_("scrub", "("), "screen.json: field scrub: expected a list of strings"),
]


@pytest.mark.parametrize("verb", ["--resume", "--rescore"])
@pytest.mark.parametrize("edit,first", SCREEN_CASES, ids=[c[1][:40] for c in SCREEN_CASES])
def test_screen_on_a_damaged_plan_is_one_line(roots, tmp_path, verb, edit, first):
    root = damaged(roots, tmp_path, "screen", "screen.json", edit)
    result = CliRunner().invoke(main, ["screen", verb, str(root)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip().splitlines()[0]
    assert line.startswith("zlh: ") and first in line, line


@pytest.mark.parametrize("damage", ["delete side", "garbage batch.json"])
def test_screen_resume_writes_a_lost_side_plan_again(roots, tmp_path, damage):
    """Before: a thread traceback, exit 0 and side A's record never written."""
    root = tmp_path / "screen"
    shutil.copytree(roots / "screen", root, symlinks=True)
    if damage == "delete side":
        shutil.rmtree(root / "A")
    else:
        (root / "A" / "batch.json").write_text("garbage")
    result = CliRunner().invoke(main, ["screen", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "A/batch.json written again from" in result.output
    assert json.loads((root / "A" / "batch.json").read_text())["ops"][0]["op"] == "add"
    assert (root / "A" / "add" / ".complete").exists()
    assert (root / "B" / "add" / ".complete").exists()


@pytest.fixture(scope="module")
def campaign_root(corpus_campaign):
    return corpus_campaign


@pytest.mark.parametrize("file,data", [("report.json", b"garbage"),
                                       ("status.tsv", b"\xff\xfe\x00")])
def test_campaign_resume_merges_past_a_damaged_card_file(campaign_root, tmp_path, file, data):
    """Before: a damaged card report stopped the merge (exit 2, nothing merged) and a binary
    status.tsv ended in a traceback. Now the file is left out on one line and the rest merged;
    a lost report's ops run again."""
    root = tmp_path / "campaign"
    shutil.copytree(campaign_root, root, symlinks=True)
    (root / "card0" / file).write_bytes(data)
    result = CliRunner().invoke(main, ["campaign", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert f"card0/{file} left out of the merge" in result.output
    merged = json.loads((root / "merged.json").read_text())
    assert merged["ops_reported"] == ["add"]


def test_a_status_row_cut_short_is_left_out_alone(campaign_root, tmp_path):
    """An append to a card's status.tsv that did not finish (a kill, a full disk) left a row
    of fewer fields: the whole card's status was left out of the merge. Now that row alone is
    left out and said, and the next append starts a line of its own."""
    from harness.ab.runs import RunOutcome, append_status
    root = tmp_path / "campaign"
    shutil.copytree(campaign_root, root, symlinks=True)
    status = root / "card0" / "status.tsv"
    whole = status.read_text().splitlines()
    assert len(whole) >= 3
    status.write_text("\n".join(whole) + "\n" + whole[-1][:5])       # a row cut short
    result = CliRunner().invoke(main, ["campaign", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    assert f"line(s) {len(whole) + 1} cut short" in result.output
    merged = (root / "status.tsv").read_text().splitlines()
    assert len(merged) == len(whole)                 # header and every whole row
    append_status(root / "card0", "add", RunOutcome(9, "A", 0, 1.0, None, root / "x.log"))
    lines = status.read_text().splitlines()
    assert lines[-2] == whole[-1][:5] and lines[-1].startswith("9\tadd\t")
