"""Runs written before a caliber field existed stay comparable: the field takes the value
every such run had (`caliber.LEGACY_DEFAULTS`), so an older run is not refused as a caliber
mismatch against a new one that recorded the same thing."""
from __future__ import annotations

import json

from click.testing import CliRunner

from fake_runs import CPU_CALIBER, fake_run
from harness.cli import main
from harness.store.caliber import MISSING, Caliber


def test_a_caliber_written_before_ir_stage_matches_one_that_records_ttgir():
    old = {k: v for k, v in CPU_CALIBER.items() if k != "ir_stage"}
    assert Caliber.from_dict(old).ir_stage == "ttgir"
    assert Caliber.from_dict(old).differences(Caliber.from_dict(CPU_CALIBER)) == []
    # a field no default covers is <missing>, unlike any real value
    assert Caliber.from_dict({k: v for k, v in old.items() if k != "l2_policy"}
                             ).l2_policy == MISSING


def test_an_older_run_is_compared_not_refused(tmp_path):
    run_a = fake_run(tmp_path, "a")
    info = json.loads((run_a / "run.json").read_text())
    del info["caliber"]["ir_stage"]                     # as runs before ir_stage wrote it
    (run_a / "run.json").write_text(json.dumps(info))
    run_b = fake_run(tmp_path, "b", mode="replay", replay_from=run_a)
    result = CliRunner().invoke(main, ["ab", str(run_a), str(run_b)])
    assert result.exit_code == 0, result.output
    assert "caliber" not in result.stderr.lower(), result.stderr
