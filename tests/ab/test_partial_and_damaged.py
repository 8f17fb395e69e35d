"""Comparisons of runs that are not whole: `harness.compare` refuses a run that did not
complete unless `allow_partial` (as `zlh ab RUN_A RUN_B` does), and a run.json whose caliber
is not an object is a run without identity — refused, or reported with
--allow-caliber-mismatch into a report that reads back."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import harness
from harness.cli import main
from fake_runs import fake_run


@pytest.fixture
def runs(tmp_path):
    (tmp_path / "sh").mkdir()
    (tmp_path / "sh" / "add.yaml").write_text("add: [[64]]\n")
    rec = fake_run(tmp_path, "rec")
    return tmp_path, rec


@pytest.mark.parametrize("status", ["interrupted", "crashed", "failed"])
def test_the_api_refuses_a_run_that_did_not_complete_unless_allowed(runs, status):
    root, rec = runs
    cut = fake_run(root, "cut", mode="replay", replay_from=rec, status=status)
    with pytest.raises(harness.CaliberError, match=f"side B did not complete .status {status}"):
        harness.compare(rec, cut)
    said = []
    report = harness.compare(rec, cut, allow_partial=True, echo=said.append)
    assert [r.shape_detail for r in report.rows] == ["64"]
    assert any(line.startswith("WARNING [status] add: side B did not complete")
               for line in said), said
    # a later round's run that did not complete is refused too, named by its round
    whole = fake_run(root, "whole", mode="replay", replay_from=rec)
    again = fake_run(root, "again", mode="replay", replay_from=rec)
    with pytest.raises(harness.CaliberError, match="round 2 side B: this run did not complete"):
        harness.compare([rec, again], [whole, cut])
    with pytest.raises(harness.UsageError, match="allow_partial must be True or False"):
        harness.compare(rec, whole, allow_partial="yes")


def test_a_caliber_that_is_not_an_object_is_a_run_without_identity(runs):
    root, rec = runs
    rep = fake_run(root, "rep", mode="replay", replay_from=rec)
    info = json.loads((rep / "run.json").read_text())
    (rep / "run.json").write_text(json.dumps(dict(info, caliber="x")))
    refused = CliRunner().invoke(main, ["ab", str(rec), str(rep)])
    assert refused.exit_code == 4 and "side B has no identity" in refused.output
    out = root / "out"
    allowed = CliRunner().invoke(main, ["ab", str(rec), str(rep), "--allow-caliber-mismatch",
                                        "--root", str(out)])
    assert allowed.exit_code == 0, allowed.output
    assert "Traceback" not in allowed.output
    shown = CliRunner().invoke(main, ["report", str(out)])
    assert shown.exit_code == 0, shown.output
