"""An op that changes a global switch of torch in a reused worker (here: the default dtype)
is run, noted, and the worker replaced, so the next op measures as in a fresh process."""
from __future__ import annotations

import csv
import json

import pytest
import torch
from click.testing import CliRunner

from harness.cli import main
from harness.run import process_state
from conftest import FAST, ROOT



def test_snapshots_name_what_changed(monkeypatch, tmp_path):
    before = process_state.snapshot()
    assert before["default_dtype"] == "torch.float32" and before["grad_enabled"] is True
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", not torch.backends.cudnn.benchmark)
    monkeypatch.chdir(tmp_path)
    changed = process_state.changes(before, process_state.snapshot())
    assert {c.split(":")[0] for c in changed} == {"cudnn_benchmark", "cwd"}
    assert process_state.changes(before, before) == []


@pytest.mark.e2e
@pytest.mark.parametrize("ops", ["add,fault_global_state,softmax",
                                 "fault_global_state,add,softmax"])   # a worker's first op too
def test_a_worker_whose_op_changed_torchs_defaults_is_replaced(tmp_path, ops):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\n")
    out = tmp_path / "batch"
    result = CliRunner().invoke(main, [
        "batch", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes), *FAST,
        "--ops", ops, "--retries", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    with open(out / "ops_status.csv", newline="") as handle:
        rows = {r["op"]: r for r in csv.DictReader(handle)}
    assert rows["fault_global_state"]["status"] == "PASS"
    assert rows["fault_global_state"]["notes"] == "process_state=default_dtype"
    pids = {op: json.loads((out / rows[op]["run_dir"] / "run.json").read_text())["pid"]
            for op in rows}
    after = ops.split(",")[ops.split(",").index("fault_global_state") + 1]
    assert pids["fault_global_state"] != pids[after]            # the next op: a new worker
    assert (pids["add"] == pids["fault_global_state"]) is ops.startswith("add")
    for op in ("add", "softmax"):
        run = json.loads((out / rows[op]["run_dir"] / "run.json").read_text())
        assert run["dtypes"] == ["float32"], op
    log = (out / "fault_global_state" / "run.attempt1.log").read_text()
    assert "default_dtype: 'torch.float32' -> 'torch.float64'" in log


def test_a_monkeypatch_left_on_torch_is_named_and_torchs_own_wrapping_is_not(monkeypatch):
    import torch.nn.functional as F
    before = process_state.snapshot()
    import torch._dynamo  # noqa: F401 - wraps torch.manual_seed on import: torch's own change
    assert process_state.changes(before, process_state.snapshot()) == []
    original = F.softmax
    monkeypatch.setattr(F, "softmax", lambda *a, **k: original(*a, **k))
    monkeypatch.setattr(torch.Tensor, "add", lambda self, other: self, raising=False)
    monkeypatch.setattr(torch, "matmul", lambda a, b: a)
    changed = process_state.changes(before, process_state.snapshot())
    assert changed == ["torch: replaced matmul", "torch.nn.functional: replaced softmax",
                       "torch.Tensor: replaced add"]


@pytest.mark.e2e
def test_bench_warns_when_an_op_leaves_a_switch_for_the_ops_after_it(tmp_path):
    """`zlh bench a b` runs its ops in one process: an op that changed torch's default dtype
    — the first op too, compared with the state once planned — is named, with the ops that
    inherit it (a subprocess: the op changes this process's default otherwise)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\n")
    root = ROOT
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    proc = subprocess.run([sys.executable, "-m", "harness", "bench", "fault_global_state",
                           "softmax", "--adapter", "builtin", "--backend",
                           "cpu", "--shapes", str(shapes), *FAST, "--out", str(tmp_path / "r"),
                           "-q"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if "WARNING [process]" in ln]
    assert warnings == ["WARNING [process] fault_global_state changed default_dtype in this "
                        "process and left it so: softmax run with that (zlh batch gives each "
                        "op a clean worker)"], proc.stderr


def test_a_thread_left_running_is_a_change_and_one_that_ended_is_not():
    import threading
    before = process_state.snapshot()
    done = threading.Event()
    thread = threading.Thread(target=done.wait, daemon=True)
    thread.start()
    during = process_state.snapshot()
    assert [c.split(":")[0] for c in process_state.changes(before, during)] == ["python_threads"]
    done.set()
    thread.join()
    assert process_state.changes(during, process_state.snapshot()) == []
