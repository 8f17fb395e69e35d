"""Corpus assets against tests/fixtures/fake_flaggems: derived shape sets and their check,
lookup by op and by class, shape injection into classes that hard-code shapes, the inventory
CSV, and the per-backend skip-guard table."""
import csv
import io
import json
import sys

import pytest
import yaml
from click.testing import CliRunner

import backends
from adapters.flaggems.shapesets import pick, size
from backends.skip_guards import MUSA_SKIP_GUARDS, SkipGuard, stale_guard
from conftest import budget_args, FAKE_FLAGGEMS, FIXTURES, ROOT
from harness.cli import main
from harness.cli.shapes import UNMATCHED_HEADER
from harness.run.shapes import load_shape_file
from harness.store.reader import find_runs, read_rows
from harness.store.results import SKIPPED, SUCCESS

FAKE = FAKE_FLAGGEMS
VLLM = FIXTURES / "fake_flaggems_vllm"
FAST = [*budget_args(max_time_ms=10), "--backend", "cpu", "--adapter", "flaggems", "-q"]


pytestmark = pytest.mark.usefixtures("fresh_flaggems_modules")


def zlh(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bench(tmp_path, shapes, *ops):
    out = tmp_path / "runs"
    result = zlh("bench", *ops, "--flaggems-dir", FAKE, "--out", out,
                 *(["--shapes", shapes] if shapes else []), *FAST)
    runs = {json.loads((r / "run.json").read_text())["op"].split(":")[0]: read_rows(
        r / "results.jsonl") for r in sorted(out.iterdir()) if (r / "run.json").exists()}
    return result, runs


def write(path, text):
    path.write_text(text)
    return path


# ---- shape sets: the rule, derive, check ------------------------------------------------------
def test_pick_takes_the_upper_median_and_the_quartiles_by_size():
    shapes = [[1024], [2, 2], [16, 16, 16], [64], [8, 8], [[3, 4], 0, True]]
    assert [size(s) for s in shapes] == [1024, 4, 4096, 64, 64, 12]
    # sorted by size, ties in upstream order: [2,2] [[3,4],0,True] [64] [8,8] [1024] [16,16,16]
    assert pick(shapes, "single") == [[8, 8]]
    assert pick(shapes, "multi") == [[[3, 4], 0, True], [8, 8], [1024]]   # positions 1, 3, 4
    assert pick([[5], [7]], "multi") == [[5], [7]] and pick([[5]], "single") == [[5]]


def test_derive_writes_reachable_keys_and_hardcoded_classes(tmp_path):
    out = tmp_path / "shapes" / "single.yaml"
    result = zlh("shapes", "derive", "--flaggems-dir", FAKE, "--out", out)
    assert result.exit_code == 0, result.output
    assert "dropped (nothing reaches them): shared_shapes, renamed_op" in result.output
    text = out.read_text()
    assert "upper median (position n // 2)" in text.splitlines()[0]
    doc = load_shape_file(str(out)).doc           # a valid zlh shape file
    assert list(doc) == ["Benchmark", "BlasBenchmark", "softmax", "bitwise_xor_host",
                         "FixedBenchmark", "LinalgLuFactorBenchmark", "PoolBenchmark"]
    assert doc["softmax"]["shapes"] == [[8, 32]]          # equal sizes: the later one
    assert doc["FixedBenchmark"] == {"shapes": [[4, 16]], "shape_desc": "rows, cols"}
    assert doc["PoolBenchmark"]["shapes"] == [[2, 3, 16, 16]]
    assert doc["LinalgLuFactorBenchmark"]["shapes"] == [[6, 6]]   # via its input builder
    assert "InlineBenchmark" not in doc                  # no way to give it shapes
    multi = tmp_path / "multi.yaml"
    assert zlh("shapes", "derive", "--flaggems-dir", FAKE, "--out", multi).exit_code == 0
    assert yaml.safe_load(multi.read_text())["FixedBenchmark"]["shapes"] == [[2, 8], [4, 16],
                                                                               [8, 32]]


def test_check_lists_keys_that_match_nothing(tmp_path):
    good = write(tmp_path / "good.yaml", "softmax: [[4, 4]]\nBlasBenchmark: [[1, 2, 3, 4]]\n"
                                         "abs_x7: [[3]]\nPoolBenchmark: [[1, 1, 2, 2]]\n")
    stale = tmp_path / "good.unmatched.yaml"
    stale.write_text(f"{UNMATCHED_HEADER} good.yaml\nold: [[1]]\n")    # an earlier check's
    result = zlh("shapes", "check", good, "--flaggems-dir", FAKE)
    assert result.exit_code == 0, result.output
    assert "all 4 keys match" in result.output and not stale.exists()
    bad = write(tmp_path / "bad.yaml", "softmax: [[4, 4]]\nrenamed_op:\n  shapes: [[2, 2]]\n"
                                       "NoSuchBenchmark: [[1]]\n")
    result = zlh("shapes", "check", bad, "--flaggems-dir", FAKE)
    assert result.exit_code == 1
    assert "2 of 3 keys match nothing: renamed_op, NoSuchBenchmark" in result.output
    unmatched = yaml.safe_load((tmp_path / "bad.unmatched.yaml").read_text())
    assert unmatched == {"renamed_op": {"shapes": [[2, 2]]}, "NoSuchBenchmark": [[1]]}


def test_derive_needs_a_library_with_shapes(tmp_path):
    result = zlh("shapes", "derive", "--adapter", "builtin", "--out", tmp_path / "x.yaml")
    assert result.exit_code == 2 and "no shapes of its own" in result.output
    result = zlh("shapes", "check", tmp_path / "missing.yaml", "--flaggems-dir", FAKE)
    assert result.exit_code == 2 and "shape file not found" in result.output


# ---- lookup and injection ---------------------------------------------------------------------
def test_a_derived_set_is_found_by_op_name_and_by_class(tmp_path):
    single = tmp_path / "single.yaml"
    assert zlh("shapes", "derive", "--flaggems-dir", FAKE, "--out", single).exit_code == 0
    result, runs = bench(tmp_path, single, "softmax", "mm", "perf_sort:sort")
    assert result.exit_code == 0, result.output
    assert {r.shape_detail for r in runs["softmax"]} == {"8x32"}          # op-name key
    assert {r.shape_detail for r in runs["mm"]} == {"8x24, 24x16"}        # BlasBenchmark key
    assert {r.shape_detail for r in runs["perf_sort"]} == {"16x32"}       # Benchmark key


def test_hardcoded_classes_get_the_files_shapes(tmp_path):
    shapes = write(tmp_path / "s.yaml", "PoolBenchmark:\n  shapes: [[1, 1, 4, 4]]\n"
                                        "fixed: [[3, 5]]\nLinalgLuFactorBenchmark: [[5, 5]]\n")
    result, runs = bench(tmp_path, shapes, "pool", "fixed", "linalg_lu_factor")
    assert result.exit_code == 0, result.output
    assert [r.shape_detail for r in runs["pool"]] == ["1x1x4x4"]       # through its input_fn
    assert [r.shape_detail for r in runs["fixed"]] == ["3x5"]          # its set_shapes replaced
    assert [r.shape_detail for r in runs["linalg_lu_factor"]] == ["5x5, pivot=True"]  # builder
    assert runs["pool"][0].extra["shapes"] == "file:PoolBenchmark"
    assert runs["fixed"][0].extra["shapes"] == "file:fixed"
    assert ("SHAPES_INJECTED op=pool:hardcoded benchmark=pool cls=PoolBenchmark "
            "key=PoolBenchmark hardcoded=PoolBenchmark.get_input_iter shapes=1") in result.output


def test_injection_backs_off_with_a_marker_never_a_mix(tmp_path):
    shapes = write(tmp_path / "s.yaml", "PoolBenchmark: [[4, 4], [1, 1, 4, 4]]\n"
                                        "Benchmark: [[3, 3]]\ninline: [[2, 2]]\n")
    result, runs = bench(tmp_path, shapes, "pool", "fixed", "inline")
    assert result.exit_code == 0, result.output
    # one misfit shape: all of the class's own shapes, none of the file's
    assert [r.shape_detail for r in runs["pool"]] == ["1x2x8x8", "2x3x16x16"]
    assert runs["pool"][0].extra["shapes"] == "class:PoolBenchmark.get_input_iter (arity)"
    assert "SHAPES_NOT_INJECTED op=pool:hardcoded benchmark=pool cls=PoolBenchmark " \
           "key=PoolBenchmark hardcoded=PoolBenchmark.get_input_iter reason=arity " \
           "detail=file shape [4, 4] does not fit" in result.output
    # a generic base's entry is what the class chose to replace: no entry for it
    assert [r.shape_detail for r in runs["fixed"]] == ["2x8", "4x16", "8x32"]
    assert "cls=FixedBenchmark key=- hardcoded=FixedBenchmark.set_shapes reason=no_entry" \
        in result.output
    assert [r.shape_detail for r in runs["inline"]] == ["3x5"]
    assert "cls=InlineBenchmark key=inline hardcoded=InlineBenchmark.get_input_iter " \
           "reason=no_builder" in result.output
    (pool_dir,) = (tmp_path / "runs").glob("pool_*")
    assert "SHAPES_NOT_INJECTED" in (pool_dir / "run.log").read_text()
    archived = yaml.safe_load((pool_dir / "shapes.yaml").read_text())   # what really ran
    assert archived["pool"]["shapes"] == [[1, 2, 8, 8], [2, 3, 16, 16]]


def test_without_a_shape_file_nothing_is_injected_or_said(tmp_path):
    result, runs = bench(tmp_path, None, "pool")
    assert result.exit_code == 0, result.output
    assert [r.shape_detail for r in runs["pool"]] == ["1x2x8x8", "2x3x16x16"]
    assert "SHAPES_" not in result.output and "shapes" not in runs["pool"][0].extra


def test_bare_list_entries_reach_upstreams_own_lookup(tmp_path):
    shapes = write(tmp_path / "s.yaml", "softmax: [[2, 8]]\n")   # upstream wants a mapping
    result, runs = bench(tmp_path, shapes, "softmax")
    assert result.exit_code == 0, result.output
    assert {r.shape_detail for r in runs["softmax"]} == {"2x8"}


# ---- inventory -----------------------------------------------------------------------------------
def read_csv(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_inventory_csv_columns_without_import():
    result = zlh("ops", "--flaggems-dir", FAKE, "--csv")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0].split(",")
    assert header[:6] == ["repo", "op", "op_file", "function", "marked_skip", "op_names"]
    rows = {r["function"]: r for r in read_csv(result.stdout)}
    assert rows["test_perf_sort"]["op"] == "perf_sort" and rows["test_perf_sort"]["op_file"] == "sort"
    assert rows["test_perf_sort"]["op_names"] == "sort"
    assert rows["test_scaled_abs"]["op_names"] == "abs_x*"              # f-string pattern
    assert rows["test_softmax_backward"]["op_names"] == "softmax_backward"   # is_backward=True
    assert rows["test_local_subclass_and_two_benchmarks"]["op_names"] == "neg exp"
    assert rows["test_always_skipped"]["marked_skip"] == "never runs anywhere"
    assert rows["test_softmax"]["marked_skip"] == ""
    assert "collect" not in header and "flag_gems" not in sys.modules


def test_inventory_csv_keeps_what_the_listing_keeps():
    """PATTERNS and --all-builtin select the CSV's rows as they select the listing's."""
    listed = zlh("ops", "softmax", "--flaggems-dir", FAKE, "--json")
    kept = zlh("ops", "softmax", "--flaggems-dir", FAKE, "--csv")
    assert kept.exit_code == 0, kept.output
    assert sorted(r["function"] for r in read_csv(kept.stdout)) == sorted(
        json.loads(line)["function"] for line in listed.stdout.splitlines())
    assert zlh("ops", "zzz", "--csv").exit_code == 2
    plain = {r["op"] for r in read_csv(zlh("ops", "--adapter", "builtin", "--csv").stdout)}
    every = {r["op"] for r in read_csv(zlh("ops", "--adapter", "builtin", "--csv",
                                           "--all-builtin").stdout)}
    assert plain < every and not any(op.startswith("fault_") for op in plain)


def test_verify_collect_builds_each_benchmark_without_timing():
    result = zlh("ops", "--flaggems-dir", FAKE, "--csv", "--verify-collect")
    assert result.exit_code == 0, result.output
    rows = {r["function"]: r for r in read_csv(result.stdout)}
    assert (rows["test_softmax"]["collect"], rows["test_softmax"]["collect_detail"]) == \
        ("ok", "softmax")
    assert rows["test_scaled_abs"]["collect_detail"] == "abs_x1 abs_x2"   # the skipped param left out
    assert rows["test_skip_in_body"]["collect"] == "skipped"
    assert rows["test_import_error"]["collect"] == "import_error"
    assert "zlh_fixture_missing_module" in rows["test_import_error"]["collect_detail"]
    assert (rows["test_build_error"]["collect"], rows["test_build_error"]["collect_detail"]) == \
        ("error", "ValueError: cannot build the benchmark")
    assert rows["test_dup"]["collect"] == "no_benchmark"
    assert rows["test_own_run"]["collect"] == "unsupported"
    assert rows["test_own_run"]["collect_detail"].startswith("OwnRun overrides run()")
    assert (rows["test_mixin_run"]["collect"], rows["test_mixin_run"]["collect_detail"][:30]) \
        == ("unsupported", "RunMixin overrides run(): its ")
    import benchmark.test_misc as misc
    assert misc.SEEN_ENV == []                  # env_op's torch_op was never called


def test_vllm_rows_and_one_checkout_verified_per_process():
    result = zlh("ops", "--flaggems-dir", FAKE, "--vllm", VLLM, "--csv", "--verify-collect")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in read_csv(result.stdout)}
    vllm = rows["vllm:rms_norm_vllm"]
    assert (vllm["repo"], vllm["op_names"], vllm["collect"]) == ("vllm", "rms_norm_vllm",
                                                                 "not_verified")
    assert rows["softmax"]["collect"] == "ok"


def test_vllm_ops_run_under_their_own_library(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGGEMS_VLLM_DIR", str(VLLM))
    monkeypatch.delenv("FLAGGEMS_DIR", raising=False)
    result = zlh("bench", "vllm:rms_norm_vllm", "--out", tmp_path / "runs", *FAST)
    assert result.exit_code == 0, result.output
    (run_dir,) = find_runs(tmp_path / "runs", "vllm:rms_norm_vllm")
    rows = read_rows(run_dir / "results.jsonl")
    assert [r.shape_detail for r in rows] == ["4x32", "8x64"]
    assert all(r.status == SUCCESS for r in rows)
    import flaggems_vllm
    assert flaggems_vllm.ACTIVE["entered"] > 0           # its use_gems, not flag_gems'
    assert "flag_gems" not in sys.modules
    info = json.loads((run_dir / "run.json").read_text())
    assert info["adapter"]["repo"] == "vllm" and info["adapter"]["version"] == "0.0-vllm-fixture"


# ---- skip guards per backend -------------------------------------------------------------------
def test_musa_table_names_the_verified_guards_exactly():
    table = backends.get_backend("musa").skip_guards
    assert table == MUSA_SKIP_GUARDS
    assert stale_guard(table, "benchmark/test_fft.py", "test_perf_fft", "CUDA is not available")
    assert stale_guard(table, "tests/test_top_k_per_row_decode.py", "test_accuracy_top_k",
                       "CUDA device required")
    assert not stale_guard(table, "benchmark/test_fft.py", "test_other", "CUDA is not available")
    assert not stale_guard(table, "benchmark/test_fft.py", "test_perf_fft", "CUDA is not available.")
    assert not stale_guard(table, "tests/test_grid_sample.py", "test_nearest_zeros_4d_small",
                           "CUDA is required.")             # kept: must stay
    assert not stale_guard(table, "tests/test_cutlass_scaled_mm.py", "test_cutlass_scaled_mm",
                           "Feature requires vLLM and NVIDIA Hopper architecture")
    assert all(not b.skip_guards for b in backends.all_backends() if b.name != "musa")


def test_a_stale_guard_runs_only_that_function_on_that_backend(tmp_path, monkeypatch):
    file = "benchmark/test_guards.py"
    cpu, musa = backends.get_backend("cpu"), backends.get_backend("musa")
    monkeypatch.setattr(musa, "skip_guards", (
        SkipGuard(file, "test_other_guarded", "CUDA is not available", stale=True),))
    monkeypatch.setattr(cpu, "skip_guards", (
        SkipGuard(file, "test_perf_guarded", "CUDA is not available", stale=True),
        SkipGuard(file, "test_other_guarded", "CUDA is not available.", stale=True),
        SkipGuard(file, "test_other_guarded", "CUDA is not available", stale=False)))
    result, runs = bench(tmp_path, None, "perf_guarded", "other_guarded")
    assert result.exit_code == 0, result.output
    (ran,) = runs["perf_guarded"]
    assert ran.status == SUCCESS
    assert ("SKIP_GUARD_IGNORED op=perf_guarded:guards backend=cpu "
            "node=benchmark/test_guards.py::test_perf_guarded detail=stale on this backend: "
            "CUDA is not available") in result.output
    # a reason one character off, a kept entry, another backend's stale entry: still skipped
    (other,) = runs["other_guarded"]
    assert other.status == SKIPPED and other.reason == "CUDA is not available"
    assert "node=benchmark/test_guards.py::test_other_guarded" not in result.output


def test_ops_lists_each_backends_guards():
    result = zlh("ops", "--flaggems-dir", FAKE)
    assert result.exit_code == 0, result.output
    lines = [ln.split() for ln in result.output.splitlines()]
    assert ["musa", "ignored", "benchmark/test_fft.py::test_perf_fft", "CUDA", "is", "not",
            "available", "no"] in lines
    assert any(ln[:3] == ["musa", "kept", "tests/test_grid_sample.py::test_nearest_zeros_4d_small"]
               for ln in lines)


# ---- model shapes ---------------------------------------------------------------------------------
DEEPSEEK = ROOT / "shapes" / "models" / "deepseek_v3.config.yaml"


def test_model_config_gives_each_projection_and_the_moe(tmp_path):
    from adapters.flaggems.model_shapes import from_config
    config = yaml.safe_load(DEEPSEEK.read_text())
    doc = from_config(config, [64], tp=1)
    mm = doc["mm"]["shapes"]
    assert [1, 64, 1536, 7168] in mm                 # q_a: hidden -> q_lora_rank
    assert [1, 64, 128 * 192, 1536] in mm            # q_b: heads * (nope + rope)
    assert [1, 64, 512 + 64, 7168] in mm             # kv_a with the rope part
    assert [1, 64, 128 * 256, 512] in mm             # kv_b: heads * (nope + v)
    assert [1, 64, 7168, 128 * 128] in mm            # o_proj
    assert [1, 64, 2 * 18432, 7168] in mm and [1, 64, 7168, 18432] in mm   # dense MLP
    assert [1, 64, 129280, 7168] in mm               # LM head
    assert doc["FusedMarlinMoEW4A16MXFP4Benchmark"]["shapes"] == [[64, 256, 7168, 2048, 8]]
    assert doc["router_gemm"]["shapes"] == [[64, 256, 7168]]
    assert doc["moe_sum"]["shapes"] == [[64, 8, 7168]]
    sharded = from_config(config, [64], tp=8, lm_head=False)["mm"]["shapes"]
    assert [1, 64, 16 * 192, 1536] in sharded and [1, 64, 7168, 16 * 128] in sharded
    assert not any(s[2] == 129280 or s[2] == 129280 // 8 for s in sharded)
    llama = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
             "num_key_value_heads": 8, "vocab_size": 128256}
    plain = from_config(llama, [16], lm_head=False)
    assert plain["mm"]["shapes"] == [[1, 16, 6144, 4096], [1, 16, 4096, 4096],
                                     [1, 16, 28672, 4096], [1, 16, 4096, 14336]]
    assert set(plain) == {"mm"}


def test_named_model_sets_ship_as_the_command_writes_them(tmp_path):
    for name, args in (("deepseek_v3_decode", ["--tokens", "1,16,64,256"]),
                       ("deepseek_v3_prefill", ["--tokens", "1024,4096", "--no-lm-head"])):
        shipped = ROOT / "shapes" / "models" / f"{name}.yaml"
        out = tmp_path / f"{name}.yaml"
        result = zlh("shapes", "model", DEEPSEEK, *args, "--out", out)
        assert result.exit_code == 0, result.output
        body = [ln for ln in out.read_text().splitlines() if not ln.startswith("# Generated")]
        assert body[1:] == [ln for ln in shipped.read_text().splitlines()
                            if not ln.startswith("# Generated")][1:]
        load_shape_file(str(shipped))


def test_recipes_name_shape_sets_that_ship():
    from harness.ab.recipe import load_recipe
    for recipe in sorted((ROOT / "recipes").glob("*.yaml")):
        args = [str(a) for a in load_recipe(str(recipe)).get("bench_args", [])]
        for i, arg in enumerate(args):
            if arg == "--shapes":
                doc = load_shape_file(str(ROOT / args[i + 1])).doc
                assert doc, recipe
    spec = load_recipe(str(ROOT / "recipes" / "flaggems_mxfp4_foldscale.yaml"))
    decode = load_shape_file(str(ROOT / "shapes/models/deepseek_v3_decode.yaml")).doc
    assert spec["ops"] == ["fused_marlin_moe_w4a16_mxfp4"]
    assert decode["FusedMarlinMoEW4A16MXFP4Benchmark"]["shapes"][0] == [1, 256, 7168, 2048, 8]


def test_shape_recorder_takes_gemms_from_a_model_on_meta():
    import torch
    from adapters.flaggems.model_shapes import ShapeRecorder
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 8, bias=False)).to("meta")
    with ShapeRecorder() as recorder:
        model(torch.empty(2, 3, 16, device="meta"))
        torch.bmm(torch.empty(2, 3, 5, device="meta"), torch.empty(2, 5, 7, device="meta"))
    doc = recorder.document()
    assert doc["addmm"]["shapes"] == [[1, 6, 32, 16]]
    assert doc["mm"]["shapes"] == [[1, 6, 8, 32]]
    assert doc["bmm"]["shapes"] == [[2, 3, 7, 5]]


def test_model_command_refuses_bad_input(tmp_path):
    result = zlh("shapes", "model", tmp_path / "none.json", "--tokens", "1", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "cannot be read" in result.output
    bad = write(tmp_path / "bad.yaml", "hidden_size: 64\n")
    result = zlh("shapes", "model", bad, "--tokens", "1", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "num_attention_heads" in result.output
    result = zlh("shapes", "model", DEEPSEEK, "--tokens", "1", "--tp", "3", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "not divisible by --tp 3" in result.output
    assert "Traceback" not in result.output
