"""run.json never counts a row results.jsonl lacks: a run whose results could not all be
written is marked failed with its counts from what was written; a run whose run.json counts
rows its results file lacks (fewer, none, the file gone) is said by every reader — `zlh show`
warns, `zlh ab RUN_A RUN_B` refuses it as it refuses an unfinished run (exit 4) and with
--allow-partial compares the rows there are, with a warning."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.store import rundir as rundir_mod
from harness.store.reader import RESULTS_LOST, load_run
from conftest import CPU_FAST



def _bench(tmp_path: Path, out: Path, *args) -> Path:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64], [128], [256]]\n")
    result = CliRunner().invoke(main, ["bench", "add", "--shapes", str(shapes), "--out",
                                       str(out), "-q", *CPU_FAST, *args])
    assert result.exit_code == 0, result.output
    (run,) = [p for p in out.iterdir() if p.name.startswith("add_")]
    return run


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    """A record run and a run replaying it: a comparable pair, 3 rows each."""
    tmp = tmp_path_factory.mktemp("pair")
    a = _bench(tmp, tmp / "a")
    b = _bench(tmp, tmp / "b", "--replay", str(a))
    return a, b


def _copy(run: Path, where: Path) -> Path:
    return Path(shutil.copytree(run, where / run.name))


def test_disk_full_mid_run_never_counts_a_row_the_results_file_lacks(tmp_path, monkeypatch):
    real = rundir_mod.atomic_write_text

    def full_after_two(path, text):
        if Path(path).name == rundir_mod.RESULTS_JSONL and text.count("\n") > 2:
            raise OSError(28, "No space left on device", str(path))
        return real(path, text)

    monkeypatch.setattr(rundir_mod, "atomic_write_text", full_after_two)
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64], [128], [256]]\n")
    result = CliRunner().invoke(main, ["bench", "add", "--shapes", str(shapes), "--out",
                                       str(tmp_path / "runs"), "-q", *CPU_FAST])
    assert result.exit_code == 1, result.output
    assert "disk full" in result.output and "marked failed" in result.output
    assert "WARNING: 1 measured case(s) could not be written to results.jsonl (disk full); " \
        "run.json counts the 2 row(s) it holds" in result.output
    (run,) = (tmp_path / "runs").glob("add_*")
    info = json.loads((run / "run.json").read_text())
    rows = (run / "results.jsonl").read_text().splitlines()
    assert len(rows) == 2 and info["counts"]["SUCCESS"] == 2         # what the file holds
    assert (info["status"], info["reason"], info["unwritten_rows"]) == ("failed", "disk full", 1)
    assert load_run(run).lost is None


@pytest.mark.parametrize("damage", ["fewer", "none", "missing"])
def test_a_complete_run_lacking_rows_is_said_by_its_readers(pair, tmp_path, damage):
    a, b = pair
    b = _copy(b, tmp_path)
    results = b / "results.jsonl"
    if damage == "missing":
        results.unlink()
    else:
        kept = results.read_text().splitlines()[:1 if damage == "fewer" else 0]
        results.write_text("".join(line + "\n" for line in kept))
    assert load_run(b).status == RESULTS_LOST

    shown = CliRunner().invoke(main, ["show", str(b)])
    assert shown.exit_code == 0, shown.output
    assert "WARNING: run.json says complete, but" in shown.output
    assert f"{results} " in shown.output and "run.json counts 3 (3 SUCCESS)" in shown.output

    as_json = CliRunner().invoke(main, ["show", str(b), "--json"])
    doc = json.loads(as_json.stdout)
    assert doc["status"] == RESULTS_LOST and "run.json counts 3" in doc["results_lost"]

    refused = CliRunner().invoke(main, ["ab", str(a), str(b)])
    assert refused.exit_code == 4, refused.output
    assert f"side B did not complete (status {RESULTS_LOST}" in refused.output
    assert str(results) in refused.output and "--allow-partial" in refused.output

    allowed = CliRunner().invoke(main, ["ab", str(a), str(b), "--allow-partial"])
    assert allowed.exit_code in (0, 1), allowed.output         # 1: nothing paired (none)
    assert "WARNING [status]" in allowed.output and str(results) in allowed.output
