"""IR capture: naming rules, index rows, sweep losers, dump after a crash.

Real kernels are compiled for a GPU target (sm90) on the CPU; launches go through
Triton's own hook chains with the arguments Triton passes (see ir_kernels.py).
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import triton
from triton.runtime.autotuner import Autotuner

import ir_kernels as K  # noqa: E402
from harness.compile.ir import triton_hooks, variants
from harness.compile.ir.fingerprint import convert_layout_count, fingerprint, read_index
from harness.common import markers
from harness.common.markers import parse_marker
from harness.compile.ir.capture import IRCapture
from harness.compile.ir.tuned_on import TuneOrigins
from harness.compile.ir.naming import (VariantParams, abbreviate, labels, legend,
                                       name_variants, shape_key)
from conftest import ROOT, TESTS



# --------------------------------------------------------------------------- naming (pure)
def vp(key, dtype="fp16", spec=None, stable=None, warps=4, stages=3, ctas=1, **constexprs):
    return VariantParams(key=key, kernel="k", constexprs=constexprs, num_warps=warps,
                         num_stages=stages, num_ctas=ctas, dtype=dtype,
                         spec=spec or {"x_ptr": "div16"}, stable_id=stable or f"id-{key}")


def test_abbreviation_to_initials():
    assert abbreviate("BLOCK_SIZE_M") == "BSM"
    assert abbreviate("GROUP_SIZE_M") == "GSM"
    assert abbreviate("BLOCK") == "BLOCK"
    assert abbreviate("num_stages") == "ns"
    # Two names that shorten alike keep their full spelling.
    assert labels(["BLOCK_SIZE_M", "BLOCK_SUM_M", "GROUP_SIZE_M"]) == {
        "BLOCK_SIZE_M": "BLOCK_SIZE_M", "BLOCK_SUM_M": "BLOCK_SUM_M", "GROUP_SIZE_M": "GSM"}


def test_only_differing_params_are_named():
    group = [vp("a", BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, GROUP_SIZE_M=8, EVEN_K=True),
             vp("b", BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, GROUP_SIZE_M=8, EVEN_K=False, warps=8)]
    assert name_variants(group) == {"a": "BSM64_EK1_w4s3", "b": "BSM128_EK0_w8s3"}
    assert legend(group) == {"BSM": "BLOCK_SIZE_M", "EK": "EVEN_K"}


def test_nothing_differs_gives_warps_stages():
    assert name_variants([vp("a", BLOCK=64)]) == {"a": "w4s3"}
    assert name_variants([vp("a", warps=8, stages=2, BLOCK=64)]) == {"a": "w8s2"}


def test_collision_by_dtype_first():
    group = [vp("a", dtype="fp16", BLOCK=64), vp("b", dtype="bf16", BLOCK=64),
             vp("c", dtype="fp16", BLOCK=128)]
    # c does not collide and keeps its plain name.
    assert name_variants(group) == {"a": "BLOCK64__fp16", "b": "BLOCK64__bf16", "c": "BLOCK128"}


def test_collision_by_specialisation_second():
    group = [vp("a", spec={"x_ptr": "div16", "EM": "div16"}, BLOCK=64),
             vp("b", spec={"x_ptr": "div16"}, BLOCK=64)]
    assert name_variants(group) == {"a": "w4s3__EMdiv16", "b": "w4s3__EMany"}
    group = [vp("a", spec={"stride_am": "eq1"}), vp("b", spec={"stride_am": "div16"})]
    assert name_variants(group) == {"a": "w4s3__saeq1", "b": "w4s3__sadiv16"}
    assert legend(group) == {"sa": "stride_am"}


def test_collision_by_hash_prefix_last():
    group = [vp("a", stable="1234abcd9999", BLOCK=64), vp("b", stable="1234abcd0000", BLOCK=64)]
    assert name_variants(group) == {"a": "w4s3__1234abcd9999", "b": "w4s3__1234abcd0000"}
    group = [vp("a", stable="aaaaaaaa11"), vp("b", stable="bbbbbbbb22")]
    assert name_variants(group) == {"a": "w4s3__aaaaaaaa", "b": "w4s3__bbbbbbbb"}


def test_names_do_not_depend_on_order():
    group = [vp("a", dtype="fp16", BLOCK_SIZE_M=64), vp("b", dtype="bf16", BLOCK_SIZE_M=64),
             vp("c", BLOCK_SIZE_M=128, warps=8), vp("d", stable="zz", BLOCK_SIZE_M=128, warps=8,
                                                   spec={"x_ptr": "div16", "n": "eq1"})]
    first = name_variants(group)
    assert name_variants(list(reversed(group))) == first
    assert len(set(first.values())) == len(group)


def test_names_do_not_depend_on_the_variants_ids():
    """Four specialisations of one kernel, as two processes compile them (ids that sort the
    other way round): the same names, arguments in the kernel's order (seen as a false
    IR_CHANGED: `…__pianyboany` on one side, `…__boanypiany` on the other)."""
    specs = [{}, {"bo": "div16"}, {"pi": "div16", "bo": "div16"}, {"pi": "eq1"}]
    for order in (("pi", "bo"), ()):
        sides = [[VariantParams(key=f"{side}{k}", kernel="k", num_warps=4, num_stages=3,
                                spec=spec, stable_id=f"{k if side == 'a' else 9 - k}",
                                arg_order=order) for k, spec in enumerate(specs)]
                 for side in "ab"]
        a, b = (name_variants(side) for side in sides)
        assert sorted(a.values()) == sorted(b.values())
        assert [a[f"a{k}"] for k in range(4)] == [b[f"b{k}"] for k in range(4)]
    assert a["a3"] == "w4s3__boanypieq1"                # no argument list: by name
    assert name_variants(sides[0])["a3"] == "w4s3__boanypieq1"
    ordered = [VariantParams(key=f"k{k}", kernel="k", num_warps=4, num_stages=3, spec=spec,
                             stable_id=str(k), arg_order=("pi", "bo"))
               for k, spec in enumerate(specs)]
    assert name_variants(ordered)["k3"] == "w4s3__pieq1boany"


def test_the_stable_id_is_the_same_in_every_process(tmp_path):
    """The same kernel from two generated files (a library's per-process code cache) with a
    function passed as a constant: Triton's source hash tells them apart (the function's
    repr carries its address), the stable id does not."""
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction     # (not the interpreter's, whatever is set)
    source = textwrap.dedent("""
        import triton.language as tl

        def combine(x):
            return x

        def kern(x_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
            i = tl.arange(0, BLOCK)
            tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)
        """)
    made = []
    for k in range(2):
        path = tmp_path / f"pid_{k}" / "gen.py"
        path.parent.mkdir()
        path.write_text(source)
        module = SimpleNamespace()
        exec(compile(source, str(path), "exec"), module.__dict__)
        made.append(ASTSource(JITFunction(module.kern), {"x_ptr": "*fp32", "n": "i32", "FN": "constexpr",
                                            "BLOCK": "constexpr"},
                              {"FN": module.combine, "BLOCK": 64},
                              {(0,): [["tt.divisibility", 16]]}))
    assert made[0].hash() != made[1].hash()
    ids = [variants._stable_id(src, {"num_warps": 4}) for src in made]
    assert ids[0] == ids[1]
    other = ASTSource(made[0].fn, made[0].signature, {"FN": made[0].constants[(2,)],
                                                       "BLOCK": 128}, made[0].attrs)
    assert variants._stable_id(other, {"num_warps": 4}) != ids[0]


def test_shape_keys_are_directory_names():
    assert shape_key("(1024, 1024)") == "1024x1024"
    assert shape_key("1024x1024") == "1024x1024"
    assert shape_key("[64x512, 512], dim=1") == "64x512_512_dim=1"
    assert "/" not in shape_key("a/b/../c") and shape_key("..") not in (".", "..")
    assert shape_key("") == "scalar"


# --------------------------------------------------------------------------- capture (Triton)
@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory):
    """One private cache for the module: each variant compiles once, later compiles are
    cache hits (the listener still fires, with the same metadata_group)."""
    with K.private_cache(tmp_path_factory.mktemp("triton_cache")) as cache:
        yield cache


@pytest.fixture
def capture(tmp_path, triton_cache):
    cap = IRCapture(tmp_path / "run" / "ttgir")
    assert cap.install() is True
    yield cap
    cap.uninstall()


def sweep(tuner_fn, compile_and_launch):
    """Run a real Autotuner._bench whose benchmark function compiles and launches a config
    (a GPU benchmark would launch it many times)."""
    def do_bench(kernel_call, quantiles):
        compile_and_launch()
        return [1.0, 1.0, 1.0]
    tuner = Autotuner(tuner_fn, tuner_fn.arg_names, [triton.Config({})], key=[],
                      reset_to_zero=None, restore_value=None, do_bench=do_bench)
    tuner.nargs = {}
    assert tuner._bench(config=triton.Config({})) == [1.0, 1.0, 1.0]


def run_cases(cap):
    """Five shapes, each built to exercise one naming rule, plus a sweep and a builder."""
    builder = K.compile_fill()
    K.launch(builder)                                   # input builder, outside any case

    cap.begin_case("(1024, 1024)", "float16")          # differing constexpr only
    loser = []
    sweep(K.ADD, lambda: (loser.append(K.compile_add(256)), K.launch(loser[0], 5)))
    K.measured(K.compile_add(64), 3)
    K.measured(K.compile_add(128), 2)
    cap.end_case()

    cap.begin_case("2048", "float16")                   # same params, different dtype
    K.measured(K.compile_add(64, dtype="fp16"))
    K.measured(K.compile_add(64, dtype="fp32"))
    cap.end_case()

    cap.begin_case("4096", "float16")                   # same params and dtype, EM spec
    K.measured(K.compile_add(64, em_div16=True))
    K.measured(K.compile_add(64, em_div16=False))
    cap.end_case()

    cap.begin_case("8192", "float16")                   # only a compiler option differs
    K.measured(K.compile_add(64))
    K.measured(K.compile_add(64, enable_fp_fusion=False))
    cap.end_case()

    cap.begin_case("16x16", "float32")                  # warps differ; convert_layout
    K.measured(K.compile_trans(), 4)
    K.measured(K.compile_add(64, num_warps=8))
    K.measured(K.compile_add(64))
    cap.end_case()
    return builder, loser[0]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.ttgir")}


def test_capture_names_index_and_sweep_losers(capture):
    builder, loser = run_cases(capture)
    summary = capture.dump()
    out = capture.out_dir

    files = files_under(out)
    hash_of = {r["file"]: r["hash"] for r in read_index(out)}
    spec_8192 = sorted(f for f in files if f.startswith("8192/"))
    assert files == {
        "1024x1024/add_kernel/BSM64.ttgir", "1024x1024/add_kernel/BSM128.ttgir",
        "2048/add_kernel/w4s3__fp16.ttgir", "2048/add_kernel/w4s3__fp32.ttgir",
        "4096/add_kernel/w4s3__EMdiv16.ttgir", "4096/add_kernel/w4s3__EMany.ttgir",
        *spec_8192,
        "16x16/add_kernel/w4s3.ttgir", "16x16/add_kernel/w8s3.ttgir",
        "16x16/trans_kernel/w4s3.ttgir"}
    # Rule 2c: same params, dtype and specialisation -> a prefix of the stable id.
    assert len(spec_8192) == 2
    assert all(f.startswith("8192/add_kernel/w4s3__") and len(Path(f).stem) == len("w4s3__") + 8
               for f in spec_8192)
    # The same variant keeps its IR under every shape it was measured in.
    assert hash_of["1024x1024/add_kernel/BSM64.ttgir"] == \
        hash_of["2048/add_kernel/w4s3__fp16.ttgir"]

    rows = read_index(out)
    header = (out / "index.tsv").read_text().splitlines()[0].split("\t")
    for column in ("shape", "kernel", "role", "file", "status", "launches", "setup_launches",
                   "sweep_launches",
                   "num_warps", "num_stages", "num_ctas", "constexprs", "specialization",
                   "signature", "convert_layout", "hash"):
        assert column in header
    by_file = {r["file"]: r for r in rows}
    bsm64 = by_file["1024x1024/add_kernel/BSM64.ttgir"]
    assert (bsm64["status"], bsm64["launches"], bsm64["sweep_launches"]) == ("dumped", "3", "0")
    assert bsm64["constexprs"] == "BLOCK_SIZE_M=64,HAS_BIAS=False"
    assert "EM:div16" in bsm64["specialization"]
    assert (bsm64["num_warps"], bsm64["num_stages"], bsm64["num_ctas"]) == ("4", "3", "1")
    assert bsm64["case_dtypes"] == "float16"
    assert by_file["4096/add_kernel/w4s3__EMany.ttgir"]["specialization"].count("EM:") == 0

    # The config benchmarked only in the sweep: listed, never dumped.
    [loser_row] = [r for r in rows if r["hash"] == loser.hash]
    assert (loser_row["role"], loser_row["status"]) == ("sweep loser", "not dumped")
    assert loser_row["file"] == "-"
    assert (loser_row["shape"], loser_row["launches"], loser_row["sweep_launches"]) == \
        ("1024x1024", "0", "5")
    assert not any(loser.hash == h for h in (hash_of.get(f) for f in files))
    # Launched only outside any case: listed as not measured, not dumped.
    [builder_row] = [r for r in rows if r["hash"] == builder.hash]
    assert (builder_row["role"], builder_row["shape"], builder_row["other_launches"]) == \
        ("not measured", "-", "1")

    trans_text = (out / "16x16/trans_kernel/w4s3.ttgir").read_text()
    assert convert_layout_count(trans_text) >= 1
    assert by_file["16x16/trans_kernel/w4s3.ttgir"]["convert_layout"] == \
        str(convert_layout_count(trans_text))
    measured = {r["hash"]: int(r["convert_layout"]) for r in rows if r["role"] == "measured"}
    times = {k: summary.pop(k) for k in ("kernel_compile_s", "sweep_compile_s", "compiles")}
    assert times["compiles"] >= 1 and times["sweep_compile_s"] > 0     # the loser's compile
    assert summary == {
        "stage": "ttgir", "stages": ["ttgir"],
        "variants": len({r["hash"] for r in rows}), "measured_variants": len(measured),
        "setup_variants": 0, "dumped": len(files), "setup_dumped": 0, "sweep_losers": 1,
        "convert_layout_total": sum(measured.values()), "setup_convert_layout_total": 0,
        "hooks_ok": True, "unattributed_launches": 0}
    assert summary["convert_layout_total"] >= 1

    naming = (out / "naming.md").read_text()
    assert "| measured | `1024x1024` | `add_kernel` | `BSM` | `BLOCK_SIZE_M` |" in naming
    assert "sweep loser" in naming and "| `1024x1024` | `(1024, 1024)` |" in naming


def test_compile_time_is_counted_in_and_outside_sweeps(capture):
    """Triton's listener hands each compile its times: the capture sums them, the sweep's
    apart, and the run's `ir` summary carries them; a cache hit adds nothing."""
    # variants no other test of this module compiles (its Triton cache is shared)
    sweep(K.ADD, lambda: K.launch(K.compile_add(512, num_stages=1)))   # inside _bench
    K.measured(K.compile_add(1024, num_stages=1))
    first = capture.compile_times()
    K.measured(K.compile_add(1024, num_stages=1))         # the same kernel: a cache hit
    again = capture.compile_times()
    summary = capture.dump()
    assert first["compiles"] == again["compiles"] == 2
    assert 0 < first["sweep_compile_s"] < first["kernel_compile_s"]
    assert again == first
    assert (summary["kernel_compile_s"], summary["sweep_compile_s"], summary["compiles"]) == \
        (first["kernel_compile_s"], first["sweep_compile_s"], 2)


def test_compile_seconds_reads_triton_times_and_nothing_else():
    times = SimpleNamespace(ir_initialization=1000, lowering_stages=[("ttir", 2000),
                                                                     ("ttgir", 500)],
                            store_results=1500)
    assert triton_hooks.compile_seconds(times) == 0.005
    assert triton_hooks.compile_seconds(None) is None
    assert triton_hooks.compile_seconds(SimpleNamespace(ir_initialization=1)) is None


class _TunedFn:
    """What an Autotuner wraps, reduced to what its run() touches: `run` launches the tuned
    kernel, `fn` leads to the Python function."""
    def __init__(self, kernel):
        self.kernel, self.fn = kernel, (lambda x: None)

    def run(self, *args, **kwargs):
        K.launch(self.kernel)


def test_the_reset_after_a_sweep_belongs_to_the_sweep(capture):
    """Triton's Autotuner.run, after benchmarking its configs, calls its pre-hook once more
    with reset_only=True (reset_to_zero arguments zeroed, by a library's fill kernel on a
    GPU). A run replaying one pinned config never does that: counted as measured, the reset
    kernel would be a measured kernel only the swept side has (a false IR_CHANGED)."""
    tuned, reset = K.compile_add(64), K.compile_fill()
    calls = []

    def pre_hook(nargs, reset_only=False):
        calls.append(reset_only)
        K.launch(reset)

    def do_bench(kernel_call, quantiles):
        kernel_call()
        return [1.0, 1.0, 1.0]
    tuner = Autotuner(_TunedFn(tuned), ["x"], [triton.Config({"B": 1}), triton.Config({"B": 2})],
                      key=[], reset_to_zero=None, restore_value=None, pre_hook=pre_hook,
                      do_bench=do_bench)
    capture.begin_case("64", "float16")
    for _ in range(3):                           # the first call sweeps, the others do not
        capture.timed(lambda: tuner.run(1))()
    capture.end_case()
    capture.dump()
    assert calls == [False, False, True]         # a pre-hook per config, then the reset
    rows = {r["hash"]: r for r in read_index(capture.out_dir)}
    assert (rows[tuned.hash]["role"], rows[tuned.hash]["launches"],
            rows[tuned.hash]["sweep_launches"]) == ("measured", "3", "2")
    assert (rows[reset.hash]["role"], rows[reset.hash]["launches"],
            rows[reset.hash]["sweep_launches"]) == ("sweep loser", "0", "3")


class _CachedTimingsTuner(Autotuner):
    """A library tuner (FlagGems' LibTuner can) that fills a sweep from timings it keeps
    elsewhere: no `_bench` call, then the reset after the sweep."""
    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        if "k" not in self.cache:                       # the key missed: a sweep
            self.cache["k"] = self.configs[0]           # ... decided from kept timings
            self.pre_hook(self.nargs, reset_only=True)
        return self.fn.run(*args, **kwargs)


def test_the_reset_counts_as_sweep_without_a_benchmark_too(capture, tmp_path):
    from harness.compile import autotune as at
    tuned, reset = K.compile_add(64, num_warps=2), K.compile_fill(64)
    tuner = _CachedTimingsTuner(_TunedFn(tuned), ["x"], [triton.Config({"B": 1})], key=[],
                                reset_to_zero=None, restore_value=None,
                                pre_hook=lambda nargs, reset_only=False: K.launch(reset))
    hook = at.AutotuneRecorder(tmp_path / "tuning", {"backend": "cpu", "provider": "builtin",
                                                     "op": "add"})
    hook.install()
    try:
        capture.begin_case("32", "float16")
        for _ in range(2):
            capture.timed(lambda: tuner.run(1))()
        capture.end_case()
    finally:
        hook.uninstall()
    capture.dump()
    rows = {r["hash"]: r for r in read_index(capture.out_dir)}
    assert (rows[tuned.hash]["role"], rows[tuned.hash]["launches"]) == ("measured", "2")
    assert (rows[reset.hash]["role"], rows[reset.hash]["sweep_launches"]) == ("sweep loser", "1")


def test_same_variants_same_names_in_another_run(tmp_path, triton_cache):
    """A second run that compiles the same variants in another order names them alike,
    and its IR fingerprint is equal."""
    trees = []
    for run, order in (("a", (64, 128, 32)), ("b", (32, 128, 64))):
        cap = IRCapture(tmp_path / run / "ttgir")
        cap.install()
        try:
            cap.begin_case("1024", "float16")
            for block in order:
                K.measured(K.compile_add(block))
            cap.end_case()
            cap.dump()
        finally:
            cap.uninstall()
        trees.append(tmp_path / run)
    assert files_under(trees[0] / "ttgir") == files_under(trees[1] / "ttgir") == {
        "1024/add_kernel/BSM32.ttgir", "1024/add_kernel/BSM64.ttgir",
        "1024/add_kernel/BSM128.ttgir"}
    assert fingerprint(trees[0]) == fingerprint(trees[1]) is not None


def test_dump_is_idempotent_and_rewrites_stale_names(capture):
    capture.begin_case("1024", "float16")
    K.measured(K.compile_add(64))
    capture.end_case()
    capture.dump()
    assert files_under(capture.out_dir) == {"1024/add_kernel/w4s3.ttgir"}
    first = fingerprint(capture.out_dir)
    assert capture.dump()["dumped"] == 1 and fingerprint(capture.out_dir) == first
    # A new variant in the group renames the old one; the stale file must not survive.
    capture.begin_case("1024", "float16")
    K.measured(K.compile_add(128))
    capture.end_case()
    capture.dump()
    assert files_under(capture.out_dir) == {"1024/add_kernel/BSM64.ttgir",
                                            "1024/add_kernel/BSM128.ttgir"}
    assert not [p for p in capture.out_dir.parent.iterdir() if p.name.startswith(".")]


def test_variant_description_from_a_real_compile(capture):
    """Declared constexprs vs Triton's own specialisations (an int of 1, divisibility)."""
    kernel = K.compile_add(64, n_is_1=True, num_warps=2, num_stages=4)
    v = capture.variants[kernel.hash]
    assert v.kernel == "add_kernel" and v.ttgir_path.endswith(".ttgir")
    assert v.constexprs == {"BLOCK_SIZE_M": 64, "HAS_BIAS": False}
    assert v.spec == {"x_ptr": "div16", "y_ptr": "div16", "out_ptr": "div16", "n": "eq1",
                      "EM": "div16"}
    assert v.signature == {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16",
                           "EM": "i32"}
    assert (v.num_warps, v.num_stages, v.num_ctas, v.dtype) == (2, 4, 1, "fp16")
    # The stable id is the same when the cache hash is not (another cache, same source).
    again = variants.describe(kernel.src, {**kernel.metadata._asdict(), "hash": "other"},
                                kernel.metadata_group)
    assert again.stable_id == v.stable_id and again.hash == "other"


def test_uninstall_restores_hooks_and_chains_previous_listener(tmp_path, triton_cache):
    knobs = triton.knobs
    seen = []
    original_bench = Autotuner._bench
    previous = lambda **kw: seen.append(kw["metadata"]["name"])   # noqa: E731
    knobs.compilation.listener = previous
    try:
        cap = IRCapture(tmp_path / "ttgir")
        cap.install()
        assert knobs.compilation.listener is not previous
        observer = triton_hooks.observer
        assert observer.on_launch in knobs.runtime.launch_enter_hook.calls
        assert observer.on_kernel_load in knobs.runtime.kernel_load_end_hook.calls
        assert Autotuner._bench is not original_bench
        K.compile_add(64)
        assert seen == ["add_kernel"] and len(cap.variants) == 1
        cap.uninstall()
        assert knobs.compilation.listener is previous
        assert observer.on_launch not in knobs.runtime.launch_enter_hook.calls
        assert observer.on_kernel_load not in knobs.runtime.kernel_load_end_hook.calls
        assert Autotuner._bench is original_bench
    finally:
        knobs.compilation.listener = None


def test_missing_hooks_warn_once_and_capture_nothing(tmp_path, monkeypatch, caplog):
    """The warning goes to the `zlh` logger (the CLI shows it on stderr; the API stays
    silent unless the application configures logging), once per process."""
    monkeypatch.setattr(triton_hooks, "_warned", set())
    monkeypatch.setattr(triton.knobs, "compilation", SimpleNamespace())
    monkeypatch.setattr(logging.getLogger("zlh"), "propagate", True)
    caplog.set_level(logging.WARNING, logger="zlh")
    assert IRCapture(tmp_path / "a").install() is False
    assert IRCapture(tmp_path / "b").install() is False
    warned = {id(r) for r in caplog.records         # one record may reach two capture handlers
              if r.name == "zlh" and "IR capture off" in r.getMessage()}
    assert len(warned) == 1
    summary = IRCapture(tmp_path / "c").dump()
    assert summary["hooks_ok"] is False and summary["dumped"] == 0
    assert fingerprint(tmp_path / "c") is None


CHILD = """
import sys
sys.path[:0] = [{root!r}, {tests!r}]
from pathlib import Path
import ir_kernels as K
from harness.compile.ir.capture import IRCapture
cap = IRCapture(Path({out!r}))
assert cap.install()
cap.begin_case("512", "float16")
K.measured(K.compile_add(64), 2)
raise RuntimeError("the op crashed mid-run")
"""


@pytest.mark.e2e
def test_dump_at_exit_after_a_crash(tmp_path, triton_cache):
    out = tmp_path / "run" / "ttgir"
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD.format(root=str(ROOT), tests=str(TESTS),
                                                   out=str(out))))
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "child_cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 1 and "the op crashed mid-run" in done.stderr
    assert files_under(out) == {"512/add_kernel/w4s3.ttgir"}
    [row] = read_index(out)
    assert (row["role"], row["status"], row["launches"]) == ("measured", "dumped", "2")
    assert fingerprint(out.parent) is not None
    assert list((tmp_path / "child_cache").rglob("add_kernel.ttgir"))   # it did compile


def test_ttgir_kept_once_its_case_ended(tmp_path, triton_cache):
    """The dump does not need the Triton cache of a case that already ended (a later op
    may have removed it, or the process is exiting after a crash)."""
    cache = tmp_path / "cache"
    cap = IRCapture(tmp_path / "run" / "ttgir")
    cap.install()
    try:
        with K.private_cache(cache):
            cap.begin_case("64", "float32")
            K.measured(K.compile_add(32, dtype="fp32", has_bias=True))
            cap.end_case()
        shutil.rmtree(cache)
        assert cap.dump()["dumped"] == 1
    finally:
        cap.uninstall()
    [row] = read_index(cap.out_dir)
    assert row["status"] == "dumped" and "HAS_BIAS=True" in row["constexprs"]
    assert "tt.func public @add_kernel" in (cap.out_dir / row["file"]).read_text()


# --------------------------------------------------------------------------- tuned on
def test_a_case_that_ran_another_cases_sweep_choice_is_marked(capture):
    """bmm's key leaves out the batch: 1x512 sweeps and measures BLOCK 64; 16x512 launches
    the same config without a sweep; 1x1024 sweeps its own; a fp32 case of the same config
    is another variant."""
    capture.begin_case("1x512", "bfloat16")
    sweep(K.ADD, lambda: K.launch(K.compile_add(128), 2))
    K.measured(K.compile_add(64), 3)
    assert capture.end_case() == []

    capture.begin_case("16x512", "bfloat16")
    K.measured(K.compile_add(64, em_div16=False), 3)    # another specialisation, one config
    [line] = capture.end_case()
    name, fields = parse_marker(line)
    assert name == markers.KEY_SHARED and fields["kernel"] == "add_kernel"
    assert "sweep of bfloat16 1x512 chose (BLOCK_SIZE_M=64, HAS_BIAS=False" in fields["detail"]

    capture.begin_case("1x1024", "bfloat16")            # its own sweep: its own choice
    sweep(K.ADD, lambda: K.launch(K.compile_add(128), 2))
    K.measured(K.compile_add(64), 3)
    assert capture.end_case() == []

    capture.begin_case("1x512", "bfloat16")             # the same case again (occurrence 1)
    K.measured(K.compile_add(64), 3)
    assert capture.end_case() == []

    capture.begin_case("8x512", "bfloat16")             # another config, or only set-up
    K.measured(K.compile_add(128), 3)
    K.launch(K.compile_add(64))
    assert capture.end_case() == []


def test_tune_origins_take_the_first_sweep_and_one_marker_per_kernel():
    def variant(kernel="k", dtype="fp16", block=64, warps=4, maxnreg=None):
        return SimpleNamespace(kernel=kernel, dtype=dtype, constexprs={"BLOCK": block},
                               num_warps=warps, num_stages=3, num_ctas=1, maxnreg=maxnreg)
    origins = TuneOrigins()
    assert origins.case_ended("fp16 a", {"k"}, [variant()]) == []
    assert origins.case_ended("fp16 b", {"k"}, [variant()]) == []     # swept: its own
    lines = origins.case_ended("fp16 c", set(), [variant(), variant(warps=4)])
    assert len(lines) == 1 and "sweep of fp16 a chose" in lines[0]
    assert origins.case_ended("fp32 d", set(), [variant(dtype="fp32")]) == []
    assert origins.case_ended("fp16 e", set(), [variant(warps=8)]) == []
    assert origins.case_ended("fp16 f", set(), [variant(maxnreg=128)]) == []   # another config
