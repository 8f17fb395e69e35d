"""A screen whose side A ran out of time after measuring some cases: its run has rows but no
complete record, so side B (which replays A's record) is not started — it would only fail to
replay — and the verdict's note names side A's status as the reason."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.corpus.verdict import NO_ROWS, read_tsv
from conftest import FAST, importable_cases
from cut_short_cases import CASES


@pytest.mark.e2e
def test_side_b_waits_for_a_complete_record_and_the_note_says_why(tmp_path, monkeypatch):
    importable_cases(monkeypatch, tmp_path, "hang_cases", CASES)
    root = tmp_path / "s"
    # the stall timeout must outlast a loaded host's worker start and planning (3 s did not,
    # beside a busy test run), or side A stalls before its first case
    result = CliRunner().invoke(main, ["screen", "--cases", "hang_cases:cases", "--ops",
                                       "hang_late", "--backend", "cpu", *FAST, "--switch",
                                       "ZLH_TEST_SWITCH=0,1", "--stall-timeout", "8",
                                       "--retries", "0", "--root", str(root)])
    assert result.exit_code == 0, result.output
    row = read_tsv(root / "screen.tsv")[0]
    assert row["verdict"] == NO_ROWS and int(row["rows_a"]) == 2, row
    assert "side B not run (side A TIMEOUT: its run did not complete" in row["note"], row
    assert not (root / "B" / "hang_late" / ".complete").exists() or json.loads(
        (root / "B" / "hang_late" / ".complete").read_text()).get("run_dir") in (None, "", "-")
