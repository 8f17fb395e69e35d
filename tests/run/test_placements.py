"""--placements: each case timed on N placements of its inputs, built again elsewhere, and the
placements' medians combined."""
import dataclasses
import json
import weakref

import pytest
import torch

import backends
from harness.measure.measurement import Measurement
from harness.run import placement
from harness.run.options import BenchOptions
from harness.run.runner import run_op
from harness.store.reader import read_rows
from harness.store.results import SUCCESS
from scripted import ScriptedAdapter, plan_for


class BuildCounting(ScriptedAdapter):
    """ScriptedAdapter whose inputs remember every build (values and the allocator's state)."""

    def __init__(self, kinds, log):
        super().__init__(kinds)
        self.log = log

    def cases(self, *args, **kwargs):
        for case in super().cases(*args, **kwargs):
            def build(inner=case.build):
                inputs = inner()
                self.log.append((inputs.args[0].clone(), list(placement_held)))
                return inputs
            yield dataclasses.replace(case, build=build)


placement_held: list = []     # the bytes placement.elsewhere holds while a build runs


def test_every_placement_builds_the_same_values_elsewhere_and_the_row_combines_them(
        tmp_path, sure_rule, fast_budget, monkeypatch):
    emptied = []
    monkeypatch.setattr(backends.get_backend("cpu").__class__, "empty_cache",
                        lambda self: emptied.append(True))
    real = placement.elsewhere

    def spying(*args, **kwargs):
        class Held:
            def __enter__(self):
                self.inner = real(*args, **kwargs)
                placement_held.append(self.inner.__enter__())

            def __exit__(self, *exc):
                placement_held.pop()
                return self.inner.__exit__(*exc)
        return Held()
    monkeypatch.setattr(placement, "elsewhere", spying)
    log = []
    plan = plan_for([], tmp_path, sure_rule, fast_budget)
    plan = dataclasses.replace(plan, adapter=BuildCounting(["ok", "wrong"], log),
                               options=plan.options.replace(placements=3))
    result = run_op(plan, "op", echo=lambda _: None)
    ok, wrong = read_rows(result.run_dir / "results.jsonl")
    assert wrong.reason == "mismatch" and wrong.gems is None    # checked once, never timed
    assert ok.status == SUCCESS
    # the ok case: built for the check, then twice more, each behind a held allocation on an
    # emptied cache; the wrong case: built once
    builds = log[:3]
    assert builds[0][1] == []
    assert all(len(held) == 1 and held[0] > 0 for _, held in builds[1:])
    assert all(torch.equal(values, builds[0][0]) for values, _ in builds)   # same values
    assert len(log) == 4 and len(emptied) == 2
    for measured in (ok.gems, ok.torch):
        assert len(measured.repeats) == 3
        assert measured.median == pytest.approx(sorted(measured.repeats)[1])
        assert measured.n >= 3 * sure_rule.min_samples
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["caliber"]["placements"] == 3


def test_the_median_of_placements_is_not_dragged_by_one_that_landed_badly():
    def one(ms):
        return Measurement((ms, ms, ms), "graph", 4, 10)
    together = placement.combined([one(1.00), one(1.01), one(1.50)])
    assert together.median == pytest.approx(1.01) and together.n == 9
    assert together.repeats == (1.00, 1.01, 1.50) and together.warmup_calls == 30
    assert placement.combined([one(2.0)]).median == 2.0
    assert placement.combined([None, None]) is None


def test_elsewhere_holds_a_seeded_size_until_the_block_ends():
    backend = backends.get_backend("cpu")
    with placement.elsewhere(backend, 0, "s:1") as first:
        pass
    with placement.elsewhere(backend, 0, "s:1") as again, \
            placement.elsewhere(backend, 0, "s:2") as other:
        pass
    assert first == again != other
    assert 0 < first <= placement.SHIFT_MAX_BYTES and first % placement.UNIT == 0


class Remembering(ScriptedAdapter):
    """ScriptedAdapter whose every build notes which earlier builds' inputs are still alive."""

    def __init__(self, kinds):
        super().__init__(kinds)
        self.built: list = []         # a weak reference to each build's tensor
        self.alive: list = []         # at each build: which earlier builds were still alive

    def cases(self, *args, **kwargs):
        for case in super().cases(*args, **kwargs):
            def build(inner=case.build):
                self.alive.append([ref() is not None for ref in self.built])
                inputs = inner()
                self.built.append(weakref.ref(inputs.args[0]))
                return inputs
            yield dataclasses.replace(case, build=build)


def run_placements(tmp_path, rule, budget, memory: str, placements: int = 4):
    adapter = Remembering(["ok"])
    plan = plan_for([], tmp_path, rule, budget)
    plan = dataclasses.replace(plan, adapter=adapter, options=plan.options.replace(
        placements=placements, placement_memory=memory))
    result = run_op(plan, "op", echo=lambda _: None)
    (row,) = read_rows(result.run_dir / "results.jsonl")
    info = json.loads((result.run_dir / "run.json").read_text())
    return adapter, row, info


def test_new_memory_keeps_every_earlier_placements_inputs_until_the_case_ends(
        tmp_path, sure_rule, fast_budget):
    adapter, row, info = run_placements(tmp_path, sure_rule, fast_budget, "new")
    assert row.status == SUCCESS and len(row.gems.repeats) == 4
    # build 0 is the case's own; placements 1-3 each find every earlier build still held
    assert adapter.alive == [[], [True], [True, True], [True, True, True]]
    assert all(ref() is None for ref in adapter.built)        # all let go once the case ended
    assert row.extra["placements_new_memory"] == 3
    assert info["caliber"]["placement_memory"] == "new"


def test_reused_memory_frees_the_previous_inputs_first(tmp_path, sure_rule, fast_budget):
    adapter, row, info = run_placements(tmp_path, sure_rule, fast_budget, "reused")
    assert adapter.alive == [[], [False], [False, False], [False, False, False]]
    assert "placements_new_memory" not in row.extra
    assert info["caliber"]["placement_memory"] == "reused"


def test_new_memory_falls_back_where_the_device_would_be_left_short(
        tmp_path, sure_rule, fast_budget, monkeypatch):
    free = iter([1 << 40, 0, 1 << 40])       # room, then none, then room again
    monkeypatch.setattr(backends.get_backend("cpu").__class__, "memory_free",
                        lambda self, index: next(free))
    adapter, row, _ = run_placements(tmp_path, sure_rule, fast_budget, "new")
    # placement 1 kept build 0; placement 2 had no room: builds 0 and 1 let go before it;
    # placement 3 kept build 2 again
    assert adapter.alive == [[], [True], [False, False], [False, False, True]]
    assert row.extra["placements_new_memory"] == 2


def test_room_asks_for_the_copy_twice_a_spacer_and_the_reserve(monkeypatch):
    backend = backends.get_backend("cpu")
    need = 2 * 100 + placement.SHIFT_MAX_BYTES + placement.RESERVE_BYTES
    monkeypatch.setattr(backend.__class__, "memory_free", lambda self, index: need)
    assert placement.room_for(backend, 0, 100) and not placement.room_for(backend, 0, 101)
    monkeypatch.setattr(backend.__class__, "memory_free", lambda self, index: None)
    assert placement.room_for(backend, 0, 1 << 50)           # a runtime that does not say


def test_input_bytes_counts_each_storage_once_wherever_it_is_passed():
    from adapters.base import CaseInputs
    x, y = torch.zeros(10, dtype=torch.float32), torch.zeros(3, dtype=torch.float64)
    inputs = CaseInputs((x, [x[2:], {"y": y}], 7), {"again": x.view(2, 5), "none": None})
    assert placement.input_bytes(inputs) == 40 + 24


def test_one_placement_records_no_memory_mode_in_the_caliber():
    one = BenchOptions.from_flat(placement_memory="new")
    assert one.caliber_values()["placement_memory"] == "reused"   # nothing is moved
    assert BenchOptions.from_flat(placements=2, placement_memory="new").caliber_values()[
        "placement_memory"] == "new"
