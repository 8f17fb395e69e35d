"""`zlh batch|screen --resume ROOT --retry STATUSES`: finished ops with those statuses run
again in the same root (after an environment problem was fixed), their earlier attempts'
logs kept; ops_status.csv shows the latest outcome and the attempt count."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.corpus.outcome import FAIL, PASS
from conftest import FAST



def plant_for_the_runs_only(monkeypatch) -> None:
    """ZLH_BUILTIN_SLOW=maybe, which this process lets pass (a batch refuses it up front
    otherwise) and every run refuses: a problem only the runs meet, as a broken library
    would be."""
    from adapters.builtin import BuiltinAdapter
    monkeypatch.setattr(BuiltinAdapter, "check_environment", lambda self, environ: None)
    monkeypatch.setenv("ZLH_BUILTIN_SLOW", "maybe")


def status_rows(root: Path) -> dict[str, dict]:
    with open(root / "ops_status.csv", newline="") as handle:
        return {r["op"]: r for r in csv.DictReader(handle)}


def test_resume_with_retry_runs_failed_ops_again_and_keeps_their_first_attempts(
        tmp_path, monkeypatch):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\n")
    root = tmp_path / "b"
    plant_for_the_runs_only(monkeypatch)                 # the planted problem: every op FAILs
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                       "--shapes", str(shapes), *FAST, "--ops", "add,softmax",
                                       "--retries", "0", "-q", "--out", str(root)])
    assert result.exit_code == 1, result.output
    assert {op: (r["status"], r["attempts"]) for op, r in status_rows(root).items()} == {
        "add": (FAIL, "1"), "softmax": (FAIL, "1")}
    # --retry needs --resume; a status it cannot retry is one line
    result = CliRunner().invoke(main, ["batch", "--retry", "FAIL", "--ops", "add"])
    assert result.exit_code == 2 and "--retry works with --resume ROOT" in result.output
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "--retry", "PASS"])
    assert result.exit_code == 2 and "--retry expects statuses from FAIL" in result.output
    monkeypatch.setenv("ZLH_BUILTIN_SLOW", "0")            # fixed: a switch the root records
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
    assert result.exit_code == 2 and "ZLH_BUILTIN_SLOW: 'maybe' -> '0'" in result.output
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q",
                                       "--allow-env-change"])
    assert result.exit_code == 1, result.output           # plain resume: FAILs are kept
    assert status_rows(root)["add"]["status"] == FAIL
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q",
                                       "--retry", "fail,timeout,crash"])
    assert result.exit_code == 0, result.output
    rows = status_rows(root)
    for op in ("add", "softmax"):
        assert (rows[op]["status"], rows[op]["attempts"]) == (PASS, "2"), rows[op]
        assert "retried=FAIL" in rows[op]["notes"]
        logs = sorted(p.name for p in (root / op).glob("run.attempt*.log"))
        assert logs == ["run.attempt1.log", "run.attempt2.log"]     # the first one kept
        assert "maybe" in (root / op / "run.attempt1.log").read_text()
        done = json.loads((root / op / ".complete").read_text())
        assert done["status"] == PASS and done["attempt"] == 2
    assert not (root / ".abandoned").exists()
    with open(root / "summary.csv", newline="") as handle:
        assert {r["op"] for r in csv.DictReader(handle)} == {"add", "softmax"}


def test_screen_resume_with_retry_reruns_side_a_and_then_b(tmp_path, monkeypatch):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    root = tmp_path / "s"
    plant_for_the_runs_only(monkeypatch)
    result = CliRunner().invoke(main, ["screen", "--adapter", "builtin", "--backend", "cpu",
                                       "--shapes", str(shapes), *FAST, "--ops", "add",
                                       "--env-a", "ZLH_SIDE=A", "--env-b", "ZLH_SIDE=B",
                                       "--retries", "0", "--root", str(root)])
    assert "NO_ROWS" in result.output, result.output
    monkeypatch.setenv("ZLH_BUILTIN_SLOW", "0")
    result = CliRunner().invoke(main, ["screen", "--resume", str(root), "--retry", "FAIL",
                                       "--allow-env-change"])
    assert result.exit_code == 0, result.output
    assert "NO_ROWS" not in result.output
    a = status_rows(root / "A")["add"]
    assert (a["status"], a["attempts"]) == (PASS, "2")
    assert status_rows(root / "B")["add"]["status"] == PASS
