"""The curated dismiss list: package data (recipes/dismiss.txt links to it), every entry with
its reason, date and how it was verified; used by default with --all, --no-dismiss keeps its
ops, and a checkout lacking its ops gets no warning for them."""
from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, ROOT
from harness.cli import main
from harness.common.errors import UsageError
from harness.corpus import selection
from harness.corpus.selection import DEFAULT_DISMISS, dismiss_list, parse_dismiss

ENTRY = re.compile(r"^(?:vllm:)?[\w.:@]+\s+# (?P<reason>[^;]+(?:;[^;]+)*?); "
                   r"(?P<date>\d{4}-\d{2}-\d{2}); verified: (?P<how>.+)$")


def test_every_entry_says_why_when_and_how_it_was_verified():
    lines = [line for line in DEFAULT_DISMISS.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines, "the curated list is empty"
    for line in lines:
        assert ENTRY.match(line), f"not `op  # reason; date; verified: how`: {line}"
    entries = parse_dismiss(DEFAULT_DISMISS)
    assert "perf_chunk_gated_delta_rule:chunk_gated_delta_rule_perf" in entries
    assert "POISONED" in entries["perf_chunk_gated_delta_rule:chunk_gated_delta_rule_perf"]


def test_it_is_package_data_and_the_recipes_link_reads_the_same():
    assert DEFAULT_DISMISS.parent == Path(selection.__file__).resolve().parent
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["harness"].split(",")]
    assert "corpus/dismiss.txt" in patterns
    link = ROOT / "recipes" / "dismiss.txt"
    assert link.read_text() == DEFAULT_DISMISS.read_text()


def test_default_with_all_only_and_no_dismiss_keeps_everything(tmp_path):
    assert dismiss_list(None, all_ops=True).curated
    assert dismiss_list(None, all_ops=False) is None
    assert dismiss_list(None, all_ops=True, no_dismiss=True) is None
    own = tmp_path / "d.txt"
    own.write_text("softmax  # mine\n")
    assert dismiss_list(str(own), all_ops=False) == {"softmax": "mine"}
    with pytest.raises(UsageError, match="--no-dismiss keeps every op"):
        dismiss_list(str(own), all_ops=True, no_dismiss=True)


def test_a_corpus_without_the_curated_ops_gets_no_warning_for_them(tmp_path):
    result = CliRunner().invoke(main, ["batch", "--all", "--adapter", "flaggems",
                                       "--flaggems-dir", str(FIXTURES / "fake_flaggems"),
                                       "--backend", "cpu", "--devices", "7",
                                       "--out", str(tmp_path / "b")])
    assert result.exit_code == 3, result.output        # stops at the device, after selection
    assert "dismiss entry" not in result.output
    result = CliRunner().invoke(main, ["batch", "--all", "--no-dismiss", "--dismiss",
                                       str(DEFAULT_DISMISS), "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "--no-dismiss keeps every op" in result.output
