"""An `xfail`-marked FlagGems benchmark (no condition, or a true one) is SKIP with its reason,
never timed; `--all` leaves the unconditional ones out like a skip mark, `--include-skipped`
keeps them; an xfail whose condition is false runs as usual."""
from __future__ import annotations


import pytest
from click.testing import CliRunner

from conftest import FIXTURES, budget_args
from harness.cli import main
from harness.corpus.selection import select
from harness.store.reader import read_rows
from harness.store.results import SKIPPED, SUCCESS

import adapters

FAKE = FIXTURES / "fake_flaggems"
FAST = [*budget_args(max_time_ms=10), "--backend", "cpu", "--adapter", "flaggems"]


pytestmark = pytest.mark.usefixtures("fresh_flaggems_modules")


def test_xfail_marks_are_skips_and_all_leaves_the_unconditional_one_out():
    adapter = adapters.get_adapter("flaggems", flaggems_dir=str(FAKE))
    items, left = select(adapter, True, None, None)
    names = {i.op for i in items}
    assert ("always_xfail:skipped", "unconditional skip mark") in left
    assert "sometimes_xfail:skipped" in names and "xfail_elsewhere:skipped" in names
    items, _ = select(adapter, True, None, None, include_skipped=True)
    assert "always_xfail:skipped" in {i.op for i in items}


@pytest.mark.parametrize("op, reason", [
    ("always_xfail:skipped", "xfail: known wrong upstream"),
    ("sometimes_xfail:skipped", "xfail: fails on some machines")])
def test_an_xfail_that_applies_is_skip_with_its_reason(tmp_path, op, reason):
    result = CliRunner().invoke(main, ["bench", op, "--flaggems-dir", str(FAKE), "--out",
                                       str(tmp_path / "runs"), *FAST])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert [(r.status, r.reason) for r in rows] == [(SKIPPED, reason)]
    assert rows[0].gems_ms is None


def test_an_xfail_with_a_false_condition_is_timed(tmp_path):
    result = CliRunner().invoke(main, ["bench", "xfail_elsewhere:skipped", "--flaggems-dir",
                                       str(FAKE), "--out", str(tmp_path / "runs"), *FAST])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert rows and all(r.status == SUCCESS and r.gems_ms > 0 for r in rows)

