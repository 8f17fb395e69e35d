"""--sweep-ms: each config of a recorded sweep is timed on a shorter budget (a fifth warm-up,
the rest measured), through the tuner's own benchmarker where it takes budgets, else Triton's
do_bench; the tuner's benchmarker is put back when the sweep ends, and a cached call sweeps
nothing and changes nothing."""
from __future__ import annotations

from functools import cached_property

import pytest
import triton
from click.testing import CliRunner

from harness.cli import main
from harness.common.errors import UsageError
from harness.compile import autotune as at
from harness.compile.autotune import budget
from harness.compile.autotune.budget import split, sweep_budget
from harness.run import plan as plan_module
from harness.run.options import BenchOptions

from test_sweep_lock import copy_body, launch

CALLS: list[dict] = []


def bench_taking_budgets(fn, quantiles=None, **budget):
    fn()
    CALLS.append(budget)
    return [1.0] * len(quantiles) if quantiles else 1.0


def bench_without_budgets(kernel_call, quantiles):
    raise AssertionError("a benchmarker that takes no budget is replaced for the sweep")


CONFIGS = [triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=1)]
with_budgets = triton.autotune(configs=CONFIGS, key=["n"], do_bench=bench_taking_budgets)(
    copy_body)
without_budgets = triton.autotune(configs=CONFIGS, key=["n"], do_bench=bench_without_budgets)(
    triton.jit(copy_body.fn))


@pytest.fixture
def recorder(tmp_path):
    CALLS.clear()
    for kernel in (with_budgets, without_budgets):
        kernel.cache.clear()
    hook = at.AutotuneRecorder(tmp_path / "run", {"backend": "cpu", "provider": "builtin",
                                                  "op": "copy"})
    hook.install()
    try:
        yield hook
    finally:
        hook.uninstall()


def test_a_budgeted_sweep_times_each_config_on_the_budget_and_puts_the_benchmarker_back(
        recorder):
    recorder.sweep_ms = 10
    before = with_budgets.do_bench
    launch(100, with_budgets)                         # a miss: two configs timed
    assert CALLS == [{"warmup": 2.0, "rep": 8.0}] * 2
    assert with_budgets.do_bench is before
    launch(100, with_budgets)                         # cached: nothing timed
    assert len(CALLS) == 2
    recorder.sweep_ms = None                          # the tuner's own budget
    with_budgets.cache.clear()
    launch(100, with_budgets)
    assert CALLS[2:] == [{}, {}]


def test_a_benchmarker_without_budgets_gives_way_to_the_devices_own(recorder, monkeypatch):
    seen = []

    def do_bench(kernel_call, warmup, rep, quantiles=None):
        kernel_call()
        seen.append((warmup, rep, quantiles))
        return [1.0] * len(quantiles)
    monkeypatch.setattr(budget, "device_benchmarker", lambda: do_bench)
    recorder.sweep_ms = 25
    launch(64, without_budgets)
    assert seen == [(5.0, 20.0, (0.5, 0.2, 0.8))] * 2
    assert without_budgets.do_bench is bench_without_budgets


def test_a_computed_benchmarker_is_computed_again_and_a_read_only_one_is_left_alone():
    class ReadOnly:
        @property
        def do_bench(self):
            return bench_taking_budgets

    with sweep_budget(ReadOnly(), *split(10)) as budgeted:   # no setter: its own budget
        assert budgeted is False

    class Cached:                       # Triton's Autotuner: a cached_property
        @cached_property
        def do_bench(self):
            return bench_taking_budgets
    cached = Cached()
    with sweep_budget(cached, 1.0, 4.0) as budgeted:
        assert budgeted and cached.do_bench.zlh_budget == (1.0, 4.0)
    assert "do_bench" not in cached.__dict__ and cached.do_bench is bench_taking_budgets


def test_sweep_ms_implies_a_private_tuner_db_and_needs_the_hooks(tmp_path):
    asked = []

    class Adapter:
        def tuner_cache(self, root, isolate, environ):
            asked.append(isolate)
            return type("T", (), {"env": {}, "description": "x", "private_dirs": ()})()
    plan_module._tuner_cache(Adapter(), tmp_path, BenchOptions(sweep_ms=25.0))
    plan_module._tuner_cache(Adapter(), tmp_path, BenchOptions())
    assert asked == [True, False]
    with pytest.raises(UsageError, match="below its minimum"):
        BenchOptions(sweep_ms=0.5)
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", "--backend",
                                       "cpu", "--sweep-ms", "25", "--no-autotune-hooks",
                                       "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "--sweep-ms" in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
