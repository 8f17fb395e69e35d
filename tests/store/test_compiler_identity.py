"""Which distribution provides `triton`: detected at preflight, recorded in run.json, and
compared by the caliber guard."""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fake_runs import fake_run
from harness.ab.guard import check_caliber
from harness.common.errors import PreflightError
from harness.run import plan as planmod
from harness.run.options import BenchOptions
from harness.store.compiler import compiler_identity, describe
from harness.store.reader import load_run
from conftest import ROOT



def test_this_environment_reports_upstream_triton():
    import triton
    found = compiler_identity()
    assert found["package"] == "triton"
    assert found["distribution"] == "triton"
    assert found["version"] == importlib.metadata.version("triton")
    assert found["path"] == str(Path(triton.__file__).resolve().parent)
    assert "triton " in describe(found)


def _fake_flagtree(where: Path, top_level: bool = True) -> None:
    """A FlagTree-like install: the `triton` package owned by a distribution named flagtree
    (`top_level`: declared in top_level.txt; else only its RECORD lists triton's files)."""
    package = where / "triton"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "3.1.0"\n')
    info = where / "flagtree-0.3.0+git3059917e.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flagtree\n"
                                   "Version: 0.3.0+git3059917e\n")
    if top_level:
        (info / "top_level.txt").write_text("triton\n")
    (info / "RECORD").write_text("triton/__init__.py,,\n")


def _identity_in(pythonpath: str) -> dict:
    code = "import json; from harness.store.compiler import compiler_identity as c; " \
           "print(json.dumps(c()))"
    env = dict(os.environ, PYTHONPATH=pythonpath)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.e2e
@pytest.mark.parametrize("top_level", [True, False], ids=["declared", "recorded"])
def test_a_flagtree_install_is_named_as_such(tmp_path, top_level):
    _fake_flagtree(tmp_path / "site", top_level)
    found = _identity_in(os.pathsep.join([str(tmp_path / "site"), str(ROOT)]))
    assert found["distribution"] == "flagtree"
    assert found["version"] == "0.3.0+git3059917e"
    assert found["commit"] == "3059917e"
    assert found["path"] == str((tmp_path / "site" / "triton").resolve())


@pytest.mark.e2e
def test_a_source_tree_without_a_distribution_is_unregistered(tmp_path):
    package = tmp_path / "src" / "python" / "triton"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "3.3.0+git0123abcd"\n')
    found = _identity_in(os.pathsep.join([str(tmp_path / "src" / "python"), str(ROOT)]))
    assert found["distribution"] is None
    assert found["version"] == "3.3.0+git0123abcd" and found["commit"] == "0123abcd"


def test_no_triton_is_a_preflight_failure(monkeypatch):
    monkeypatch.setattr(planmod, "compiler_identity", lambda: None)
    with pytest.raises(PreflightError) as caught:
        planmod.plan_bench(["add"], BenchOptions.from_flat(adapter="builtin", backend="cpu"),
                           dry_run=True)
    assert caught.value.check == "triton"
    assert "pip install 'zlh[triton]'" in caught.value.message
    assert caught.value.exit_code == 3


def test_run_json_records_the_compiler(tmp_path):
    import harness
    run = harness.bench("add", adapter="builtin", backend="cpu", out=str(tmp_path),
                        dtypes=["float32"], warmup_ms=1.0, min_samples=3, min_time_ms=0.0,
                        max_time_ms=10.0)
    info = json.loads((run.run_dir / "run.json").read_text())
    assert info["compiler"] == compiler_identity()


def _with_compiler(run_dir: Path, python: str, **compiler) -> None:
    info = json.loads((run_dir / "run.json").read_text())
    info["versions"] = {"python_executable": python}
    info["compiler"] = {"package": "triton", "distribution": "triton", "version": "3.9.0",
                        "path": "/venv/site-packages/triton", "commit": None, **compiler}
    (run_dir / "run.json").write_text(json.dumps(info))


def _guard(tmp_path, python_b: str, **compiler_b):
    run_a = fake_run(tmp_path, "a")
    run_b = fake_run(tmp_path, "b", mode="replay", replay_from=run_a)
    _with_compiler(run_a, "/venv/bin/python")
    _with_compiler(run_b, python_b, **compiler_b)
    return check_caliber(load_run(run_a), load_run(run_b))


def test_guard_refuses_a_build_that_changed_under_one_interpreter(tmp_path):
    check = _guard(tmp_path, "/venv/bin/python", distribution="flagtree", version="0.3.0")
    assert not check.ok
    (problem,) = [p for p in check.problems if "compiler differs" in p]
    assert "A=triton 3.9.0" in problem and "B=flagtree 0.3.0" in problem


def test_guard_accepts_compilers_that_differ_by_interpreter_or_path(tmp_path):
    check = _guard(tmp_path / "x", "/other/bin/python", distribution="flagtree",
                   version="0.3.0", path="/other/site-packages/triton")
    assert check.ok and not check.warnings, check.problems
    check = _guard(tmp_path / "y", "/venv/bin/python", version="3.10.0",
                   path="/src/flagtree/python/triton")           # a side's PYTHONPATH
    assert check.ok and not check.warnings


def test_guard_warns_when_two_interpreters_run_one_build(tmp_path):
    check = _guard(tmp_path, "/other/bin/python")
    assert check.ok
    assert any("sides ran different interpreters" in w and "does not compare compilers" in w
               for w in check.warnings)
