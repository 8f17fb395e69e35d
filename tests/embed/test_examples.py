"""The embedding guide's examples (docs/guides/embedding.md) are the files under
tests/examples/, and they run."""
import re
import runpy
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.store.reader import load_run
from conftest import ROOT

EXAMPLES = ROOT / "tests" / "examples"
GUIDE = ROOT / "docs" / "guides" / "embedding.md"
BLOCK = re.compile(r"<!-- example: (tests/examples/\w+\.py) -->\n```python\n(.*?)```", re.S)


def guide_examples() -> dict:
    return {path: code for path, code in BLOCK.findall(GUIDE.read_text())}


def test_guide_shows_every_example_exactly_as_the_file_is():
    shown = guide_examples()
    files = sorted(str(p.relative_to(ROOT)) for p in EXAMPLES.glob("*.py"))
    assert sorted(shown) == files and len(files) == 3
    for path, code in shown.items():
        assert code == (ROOT / path).read_text(), \
            f"{GUIDE.name}: the block for {path} differs from the file"


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(EXAMPLES), *sys.path])
    yield tmp_path
    sys.modules.pop("my_cases", None)


def test_measure_example_prints_a_host_timed_median(in_tmp, capsys):
    runpy.run_path(str(EXAMPLES / "measure_kernel.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert re.search(r"^median \d+\.\d{5} ms ± [\d.]+% from \d+ samples, timer host$", out, re.M)


def test_compare_example_says_within_one_process(in_tmp, capsys):
    runpy.run_path(str(EXAMPLES / "compare_two.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "within one process" in out and "B (BLOCK=1024) vs A (BLOCK=256):" in out


def test_cases_example_records_replays_compares_and_runs_from_the_cli(in_tmp, capsys):
    runpy.run_path(str(EXAMPLES / "my_cases.py"), run_name="__main__")
    out = capsys.readouterr().out
    rows = re.findall(r"^float32 (\S+) [+-]\d+\.\d\d% -?[01]$", out, re.M)
    assert rows == ["8x128", "16x256"], out
    modes = sorted(load_run(p).autotune_mode for p in (in_tmp / "runs").glob("my_softmax_*"))
    assert modes == ["record", "replay"]
    result = CliRunner().invoke(main, ["bench", "--cases", "my_cases:cases", "--out",
                                       str(in_tmp / "cli"), "--max-time-ms", "50", "-q"])
    assert result.exit_code == 0, result.output
    (run_dir,) = (in_tmp / "cli").glob("cases_*")
    assert [r.shape_detail for r in load_run(run_dir).rows] == ["8x128", "16x256"]
