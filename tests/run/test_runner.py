import dataclasses
import json

import pytest
import torch

import backends
from conftest import FakeBackend
from scripted import ScriptedAdapter, plan_for
from adapters.base import Adapter, Case, CaseInputs
from harness.common import markers
from harness.common.errors import DevicePoisonedError
from harness.store.reader import read_rows
from harness.store.results import FAILED, SKIPPED, SUCCESS
from harness.run.options import BenchOptions
from harness.run.plan import BenchPlan
from harness.run.runner import run_op


def test_failed_case_does_not_lose_the_others(tmp_path, sure_rule, fast_budget):
    plan = plan_for(["ok", "raise", "wrong", "skip", "ok"], tmp_path, sure_rule, fast_budget)
    result = run_op(plan, "op", echo=lambda _: None)
    statuses = [r.status for r in result.rows]
    assert statuses == [SUCCESS, FAILED, FAILED, SKIPPED, SUCCESS]
    assert result.rows[1].reason == "ValueError"
    assert result.rows[2].reason == "mismatch"
    assert result.exit_code == 1
    on_disk = read_rows(result.run_dir / "results.jsonl")
    assert [r.status for r in on_disk] == statuses
    assert on_disk[0].gems.n >= sure_rule.min_samples     # raw samples kept
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["status"] == "complete"
    assert info["counts"] == {"SUCCESS": 2, "FAILED": 2, "SKIPPED": 1}
    log = (result.run_dir / "run.log").read_text()
    assert "BENCHMARK_CASE_FAILED op=op dtype=float32 shape=8x1 reason=ValueError" in log
    assert "\x1b[" not in log
    csv_lines = (result.run_dir / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 6 and csv_lines[0].startswith("op,variant,dtype,shape_detail")


def test_without_baseline_timing_the_baseline_still_checks_but_is_not_timed(
        tmp_path, sure_rule, fast_budget):
    plan = plan_for(["ok", "wrong"], tmp_path, sure_rule, fast_budget)
    plan = dataclasses.replace(plan, options=plan.options.replace(baseline_timing=False))
    result = run_op(plan, "op", echo=lambda _: None)
    ok, wrong = read_rows(result.run_dir / "results.jsonl")
    assert ok.status == SUCCESS and ok.torch is None and ok.torch_ms is None
    assert ok.speedup is None and ok.gems.n >= sure_rule.min_samples
    assert wrong.status == FAILED and wrong.reason == "mismatch"   # the check still ran
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["options"]["baseline_timing"] is False


def test_poisoned_device_ends_run_but_keeps_rows(tmp_path, fast_rule, fast_budget):
    plan = plan_for(["ok", "poison", "ok"], tmp_path, fast_rule, fast_budget, FakeBackend())
    with pytest.raises(DevicePoisonedError) as info:
        run_op(plan, "op", echo=lambda _: None)
    assert info.value.message.startswith(markers.DEVICE_POISONED)
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = read_rows(run_dir / "results.jsonl")
    assert [r.status for r in rows] == [SUCCESS]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "poisoned"
    assert markers.DEVICE_POISONED in (run_dir / "run.log").read_text()


def test_inputs_are_identical_across_runs(tmp_path, fast_rule, fast_budget):
    seen = []

    class Recording(ScriptedAdapter):
        def cases(self, *a, **k):
            for case in super().cases(*a, **k):
                build = case.build

                def recorded(build=build):
                    inputs = build()
                    seen.append(inputs.args[0].clone())
                    return inputs
                case.build = recorded
                yield case

    for _ in range(2):
        plan = plan_for(["ok"], tmp_path, fast_rule, fast_budget)
        plan.adapter = Recording(["ok"])
        run_op(plan, "op", echo=lambda _: None)
    assert torch.equal(seen[0], seen[1])


def test_record_runs_are_found_by_op_and_mode_newest_first_last(tmp_path):
    from harness.store.reader import find_runs

    def run(name, op, mode, started):
        path = tmp_path / name
        path.mkdir()
        (path / "run.json").write_text(json.dumps({"op": op, "autotune_mode": mode,
                                                   "started_at": started}))
        return path

    old = run("add_20260101-000000", "add", "record", "2026-01-01T00:00:00")
    new = run("add_20260101-000000-10", "add", "record", "2026-01-01T00:00:09")
    run("add_20260101-000000-2", "add", "replay", "2026-01-01T00:00:05")
    run("add_relu_20270101-000000", "add_relu", "record", "2027-01-01T00:00:00")
    assert find_runs(tmp_path, "add", mode="record") == [old, new]


def test_bench_restores_the_environment(tmp_path, fast_rule, fast_budget, monkeypatch):
    import os
    import harness
    monkeypatch.setenv("FLAGGEMS_DB_URL", "sqlite:///keep.db")
    before = dict(os.environ)
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64]]\n")
    harness.bench("add", adapter="builtin", backend="cpu", shapes=str(shapes),
                  out=str(tmp_path / "runs"), rule=fast_rule, budget=fast_budget,
                  isolate_tuner_cache=True, echo=lambda _: None)
    assert dict(os.environ) == before


def test_failure_detail_says_where_a_bare_assert_was_raised():
    from harness.common.errors import failure_detail

    def check_shape(n):
        # what a bare `assert` raises (pytest rewrites the asserts of this file)
        if n % 128:
            raise AssertionError

    try:
        check_shape(64)
    except AssertionError as exc:
        detail = failure_detail(exc)
    assert detail.startswith("AssertionError (no message) at test_runner.py:")
    assert detail.endswith("in check_shape: raise AssertionError")
    try:
        raise ValueError("bad block size\nsecond line")
    except ValueError as exc:
        assert failure_detail(exc).startswith("bad block size at test_runner.py:")
    try:
        raise RuntimeError("x" * 400)            # long compiler errors keep the location
    except RuntimeError as exc:
        detail = failure_detail(exc)
    assert len(detail) <= 240 and "at test_runner.py:" in detail


class LibraryScope:
    """Stands in for a library context such as FlagGems' use_gems: counts entries, and tells
    whether it is active."""

    active = 0
    entries = 0

    def __enter__(self):
        LibraryScope.active += 1
        LibraryScope.entries += 1

    def __exit__(self, *exc):
        LibraryScope.active -= 1


class ScopeCheckingBackend(FakeBackend):
    """Graph set-up (capture begin/end) must never run inside the library scope."""

    def __init__(self):
        super().__init__()
        self.capture_in_scope = []

    def graph_capture(self, graph):
        self.capture_in_scope.append(LibraryScope.active)
        return super().graph_capture(graph)


class BuiltByKernelAdapter(ScriptedAdapter):
    """One case whose inputs are built by a (simulated) Triton kernel launch, and whose
    function under test launches another one inside a library scope."""

    def __init__(self):
        super().__init__(["ok"])

    def cases(self, op, dtypes, shapes, level, backend, device):
        import ir_kernels as K

        def build():
            K.launch(K.compile_fill())          # compiled here: the capture listens already
            return CaseInputs((torch.randn(8),))

        def under_test(x):
            assert LibraryScope.active, "the function under test runs inside its scope"
            K.launch(K.compile_add(64))
            return x * 2

        yield Case(op=op, dtype="float32", shape=[8], shape_detail="8", build=build,
                   baseline=lambda x: x * 2, under_test=under_test,
                   under_test_context=LibraryScope)


def test_ir_roles_and_library_scope_in_a_real_run(tmp_path, fast_rule, fast_budget):
    """Kernels the inputs are built with are set-up, not the op's code; the library scope
    wraps the calls of the function under test only, never graph capture set-up."""
    import sys
    from pathlib import Path
    import ir_kernels as K
    from harness.compile.ir.fingerprint import fingerprint, read_index
    with K.private_cache(tmp_path / "triton_cache"):
        backend = ScopeCheckingBackend()
        options = BenchOptions(out=str(tmp_path / "runs"), rule=fast_rule, budget=fast_budget,
                               argv=["test"])
        plan = BenchPlan(["op"], options, backend, 0, BuiltByKernelAdapter(),
                         "graph", {"op": ["float32"]}, None)
        LibraryScope.entries = 0
        result = run_op(plan, "op", echo=lambda _: None)
    assert [r.status for r in result.rows] == ["SUCCESS"], result.rows[0].markers
    assert backend.capture_in_scope and not any(backend.capture_in_scope)
    assert LibraryScope.active == 0 and LibraryScope.entries >= 3
    rows = {r["kernel"]: r for r in read_index(result.run_dir)}
    assert rows["fill_kernel"]["role"] == "setup"
    assert rows["fill_kernel"]["file"].startswith("_setup/8/fill_kernel/")
    assert rows["add_kernel"]["role"] == "measured" and int(rows["add_kernel"]["launches"]) > 2
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["ir"]["measured_variants"] == 1 and info["ir"]["setup_variants"] == 1
    assert fingerprint(result.run_dir) != fingerprint(result.run_dir, part="setup")
