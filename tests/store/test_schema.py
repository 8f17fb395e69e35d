"""Versioned machine output: schema_version and zlh_version in every JSON zlh writes, the
shipped JSON Schemas validate real outputs, and readers refuse a newer major version."""
from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import harness
from harness.cli import main
from harness.common.errors import UsageError
from harness.common.files import atomic_write_json
from harness.common.schema import SCHEMA_VERSION, check_readable, schema_path
from harness.store.reader import load_run
from harness.version import __version__
from conftest import ROOT

TINY = dict(adapter="builtin", backend="cpu", warmup_ms=1.0, min_samples=3, min_time_ms=0.0,
            max_time_ms=20.0)


def validator(name: str):
    schema = json.loads(schema_path(name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("schema")
    shapes = root / "add.yaml"
    shapes.write_text("add: [[256], [1000]]\n")
    run_a = harness.bench("add", shapes=str(shapes), out=str(root / "a"), **TINY)
    run_b = harness.bench("add", shapes=str(shapes), out=str(root / "b"),
                          replay=str(run_a.run_dir), **TINY)
    return root, run_a, run_b


def test_schemas_ship_as_package_data():
    for name in ("run", "result_row", "report"):
        assert schema_path(name).is_file()
        validator(name)
    setup = (ROOT / "setup.cfg").read_text()
    assert "harness = schemas/*.json" in setup


def test_run_json_and_rows_validate(two_runs):
    _, run_a, run_b = two_runs
    for run in (run_a, run_b):
        info = json.loads((run.run_dir / "run.json").read_text())
        errors = sorted(validator("run").iter_errors(info), key=str)
        assert not errors, [e.message for e in errors]
        assert info["schema_version"] == SCHEMA_VERSION and info["zlh_version"] == __version__
        lines = (run.run_dir / "results.jsonl").read_text().splitlines()
        assert len(lines) == 2
        rows = validator("result_row")
        for line in lines:
            row = json.loads(line)
            assert not list(rows.iter_errors(row)), list(rows.iter_errors(row))[0].message
            assert row["zlh_version"] == __version__


def test_every_json_file_of_a_run_is_versioned(two_runs):
    _, run_a, run_b = two_runs
    files = [p for run in (run_a, run_b) for p in run.run_dir.rglob("*.json")]
    assert {p.name for p in files} >= {"run.json", "records.json", "meta.json"}
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["schema_version"] == SCHEMA_VERSION and doc["zlh_version"] == __version__, \
            path


def test_report_json_and_json_output_validate(two_runs):
    root, run_a, run_b = two_runs
    result = CliRunner().invoke(main, ["ab", str(run_a.run_dir), str(run_b.run_dir), "--root",
                                       str(root / "ab"), "--json"])
    assert result.exit_code == 0, result.output
    for doc in (json.loads(result.stdout),
                json.loads((root / "ab" / "report.json").read_text())):
        errors = list(validator("report").iter_errors(doc))
        assert not errors, errors[0].message
        assert doc["zlh_version"] == __version__ and len(doc["rows"]) == 2


def test_readers_refuse_a_newer_major_version(two_runs, tmp_path):
    _, run_a, _ = two_runs
    copy = tmp_path / "newer"
    copy.mkdir()
    info = json.loads((run_a.run_dir / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps(dict(info, schema_version=2, zlh_version="9.0")))
    result = CliRunner().invoke(main, ["show", str(copy)])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "schema_version 2 is newer than this zlh reads (1)" in result.stderr
    assert "written by zlh 9.0" in result.stderr
    # a results row from a newer layout is refused as well
    (copy / "run.json").write_text(json.dumps(info))
    (copy / "results.jsonl").write_text(json.dumps({"schema_version": "2.1", "op": "add"}) + "\n")
    with pytest.raises(UsageError, match="line 1: schema_version 2.1 is newer"):
        load_run(copy)
    # ... and an A/B report
    report = tmp_path / "ab"
    report.mkdir()
    (report / "report.json").write_text(json.dumps({"schema_version": 3, "ops": []}))
    result = CliRunner().invoke(main, ["report", str(report)])
    assert result.exit_code == 2 and "schema_version 3 is newer" in result.stderr


def test_older_and_current_versions_are_read():
    assert check_readable({"schema_version": 1}, "x") == {"schema_version": 1}
    with pytest.raises(UsageError, match="is not a version number"):
        check_readable({"schema_version": "1.4"}, "x")              # zlh writes integers
    assert check_readable({"no": "version"}, "x")                   # files before versions


def test_atomic_json_writes_stamp_documents(tmp_path):
    atomic_write_json(tmp_path / "x.json", {"kind": "thing", "schema_version": 1})
    doc = json.loads((tmp_path / "x.json").read_text())
    assert list(doc)[:3] == ["schema_version", "zlh_version", "kind"]


def test_triton_is_only_an_extra():
    """`pip install zlh` must never pull upstream Triton over the compiler under test."""
    requires = importlib.metadata.requires("zlh") or []
    triton = [r for r in requires if r.split(";")[0].strip().lower().startswith("triton")]
    assert triton, requires
    assert all("extra ==" in r for r in triton), triton
    assert any('extra == "triton"' in r for r in triton)
    # not even the test extra: `pip install -e '.[test]'` beside FlagTree would replace it
    assert not any('extra == "test"' in r for r in triton), triton
    assert any(r.startswith("jsonschema") and 'extra == "test"' in r for r in requires)
    assert importlib.metadata.version("zlh") == __version__


def test_a_garbled_version_is_refused_not_read_as_unversioned(two_runs, tmp_path):
    """`schema_version: "x"` is damage, not an older file: one line, exit 2."""
    with pytest.raises(UsageError, match=r"x: schema_version 'x' is not a version number"):
        check_readable({"schema_version": "x"}, "x")
    for bad in ([1], True, "v2", 1.5):
        with pytest.raises(UsageError, match="is not a version number"):
            check_readable({"schema_version": bad}, "doc")
    _, run_a, _ = two_runs
    copy = tmp_path / "garbled"
    copy.mkdir()
    info = json.loads((run_a.run_dir / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps(dict(info, schema_version="x")))
    result = CliRunner().invoke(main, ["show", str(copy)])
    assert result.exit_code == 2, result.output
    assert "schema_version 'x' is not a version number" in result.stderr
    assert "Traceback" not in result.output
