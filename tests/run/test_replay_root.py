"""`--replay DIR` with a root of runs: the newest record of the op that completed, so a run
cut short after it (Ctrl-C) does not hide it; with none complete, the newest is refused with
its status."""
from __future__ import annotations

import pytest

from harness.common.errors import CaliberError
from harness.run.plan import find_record_run
from fake_runs import fake_run


def test_the_newest_complete_record_is_taken_over_a_later_one_cut_short(tmp_path):
    (tmp_path / "sh").mkdir()
    (tmp_path / "sh" / "add.yaml").write_text("add: [[64]]\n")
    runs = tmp_path / "runs"
    whole = fake_run(tmp_path, "runs")
    cut = fake_run(tmp_path, "runs", status="interrupted")
    assert whole.parent == cut.parent == runs and whole != cut
    assert find_record_run(str(runs), "add", "cpu") == whole
    info = whole / "run.json"                         # none complete: the newest, refused
    info.write_text(info.read_text().replace('"complete"', '"crashed"'))
    with pytest.raises(CaliberError, match="status interrupted"):
        find_record_run(str(runs), "add", "cpu")
