"""Code under test that calls sys.exit: `zlh bench` ends with a line and an exit status of its
own (never the op's), the run is marked crashed and keeps what was measured; the Python API
raises instead of ending the embedding program."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import harness
from harness.common.errors import EXIT_FAILED_CASES
from conftest import FAST, FAST_API, ROOT


CASES = '''
import os, sys
import torch
import harness

CODE = eval(os.environ.get("EXIT_CODE", "3"))

def ok(x):
    return x + 1

def leave(x):
    sys.exit(CODE)

def _case(name, fn, size):
    return harness.Case(fn=fn, baseline=lambda x: x + 1, inputs=lambda: torch.ones(size),
                        dtype="float32", shape=[size], name=name)

cases = {"exits": [_case("exits", ok, 8), _case("exits", leave, 16)],
         "after": [_case("after", ok, 8)]}

def exit_while_listing():
    sys.exit(CODE)
'''


def bench(tmp_path: Path, *args: str, code: str = "3", module: str = CASES):
    (tmp_path / "exit_cases.py").write_text(module)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "EXIT_CODE": code}
    return subprocess.run([sys.executable, "-m", "harness", "bench", *args, "--backend", "cpu",
                           *FAST, "-q", "--out", str(tmp_path / "runs")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def zlh_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("zlh:")]


@pytest.mark.parametrize("code, shown", [("3", "3"), ("'no device here'", "'no device here'"),
                                         ("None", "None"), ("0", "0")])
@pytest.mark.e2e
def test_bench_of_an_op_that_calls_sys_exit_is_a_crashed_run_with_its_own_exit_status(
        tmp_path, code, shown):
    proc = bench(tmp_path, "exits", "after", "--cases", "exit_cases:cases", code=code)
    assert proc.returncode == EXIT_FAILED_CASES, proc.stderr
    (line,) = zlh_lines(proc.stderr)
    assert f"exits: the op called sys.exit({shown})" in line
    assert "the run is marked crashed" in line and "not run" in line and "after" in line
    (run_dir,) = (tmp_path / "runs").glob("exits_*")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "crashed"
    assert info["reason"] == f"the op called sys.exit({shown})"
    rows = [json.loads(r) for r in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [(r["shape_detail"], r["status"]) for r in rows] == [("8", "SUCCESS")]
    assert str(run_dir) in line
    assert not list((tmp_path / "runs").glob("after_*"))
    assert (run_dir / "run.log").read_text().rstrip().endswith(
        f"status: crashed (the op called sys.exit({shown}))")


@pytest.mark.parametrize("module, words", [
    ("import sys\nsys.exit(0)\n", "importing exit_cases failed: the module called sys.exit(0)"),
    (CASES + "cases = exit_while_listing\n", "exit_cases:cases() called sys.exit(3)"),
])
@pytest.mark.e2e
def test_user_cases_that_call_sys_exit_while_loading_are_a_preflight_failure(tmp_path, module,
                                                                            words):
    proc = bench(tmp_path, "--cases", "exit_cases:cases", module=module)
    assert proc.returncode == 3, proc.stderr
    (line,) = zlh_lines(proc.stderr)
    assert "PREFLIGHT_FAILED check=" in line and words in line


def test_bench_cases_raises_instead_of_ending_the_program(tmp_path):
    def leave(x):
        sys.exit(3)

    cases = [harness.Case(fn=lambda x: x + 1, baseline=lambda x: x + 1,
                          inputs=lambda: torch.ones(8), dtype="float32", shape=[8]),
             harness.Case(fn=leave, baseline=lambda x: x + 1, inputs=lambda: torch.ones(16),
                          dtype="float32", shape=[16])]
    with pytest.raises(harness.OpExitError) as excinfo:
        harness.bench_cases(cases, op="leaver", out=str(tmp_path), backend="cpu", **FAST_API)
    error = excinfo.value
    assert isinstance(error, harness.ZlhError) and error.exit_code == EXIT_FAILED_CASES
    assert error.code == 3 and "leaver: the op called sys.exit(3)" in error.message
    (run_dir,) = tmp_path.glob("leaver_*")
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("crashed", "the op called sys.exit(3)")
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize("call", [
    lambda fn: harness.measure(fn, backend="cpu", name="leaver", **FAST_API),
    lambda fn: harness.compare_callables(lambda: None, fn, rounds=1, backend="cpu", **FAST_API),
])
def test_a_timed_callable_that_calls_sys_exit_is_a_callable_error(call):
    with pytest.raises(harness.CallableError) as excinfo:
        call(lambda: sys.exit("stop"))
    assert "called sys.exit('stop')" in excinfo.value.message
    assert isinstance(excinfo.value.__cause__, SystemExit)
    assert excinfo.value.exit_code == EXIT_FAILED_CASES
