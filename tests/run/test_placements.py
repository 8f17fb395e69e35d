"""--placements: each case timed on N placements of its inputs, built again elsewhere, and the
placements' medians combined."""
import contextlib
import dataclasses
import json
import weakref

import pytest
import torch

import backends
from harness.measure.measurement import Measurement
from harness.run import placement
from adapters.base import CaseInputs
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
        tmp_path, sure_rule, fast_budget, monkeypatch):
    monkeypatch.setattr(backends.get_backend("cpu").__class__, "memory_free",
                        lambda self, index: 1 << 40)
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
    free = [1 << 40, 0]                      # room, then none (then never asked again)
    monkeypatch.setattr(backends.get_backend("cpu").__class__, "memory_free",
                        lambda self, index: free.pop(0))
    adapter, row, _ = run_placements(tmp_path, sure_rule, fast_budget, "new")
    # placement 1 kept build 0; placement 2 had no room: builds 0 and 1 let go before it;
    # placement 3 reuses memory too (memory the let-go placements held is no new memory)
    assert adapter.alive == [[], [True], [False, False], [False, False, False]]
    assert row.extra["placements_new_memory"] == 1 and free == []


def test_room_asks_for_the_copy_twice_a_spacer_and_the_reserve(monkeypatch):
    backend = backends.get_backend("cpu")
    need = 2 * 100 + placement.SHIFT_MAX_BYTES + placement.RESERVE_BYTES
    monkeypatch.setattr(backend.__class__, "memory_free", lambda self, index: need)
    assert placement.room_for(backend, 0, 100) and not placement.room_for(backend, 0, 101)
    monkeypatch.setattr(backend.__class__, "memory_free", lambda self, index: None)
    assert not placement.room_for(backend, 0, 1)             # a runtime that does not say


def test_the_host_says_how_much_memory_is_available(tmp_path, monkeypatch):
    from backends import cpu
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:         1000 kB\n"
                       "MemAvailable:   20000000 kB\n")
    monkeypatch.setattr(cpu, "MEMINFO", str(meminfo))
    assert backends.get_backend("cpu").memory_free(0) == 20000000 * 1024
    meminfo.write_text("MemTotal: 24000000 kB\n")              # an older kernel: no figure
    assert backends.get_backend("cpu").memory_free(0) is None
    monkeypatch.setattr(cpu, "MEMINFO", str(tmp_path / "absent"))
    assert backends.get_backend("cpu").memory_free(0) is None


def test_a_runtime_without_a_free_memory_figure_says_none(monkeypatch):
    from backends.base import Backend

    class Runtime:
        def mem_get_info(self, index):
            raise RuntimeError("not supported")
    monkeypatch.setattr(Backend, "torch_module", lambda self: Runtime())
    assert Backend.memory_free(object.__new__(Backend), 0) is None
    monkeypatch.setattr(Backend, "torch_module", lambda self: object())
    assert Backend.memory_free(object.__new__(Backend), 0) is None
    monkeypatch.setattr(Backend, "torch_module", lambda self: type(
        "R", (), {"mem_get_info": lambda self, index: (5 << 30, 80 << 30)})())
    assert Backend.memory_free(object.__new__(Backend), 0) == 5 << 30


def test_a_build_that_fails_in_new_memory_lets_go_of_what_was_kept(monkeypatch):
    backend = backends.get_backend("cpu")
    monkeypatch.setattr(backend.__class__, "memory_free", lambda self, index: 1 << 40)
    mover = placement.Mover(backend, 0, placement.NEW, lambda number: f"s:{number}")
    first = CaseInputs((torch.zeros(4),))
    alive = weakref.ref(first.args[0])
    fed = [first]
    del first
    fed[0] = mover.move(1, fed, lambda: CaseInputs((torch.ones(4),)))
    assert alive() is not None and mover.in_new_memory == 1       # kept

    def broken():
        raise RuntimeError("out of memory")
    with pytest.raises(RuntimeError):
        try:
            mover.move(2, fed, broken)
        finally:
            mover.close()
    assert alive() is None and mover.kept == [] and fed[0] is None


class Spacers:
    """placement.elsewhere and the allocator's emptying, spied: how many spacers are held
    now, and every event in order (an emptying with how many builds were still alive)."""

    def __init__(self, monkeypatch, events, alive):
        real, self.held = placement.elsewhere, 0

        @contextlib.contextmanager
        def spying(*args, **kwargs):
            with real(*args, **kwargs) as size:
                self.held += 1
                events.append("spacer")
                try:
                    yield size
                finally:
                    self.held -= 1
                    events.append("spacer freed")
        monkeypatch.setattr(placement, "elsewhere", spying)
        monkeypatch.setattr(backends.get_backend("cpu").__class__, "empty_cache",
                            lambda _: events.append(("emptied", alive())))


class Timed(Remembering):
    """Remembering, whose builds and timed calls go to `events`: a build with how many
    earlier builds are alive, a call with how many spacers are held."""

    def __init__(self, kinds, events, monkeypatch):
        super().__init__(kinds)
        self.events = events
        self.spacers = Spacers(monkeypatch, events, self.alive_now)

    def alive_now(self) -> int:
        return sum(ref() is not None for ref in self.built)

    def cases(self, *args, **kwargs):
        for case in super().cases(*args, **kwargs):
            def build(inner=case.build):
                self.events.append(("build", self.alive_now()))
                return inner()

            def under_test(*a, inner=case.under_test, **k):
                self.events.append(("call", self.spacers.held))
                return inner(*a, **k)
            yield dataclasses.replace(case, build=build, under_test=under_test)


def placement_events(tmp_path, rule, budget, monkeypatch, memory):
    """The events of one case on three placements, repeats squeezed to one."""
    events: list = []
    adapter = Timed(["ok"], events, monkeypatch)
    monkeypatch.setattr(backends.get_backend("cpu").__class__, "memory_free",
                        lambda self, index: 1 << 40)
    plan = plan_for([], tmp_path, rule, budget)
    plan = dataclasses.replace(plan, adapter=adapter, options=plan.options.replace(
        placements=3, placement_memory=memory))
    run_op(plan, "op", echo=lambda _: None)
    return [e for k, e in enumerate(events) if k == 0 or e != events[k - 1]]


def test_each_placement_frees_empties_holds_builds_then_times_behind_its_spacer(
        tmp_path, sure_rule, fast_budget, monkeypatch):
    # reused: the previous inputs gone (0 alive at the build) and their spacer freed before
    # the cache is emptied and a new spacer held; every timed call behind one spacer
    assert placement_events(tmp_path, sure_rule, fast_budget, monkeypatch, "reused") == [
        ("build", 0), ("call", 0),
        ("emptied", 0), "spacer", ("build", 0), ("call", 1),
        "spacer freed", ("emptied", 0), "spacer", ("build", 0), ("call", 1), "spacer freed"]


def test_new_memory_holds_every_spacer_beside_its_inputs_to_the_case_end(
        tmp_path, sure_rule, fast_budget, monkeypatch):
    # new: nothing freed until the case ends (the cache emptied before the free memory is
    # read, and again behind the spacer); every later call behind all the spacers so far
    assert placement_events(tmp_path, sure_rule, fast_budget, monkeypatch, "new") == [
        ("build", 0), ("call", 0),
        ("emptied", 1), "spacer", ("build", 1), ("call", 1),
        ("emptied", 2), "spacer", ("build", 2), ("call", 2), "spacer freed"]


def test_input_bytes_counts_each_storage_once_wherever_it_is_passed():
    x, y = torch.zeros(10, dtype=torch.float32), torch.zeros(3, dtype=torch.float64)
    inputs = CaseInputs((x, [x[2:], {"y": y}], 7), {"again": x.view(2, 5), "none": None})
    assert placement.input_bytes(inputs) == 40 + 24


def test_one_placement_in_new_memory_moves_nothing_and_says_nothing(
        tmp_path, sure_rule, fast_budget):
    adapter, row, info = run_placements(tmp_path, sure_rule, fast_budget, "new", placements=1)
    assert adapter.alive == [[]] and "placements_new_memory" not in row.extra
    assert info["caliber"]["placement_memory"] == "reused"


def test_one_placement_records_no_memory_mode_in_the_caliber():
    one = BenchOptions.from_flat(placement_memory="new")
    assert one.caliber_values()["placement_memory"] == "reused"   # nothing is moved
    assert not one.caliber_differences(BenchOptions())              # so nothing differs
    two = BenchOptions.from_flat(placements=2, placement_memory="new")
    assert two.caliber_values()["placement_memory"] == "new"
    assert [o.name for o in two.caliber_differences(two.replace(
        placement_memory="reused"))] == ["placement_memory"]


def test_a_stored_caliber_names_a_placement_memory_the_option_table_knows():
    from harness.common.errors import UsageError
    from harness.run.option_table import BY_NAME
    from harness.store.caliber import CHOICES, Caliber
    assert all(CHOICES[name] == BY_NAME[name].choices for name in CHOICES)
    stored = dict(Caliber("cpu", "host", "host", "core", "default", "none", 1, "warm",
                          1.0).to_dict(), placements=2)
    assert Caliber.from_dict(dict(stored, placement_memory="new")).placement_memory == "new"
    with pytest.raises(UsageError, match="placement_memory: expected reused or new"):
        Caliber.from_dict(dict(stored, placement_memory="banana"))
    with pytest.raises(UsageError, match="inputs: expected device or upstream"):
        Caliber.from_dict(dict(stored, inputs="host"))
    stored.pop("placement_memory")                  # a run written before the field
    assert Caliber.from_dict(stored).placement_memory == "reused"


class MadeOnce(ScriptedAdapter):
    """An adapter whose build hands back the tensors it made once (as FlagGems' cases do:
    get_input_iter made them); the function under test notes where each call's input lies."""

    def __init__(self, kinds, seen, hand_back=lambda made: made):
        super().__init__(kinds)
        self.seen, self.hand_back = seen, hand_back

    def cases(self, *args, **kwargs):
        for case in super().cases(*args, **kwargs):
            made = case.build()

            def under_test(x, inner=case.under_test):
                self.seen.append((x.data_ptr(), x.clone()))
                return inner(x)
            yield dataclasses.replace(case, build=lambda made=made: self.hand_back(made),
                                      under_test=under_test)


def made_once_run(tmp_path, rule, budget, memory, hand_back=lambda made: made, free=1 << 40,
                  monkeypatch=None):
    monkeypatch.setattr(backends.get_backend("cpu").__class__, "memory_free",
                        lambda self, index: free)
    seen: list = []
    plan = plan_for([], tmp_path, rule, budget)
    plan = dataclasses.replace(plan, adapter=MadeOnce(["ok"], seen, hand_back),
                               options=plan.options.replace(placements=3,
                                                            placement_memory=memory,
                                                            check=False))
    result = run_op(plan, "op", echo=lambda _: None)
    (row,) = read_rows(result.run_dir / "results.jsonl")
    assert row.status == SUCCESS and len(row.gems.repeats) == 3
    placed = [ptr for ptr, _ in seen]
    assert all(torch.equal(values, seen[0][1]) for _, values in seen)   # the same values
    return row, placed


@pytest.mark.parametrize("memory", ["reused", "new"])
@pytest.mark.parametrize("hand_back", [lambda made: made,
                                       lambda made: CaseInputs((made.args[0].detach(),)),
                                       lambda made: CaseInputs((made.args[0][:],))],
                         ids=["same", "detached", "view"])
def test_inputs_an_adapter_made_once_are_copied_so_that_each_placement_moves_them(
        tmp_path, sure_rule, fast_budget, monkeypatch, memory, hand_back):
    """A build that hands back the tensors it made once (or views of them) would time every
    placement on the same memory: those inputs are copied behind the placement's spacer
    (the same values elsewhere), and the row says how many placements were copied."""
    row, placed = made_once_run(tmp_path, sure_rule, fast_budget, memory, hand_back,
                                monkeypatch=monkeypatch)
    assert row.extra["placements_copied"] == 2 and "placements_not_moved" not in row.extra
    first = placed[0]                                    # the made-once memory: placement 0 only
    assert first not in placed[placed.index(next(p for p in placed if p != first)):]
    if memory == "new":                                  # every placement's own memory
        assert len(set(placed)) == 3


def test_made_once_inputs_stay_where_they_are_when_a_copy_would_not_fit(
        tmp_path, sure_rule, fast_budget, monkeypatch):
    row, placed = made_once_run(tmp_path, sure_rule, fast_budget, "reused", free=0,
                                monkeypatch=monkeypatch)
    assert row.extra["placements_not_moved"] == 2 and "placements_copied" not in row.extra
    assert set(placed) == {placed[0]}


def test_inputs_built_anew_are_not_copied(tmp_path, sure_rule, fast_budget):
    _, row, _ = run_placements(tmp_path, sure_rule, fast_budget, "reused")
    assert "placements_copied" not in row.extra


def test_the_later_placements_spacers_follow_the_placement_seed(tmp_path, sure_rule,
                                                                 fast_budget, monkeypatch):
    """A bench run draws its spacers from --seed; a round of an A/B gives its own seed (the same
    on both sides, each round another: ab/sides.py), so where its placements land is drawn
    anew every round instead of repeating — only the spacers, never the inputs' values."""
    seeds = []
    real = placement.elsewhere
    monkeypatch.setattr(placement, "elsewhere",
                        lambda backend, index, seed, *rest: seeds.append(seed) or real(
                            backend, index, seed, *rest))
    drawn = {}
    for name, seed in (("default", None), ("round7", 7), ("round7again", 7), ("round8", 8)):
        adapter = Remembering(["ok"])
        plan = plan_for([], tmp_path / name, sure_rule, fast_budget)
        plan = dataclasses.replace(plan, adapter=adapter, options=plan.options.replace(
            placements=3, placement_seed=seed))
        seeds.clear()
        result = run_op(plan, "op", echo=lambda _: None)
        (row,) = read_rows(result.run_dir / "results.jsonl")
        assert row.status == SUCCESS and len(row.gems.repeats) == 3
        drawn[name] = list(seeds)
    assert len(drawn["default"]) == 2 and all(s.startswith("0:") for s in drawn["default"])
    assert drawn["round7"] == drawn["round7again"] != drawn["round8"]
    assert all(s.startswith("7:") for s in drawn["round7"])
    assert {s.split(":", 1)[1] for s in drawn["round7"]} == {
        s.split(":", 1)[1] for s in drawn["default"]}        # placement number, shape: kept
