"""A run keeps no relative path past its start: an op that changes the working directory
(os.chdir) moves nothing of its run — the run directory announced is the one finished."""
from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from harness.cli import main

FAST_ARGS = ["--warmup-ms", "1", "--min-samples", "3", "--min-time-ms", "0",
             "--max-time-ms", "20"]

WANDERER = '''
import os
import torch
import harness

ELSEWHERE = {elsewhere!r}


def wandering_add(x, y):
    os.chdir(ELSEWHERE)          # the op's own business: the run must not follow it
    return x + y


def inputs(shape, dtype):
    return torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)


cases = harness.Case.sweep(fn=wandering_add, baseline=torch.add, make_inputs=inputs,
                           shapes=[[64], [128]], dtypes=["float32"])
'''


@pytest.fixture
def wanderer(tmp_path, monkeypatch):
    """A user's cases module in the current directory whose function calls os.chdir."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    name = f"wanderer_{tmp_path.name.replace('-', '_')}"
    (home / f"{name}.py").write_text(WANDERER.format(elsewhere=str(elsewhere)))
    monkeypatch.chdir(home)
    monkeypatch.setattr(sys, "path", [str(home), *sys.path])
    yield name, home, elsewhere
    sys.modules.pop(name, None)


def test_an_op_that_changes_directory_does_not_split_its_run(wanderer):
    name, home, elsewhere = wanderer
    result = CliRunner().invoke(main, ["bench", "--cases", f"{name}:cases", "--backend", "cpu",
                                       "--out", "runs", "-q", *FAST_ARGS])
    assert result.exit_code == 0, result.output
    (run_dir,) = (home / "runs").glob("cases_*")       # relative --out, taken at the start
    assert not (elsewhere / "runs").exists()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "complete" and info["counts"]["SUCCESS"] == 2
    rows = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(rows) == 2 and (run_dir / "shapes.yaml").is_file()
