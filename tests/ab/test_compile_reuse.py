"""Each side of an A/B compiles an op's kernels once: its first run keeps its Triton cache and
its later runs load from it, never from the other side's; the kept caches go with the op.
(End to end, on three rounds of fresh processes: test_ab_fresh_rounds.py.)"""
from harness.ab.compile_reuse import SideCaches
from harness.compile.caches import KEPT_PREFIX
from harness.run.options import BenchOptions


def test_the_first_run_keeps_the_later_ones_load_each_side_its_own(tmp_path):
    caches, base = SideCaches(), BenchOptions.from_argv([])
    first = caches.options("add", "A", base)
    assert first.keep_compile_cache and first.compile_cache is None
    caches.ran("add", "A", tmp_path / "r1_A")                 # it kept nothing (it failed)
    assert caches.options("add", "A", base).keep_compile_cache    # the next one keeps
    kept = tmp_path / "r2_A" / f"{KEPT_PREFIX}1"
    kept.mkdir(parents=True)
    caches.ran("add", "A", tmp_path / "r2_A")
    assert caches.options("add", "A", base).compile_cache == str(kept)
    assert caches.options("add", "B", base).keep_compile_cache      # not A's
    assert caches.options("mul", "A", base).keep_compile_cache      # not another op's
    given = base.replace(compile_cache="/elsewhere")
    assert caches.options("add", "A", given) is given                # a caller's choice stays
    caches.drop("add")
    assert not kept.exists() and caches.options("add", "A", base).keep_compile_cache


def test_a_run_stopped_before_it_was_known_still_has_its_cache_dropped(tmp_path):
    """An interrupt or a crash ends a first run before `ran`: the cache it was asked to keep
    goes with the op all the same; another op's stays until its own rounds end."""
    caches, base = SideCaches(), BenchOptions.from_argv([])
    for op in ("add", "mul"):
        out = tmp_path / op / "r1_B"
        assert caches.options(op, "B", base.replace(out=str(out))).keep_compile_cache
        (out / f"{KEPT_PREFIX}7").mkdir(parents=True)          # written, never reported
    caches.drop("add")
    assert not list((tmp_path / "add").rglob(KEPT_PREFIX + "*"))
    assert (tmp_path / "mul" / "r1_B" / f"{KEPT_PREFIX}7").is_dir()
    caches.drop("mul")
    assert not (tmp_path / "mul" / "r1_B" / f"{KEPT_PREFIX}7").exists()


def test_a_rounds_placement_spacers_are_one_draw_for_both_sides_and_another_each_round(
        tmp_path):
    from harness.ab.rounds import round_seed
    from harness.ab.sides import ABPlan, Side
    plan = ABPlan(ops=["add"], a=Side("A"), b=Side("B"), options=BenchOptions(),
                  root=tmp_path)
    seeds = {(number, side.label): plan.round_options("add", number, tmp_path, None,
                                                      side).placement_seed
             for number in (1, 2, 3) for side in (plan.a, plan.b)}
    for number in (1, 2, 3):
        assert seeds[number, "A"] == seeds[number, "B"] == round_seed("add", number)
    assert len({seeds[n, "A"] for n in (1, 2, 3)}) == 3
    assert plan.round_options("mul", 1, tmp_path, None, plan.a).placement_seed != seeds[1, "A"]
    kept = ABPlan(ops=["add"], a=Side("A"), b=Side("B"), draw_placements=False, root=tmp_path,
                  options=BenchOptions.from_flat(placement_seed=11))     # a replay: A's
    assert kept.round_options("add", 1, tmp_path, None, kept.b).placement_seed == 11
