"""--placements: each case timed on N placements of its inputs, built again elsewhere, and the
placements' medians combined."""
import dataclasses
import json

import pytest
import torch

import backends
from harness.measure.measurement import Measurement
from harness.run import placement
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
