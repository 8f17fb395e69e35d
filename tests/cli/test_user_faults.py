"""Faulty user code on the `--cases` path and in plugins: each fault is one `zlh: ` line with
the right exit code, or a FAILED row while the other cases run, and the run directory is
finalised with the cases measured before the fault."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from conftest import FAST, ROOT, install_plugin
from harness.cli import main


CASES = '''
import threading, time
import torch
import harness

def C(fn, name):
    return harness.Case(fn=fn, baseline=lambda x: x + 1, inputs=lambda: torch.ones(8),
                        dtype="float32", shape=[8], name=name)

ok = lambda x: x + 1

class OwnBase(BaseException):
    pass

def own_base(x):
    raise OwnBase("boom")

def generator_exit(x):
    raise GeneratorExit()

def stray_thread(x):
    threading.Thread(target=time.sleep, args=(600,), name="stray").start()
    return x + 1

base = [C(ok, "ok1"), C(own_base, "own"), C(generator_exit, "genexit"), C(ok, "ok2")]

def close_stdout(x):
    import sys
    sys.stdout.close()
    return x + 1

closer = [C(close_stdout, "closer")]
threads = [C(stray_thread, "thread")]

import concurrent.futures
POOL = concurrent.futures.ThreadPoolExecutor(2)

def pooled(x):
    return POOL.submit(lambda: x + 1).result()

pool = [C(pooled, "pool")]

def gen():
    for i in range(2):
        yield C(ok, f"g{i}")

def gen_broken():
    yield C(ok, "a")
    yield C(ok, "b")
    raise RuntimeError("no more")
'''


@pytest.fixture
def cases_dir(tmp_path, monkeypatch):
    (tmp_path / "faulty_cases.py").write_text(CASES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("faulty_cases", None)


def bench(tmp_path, attr):
    return CliRunner().invoke(main, ["bench", "--cases", f"faulty_cases:{attr}", "--backend",
                                     "cpu", "--out", str(tmp_path / "runs"), "-q", *FAST])


def test_an_op_raising_a_base_exception_fails_its_case_alone(cases_dir):
    """Before: a traceback, the run `crashed` without a reason, ok2 never ran."""
    result = bench(cases_dir, "base")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (run_json,) = (cases_dir / "runs").glob("*/run.json")
    info = json.loads(run_json.read_text())
    assert info["status"] == "complete"
    assert info["counts"] == {"SUCCESS": 2, "FAILED": 2, "SKIPPED": 0}
    assert "reason=OwnBase detail=boom" in result.output
    assert "reason=GeneratorExit" in result.output


def test_a_generator_of_cases_runs_and_one_that_breaks_midway_is_one_line(cases_dir):
    """Before: `expected a harness.Case, a list of them ...; got generator` (exit 2)."""
    result = bench(cases_dir, "gen")
    assert result.exit_code == 0, result.output
    result = bench(cases_dir, "gen_broken")
    assert result.exit_code == 3
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines == [lines[0]] and lines[0].startswith(
        "zlh: PREFLIGHT_FAILED check=cases --cases faulty_cases:gen_broken raised after 2 "
        "case(s): no more")


def test_a_huge_number_of_cases_is_announced(monkeypatch, caplog):
    """Before: 100,000 cases ran for hours without a word under -q."""
    import harness
    from adapters.user import source
    monkeypatch.setattr(source, "MANY_CASES", 3)
    cases = [harness.Case(fn=torch.neg, baseline=torch.neg, inputs=lambda: torch.ones(2),
                          dtype="float32", shape=[2], name=f"c{i}") for i in range(5)]
    with caplog.at_level(logging.WARNING, logger="zlh"):
        assert len(source.cases_of(cases, "cases")) == 5
    assert "WARNING cases gives 5 cases" in caplog.text


def test_auto_check_names_a_wrong_dtype_and_a_missing_output():
    """Before: a float64 output of a float32 op passed; None was `output None != reference
    tensor([...])` (the whole tensor)."""
    from adapters.user import check_close
    x = torch.ones(4)
    with pytest.raises(AssertionError, match="dtype float64 != reference float32"):
        check_close(x.double(), x)
    with pytest.raises(AssertionError, match=r"output is None, reference is a float32 tensor "
                                             r"of shape \(4,\)"):
        check_close(None, x)
    with pytest.raises(AssertionError, match="output is a tuple of 2, reference is a float32"):
        check_close((x, x), x)


def _bench_cases(cases_dir, provider):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(cases_dir), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "harness", "bench", "--cases",
                           f"faulty_cases:{provider}", "--backend", "cpu", "--out",
                           str(cases_dir / "runs"), "-q", *FAST], env=env, cwd=cases_dir,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.e2e
def test_threads_the_op_leaves_running_do_not_hang_the_process(cases_dir):
    """Before: the run finished, then the process waited for the op's thread for ever."""
    proc = _bench_cases(cases_dir, "threads")
    assert proc.returncode == 0, proc.stderr
    assert "zlh: WARNING" in proc.stderr and "(stray" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.e2e
def test_an_idle_thread_pool_of_the_op_is_no_thread_left_running(cases_dir):
    """A library's concurrent.futures pool ends with the interpreter: no warning, and the
    interpreter's own exit (its atexit work included) runs."""
    proc = _bench_cases(cases_dir, "pool")
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr and "Traceback" not in proc.stderr


PLUGIN = textwrap.dedent('''
    import os, sys
    import torch
    from adapters.base import Adapter, Case, CaseInputs

    class Midway(Adapter):
        name = "midway"
        def available(self): return True, ""
        def ops(self): return ["mid"]
        def dtypes(self, op, backend): return ["float32"]
        def shapes_used(self, op): return {}
        def cases(self, op, dtypes, shapes, level, backend, device):
            for n in (64, 256):
                yield Case(op=op, dtype="float32", shape=[n], shape_detail=str(n),
                           build=lambda n=n: CaseInputs((torch.ones(n),)),
                           baseline=lambda x: x * 2.0, under_test=lambda x: x + x)
            raise RuntimeError("lost the list\\nsecond line")

    class Garbage(Midway):
        def cases(self, op, dtypes, shapes, level, backend, device):
            yield "not a case"

    if os.environ.get("PLUGIN_EXIT"):
        sys.exit(4)
''')
ENTRY_POINTS = "[zlh.adapters]\nmidway = zlh_faulty_plugin:Midway\n" \
               "garbage = zlh_faulty_plugin:Garbage\n"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    return install_plugin(tmp_path_factory.mktemp("site"), "zlh_faulty_plugin", PLUGIN,
                          ENTRY_POINTS)


def zlh(plugin_path, out, adapter, **env):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin_path), str(ROOT)]), **env)
    return subprocess.run([sys.executable, "-m", "harness", "bench", "mid", "--adapter",
                           adapter, "--backend", "cpu", "--out", str(out), "-q", *FAST],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("adapter, successes, words", [
    ("midway", 2, "zlh: mid: the adapter raised RuntimeError after 2 case(s): lost the list"),
    ("garbage", 0, "zlh: mid: the adapter gave a str, not an adapters.Case"),
])
@pytest.mark.e2e
def test_an_adapter_that_breaks_midway_keeps_the_cases_measured(plugin_path, tmp_path,
                                                                 adapter, successes, words):
    """Before: a traceback; the run `crashed` without a reason."""
    proc = zlh(plugin_path, tmp_path, adapter)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("zlh: ")]
    assert len(errors) == 1 and errors[0].startswith(words), proc.stderr
    (run_json,) = tmp_path.glob("*/run.json")
    info = json.loads(run_json.read_text())
    assert info["status"] == "crashed" and info["reason"].startswith("the adapter ")
    assert info["counts"]["SUCCESS"] == successes


@pytest.mark.e2e
def test_a_plugin_that_calls_sys_exit_on_import_is_named(plugin_path, tmp_path):
    """Before: zlh ended silently with the plugin's status (4: read as a caliber error)."""
    proc = zlh(plugin_path, tmp_path, "midway", PLUGIN_EXIT="1")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "zlh: adapter 'midway' (zlh_faulty_plugin:Midway from zlh-faulty-plugin 0.1) cannot be "
        "loaded: SystemExit: 4"]


class _OddBackend:
    name = "odd"

    def __init__(self, identity):
        self._identity = identity

    def identity(self, index):
        if isinstance(self._identity, Exception):
            raise self._identity
        return self._identity


@pytest.mark.parametrize("identity, words", [
    ("H200", "backend odd: identity(0) gave 'H200', not a DeviceIdentity"),
    (RuntimeError("no\nNVML"), "backend odd: identity(0) raised RuntimeError: no"),
])
def test_a_backend_whose_identity_is_garbage_is_a_preflight_failure(identity, words):
    """Before: an AttributeError traceback from run.json's device name."""
    from harness.common.errors import PreflightError
    from harness.run.run_info import device_identity
    with pytest.raises(PreflightError) as caught:
        device_identity(_OddBackend(identity), 0)
    assert caught.value.check == "backend" and words in caught.value.message


def test_zlh_bench_with_a_garbage_identity_is_one_line_and_leaves_no_run(tmp_path, monkeypatch):
    """The check sits where the run takes the identity (after the backend is active): exit
    3, one line, and the run directory it had begun is removed."""
    from click.testing import CliRunner
    from backends.cpu import CpuBackend
    monkeypatch.setattr(CpuBackend, "identity", lambda self, index: "H200")
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--shapes", str(shapes), *FAST, "--out",
                                       str(tmp_path / "runs")])
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == 3 and "Traceback" not in result.output, result.output
    assert lines == ["zlh: PREFLIGHT_FAILED check=backend backend cpu: identity(0) gave 'H200', "
                     "not a DeviceIdentity"], result.output
    assert not list((tmp_path / "runs").glob("add_*"))


@pytest.mark.e2e
def test_an_adapter_that_breaks_midway_in_a_batch_is_a_crash_not_a_full_disk(plugin_path,
                                                                             tmp_path):
    """A reused worker took the adapter's failure for a write failure: the batch stopped as
    if the disk were full, and every resume stopped at the same op again."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin_path), str(ROOT)]))
    root = tmp_path / "batch"
    proc = subprocess.run([sys.executable, "-m", "harness", "batch", "--ops", "mid",
                           "--adapter", "midway", "--backend", "cpu", "--out", str(root),
                           "--retries", "0", "-q", *FAST],
                          env=env, capture_output=True, text=True, timeout=300)
    assert "free space" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    done = json.loads((root / "mid" / ".complete").read_text())
    assert done["status"] == "CRASH", done


def test_an_interrupt_before_anything_was_written_says_nothing_is_kept(tmp_path, capsys):
    from harness.cli.common import keeps_on_interrupt

    def stopped():
        raise KeyboardInterrupt
    for root, said in ((tmp_path / "never", "nothing is kept"),
                       (tmp_path, "finished ops are kept under")):
        (tmp_path / "plan.json").write_text("{}")
        with pytest.raises(SystemExit) as exited:
            keeps_on_interrupt(root, f"zlh ab --rescore {root}", stopped)
        assert exited.value.code == 130
        line = capsys.readouterr().err.strip()
        assert line.startswith("zlh: interrupted; ") and said in line, line


def test_an_op_name_with_a_control_character_is_refused_before_anything_runs(tmp_path):
    """A tab or a line break in an op name would split screen.tsv's rows and name no op in
    ir_changed.txt: one line, exit 2, no root."""
    for name in ("tab\tx", "nl\nx", "ls\u2028x", "nel\x85x"):
        result = CliRunner().invoke(main, ["batch", "--cases", "anything:cases", "--ops", name,
                                           "--backend", "cpu", "--out", str(tmp_path / "b")])
        assert result.exit_code == 2, result.output
        assert "holds a control character" in result.output
        assert not (tmp_path / "b").exists()


def test_an_op_that_closes_sys_stdout_still_gets_its_run_and_its_table(cases_dir):
    """zlh's own lines after the op went to a stream the op closed: a traceback and a run
    marked crashed. They go to a new stream on the same file now, the run completes."""
    env = {**os.environ, "PYTHONPATH": f"{cases_dir}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-m", "harness", "bench", "closer", "--cases",
                           "faulty_cases:closer", "--backend", "cpu", "--out",
                           str(cases_dir / "runs"), *FAST], cwd=cases_dir, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "1/1 ok" in done.stdout, done.stdout
    (run,) = (cases_dir / "runs").glob("closer_*/run.json")
    assert json.loads(run.read_text())["status"] == "complete"
