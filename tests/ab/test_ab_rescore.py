"""`zlh ab --rescore ROOT`: the report recomputed from the stored runs of an A/B root (extra
scrub patterns, noise floor), the previous report kept beside it; nothing runs."""
from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from conftest import CPU_FAST


def test_rescore_recomputes_the_report_from_the_stored_runs(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64]]\n")
    root = tmp_path / "ab"
    result = CliRunner().invoke(main, ["ab", "add", *CPU_FAST, "--shapes", str(shapes),
                                       "--env-a", "ZLH_SIDE=A", "--env-b", "ZLH_SIDE=B",
                                       "--root", str(root), "-q"])
    assert result.exit_code == 0, result.output
    before = json.loads((root / "report.json").read_text())
    (root / "report.html").write_text("<html>old</html>")
    runs = sorted(p.name for p in (root / "add").glob("r1_*/*"))
    result = CliRunner().invoke(main, ["ab", "--rescore", str(root), "--scrub", "ZLH_SIDE"])
    assert result.exit_code == 0, result.output
    assert "recomputed from the runs under" in result.output
    after = json.loads((root / "report.json").read_text())
    assert [o["op"] for o in after["ops"]] == [o["op"] for o in before["ops"]] == ["add"]
    assert [r["delta_pct"] for r in after["ops"][0]["rows"]] == \
        [r["delta_pct"] for r in before["ops"][0]["rows"]]
    assert json.loads((root / "report.json.before-rescore").read_text()) == before
    assert (root / "report.html.before-rescore").read_text() == "<html>old</html>"
    assert "<html>old</html>" != (root / "report.html").read_text()
    assert (root / "report.csv.before-rescore").is_file()
    assert sorted(p.name for p in (root / "add").glob("r1_*/*")) == runs     # nothing ran
    # a second rescore keeps the report as the A/B wrote it, not the first rescore's
    (root / "report.json").write_text('{"damaged": true}')
    result = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert result.exit_code == 0 and "from before the first rescore is kept" in result.output
    assert json.loads((root / "report.json.before-rescore").read_text()) == before
    assert (root / "report.html.before-rescore").read_text() == "<html>old</html>"
    # options that would be ignored, ops, and a root that is no A/B of both sides: one line
    result = CliRunner().invoke(main, ["ab", "--rescore", str(root), "--rounds", "3"])
    assert result.exit_code == 2 and "leave out --rounds" in result.output
    result = CliRunner().invoke(main, ["ab", "add", "--rescore", str(root)])
    assert result.exit_code == 2 and "takes the ops of ROOT" in result.output
    result = CliRunner().invoke(main, ["ab", "--rescore", str(tmp_path)])
    assert result.exit_code == 2 and "no plan.json" in result.output
