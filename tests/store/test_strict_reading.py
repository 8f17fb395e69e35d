"""Strict reading of the files zlh wrote: a number that is not finite (`Infinity`, `NaN`,
`1e999`), a schema_version that is not an integer (`"1"`) and a status spelled otherwise than
zlh writes it (`"COMPLETE"`) are damage, refused on one line that names the file and the
field (exit 2) — in run.json, results.jsonl, report.json, batch.json, an op's .complete,
screen.json and campaign.json alike (all read through one parser)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from fake_runs import fake_run
from harness.cli import main
from harness.common.documents import NotFinite, loads_json
from harness.common.errors import UsageError
from harness.common.files import read_json_object
from harness.corpus.files import read_complete
from harness.store.reader import load_run


def _edit_run(run, **change):
    info = json.loads((run / "run.json").read_text())
    info.update(change)
    return info


def _one_line(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("field, text, fragment", [
    ("wall_s", "Infinity", "field wall_s: expected a finite number, got Infinity"),
    ("wall_s", "-Infinity", "field wall_s: expected a finite number, got -Infinity"),
    ("inputs_s", "NaN", "field inputs_s: expected a finite number, got NaN"),
    ("wall_s", "1e999", "field wall_s: expected a finite number, got Infinity"),
    ("schema_version", '"1"', "schema_version '1' is not a version number"),
    ("status", '"COMPLETE"', "field status: expected running or complete or"),
    ("wall_s", "-1", "field wall_s: expected a finite number >= 0, got -1"),
])
def test_a_damaged_run_json_is_refused_naming_file_and_field(tmp_path, field, text, fragment):
    run = fake_run(tmp_path, "run")
    other = fake_run(tmp_path, "b", mode="replay", replay_from=run)
    info = _edit_run(run, **{field: "HERE"})
    (run / "run.json").write_text(json.dumps(info).replace('"HERE"', text))
    for args in (["show", str(run)], ["ab", str(run), str(other)]):
        _one_line(CliRunner().invoke(main, args), f"{run / 'run.json'}", fragment)


def test_a_nested_non_finite_number_names_its_path(tmp_path):
    run = fake_run(tmp_path, "run")
    text = (run / "run.json").read_text().replace('"warmup_ms": 1.0', '"warmup_ms": NaN')
    (run / "run.json").write_text(text)
    with pytest.raises(UsageError, match=r"run\.json: field caliber\.warmup_ms: expected a "
                                         r"finite number, got NaN"):
        load_run(run)
    with pytest.raises(NotFinite, match=r"field rows\[1\]\.a_ms"):
        loads_json('{"rows": [{"a_ms": 1.0}, {"a_ms": Infinity}]}')
    assert loads_json('{"a": NaN}', constants=True)["a"] != 0      # only when asked


def test_a_result_row_with_infinity_is_refused(tmp_path):
    run = fake_run(tmp_path, "run")
    path = run / "results.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row["gems_ms"] = "HERE"
    path.write_text(json.dumps(row).replace('"HERE"', "Infinity") + "\n")
    _one_line(CliRunner().invoke(main, ["show", str(run)]), f"{path}: line 1",
              "field gems_ms: expected a finite number, got Infinity")


@pytest.mark.parametrize("name", ["report.json", "batch.json", "screen.json", "campaign.json",
                                  "calibration.json"])
@pytest.mark.parametrize("change, fragment", [
    ('"schema_version": "1"', "schema_version '1' is not a version number"),
    ('"schema_version": 1, "wall_s": Infinity',
     "field wall_s: expected a finite number, got Infinity")])
def test_every_root_document_is_read_strictly(tmp_path, name, change, fragment):
    path = tmp_path / name
    path.write_text("{" + change + ', "ops": []}')
    with pytest.raises(UsageError) as caught:
        read_json_object(path, "missing")
    assert str(caught.value).startswith(f"{path}: ") and fragment in str(caught.value)


def test_an_ops_complete_file_is_read_strictly(tmp_path):
    (tmp_path / "add").mkdir()
    (tmp_path / "add" / ".complete").write_text(
        '{"schema_version": 1, "op": "add", "status": "PASS", "rc": 0, "elapsed_s": Infinity}')
    with pytest.raises(UsageError, match=r"\.complete is damaged \(field elapsed_s: expected a "
                                         r"finite number, got Infinity"):
        read_complete(tmp_path, "add")
    (tmp_path / "add" / ".complete").write_text(
        '{"schema_version": "1", "op": "add", "status": "PASS", "rc": 0, "elapsed_s": 1.0}')
    with pytest.raises(UsageError, match=r"schema_version '1' is not a version number"):
        read_complete(tmp_path, "add")


def test_a_report_json_with_an_unknown_interval_is_refused(tmp_path):
    root = tmp_path / "ab"
    doc = {"schema_version": 1, "ops": [{"op": "add", "rows": [], "summary": {
        "geomean_interval": "ROUNDS"}}]}
    root.mkdir()
    (root / "report.json").write_text(json.dumps(doc))
    _one_line(CliRunner().invoke(main, ["report", str(root)]), str(root / "report.json"),
              "field geomean_interval: expected samples or rounds, got 'ROUNDS'")
