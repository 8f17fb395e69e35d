"""Autotune record / replay: real Triton autotuning (interpreted on the CPU), and a small
stand-in for FlagGems' LibTuner / LibEntry that keeps the behaviour the hooks depend on."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import KernelInterface
from triton.runtime.autotuner import Autotuner

from adapters.flaggems import tuners
from harness.compile import autotune as at
from harness.compile.autotune import hooks as at_hooks
from harness.compile.autotune.records import _key_token
from harness.compile.caches import apply_env, compile_cache
from harness.common.errors import UsageError
from harness.common.markers import parse_marker
from harness.version import __version__ as harness_version
from conftest import ROOT

META = {"backend": "cpu", "provider": "builtin", "op": "double"}
F32 = "torch.float32"

# The grid sees each launch's meta-parameters, so LAUNCHED tells which config ran.
# Live tuning picks the block with the lowest BENCH_MS; BENCH_CALLS counts measurements.
LAUNCHED: list[int] = []
BENCH_MS: dict[int, float] = {}
BENCH_CALLS = [0]
PRE_HOOK_CALLS: list[int] = []


def scripted_bench(fn, quantiles=None, **_):
    fn()
    BENCH_CALLS[0] += 1
    ms = BENCH_MS[LAUNCHED[-1]]
    return [ms] * len(quantiles) if quantiles else ms


def mark_block16(nargs):
    PRE_HOOK_CALLS.append(nargs["BLOCK"])


def make_configs():
    return [triton.Config({"BLOCK": 16}, num_warps=1, num_stages=1, pre_hook=mark_block16),
            triton.Config({"BLOCK": 32}, num_warps=1, num_stages=1),
            triton.Config({"BLOCK": 64}, num_warps=2, num_stages=1)]


@triton.jit
def double_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.jit
def gems_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


double_kernel = triton.autotune(configs=make_configs(), key=["n"],
                                do_bench=scripted_bench)(double_body)


def launch(kernel, n: int) -> int:
    """Run a doubling kernel over n elements, check the result; the BLOCK that ran."""
    x = torch.arange(n, dtype=torch.float32)
    out = torch.empty_like(x)

    def grid(meta):
        LAUNCHED.append(meta["BLOCK"])
        return (triton.cdiv(n, meta["BLOCK"]),)

    kernel[grid](x, out, n)
    assert torch.equal(out, 2 * x)
    return LAUNCHED[-1]


# --- a miniature of flag_gems/utils/libentry.py ---------------------------------------

TABLE: dict = {}     # the tuner DB: survives "processes", shared by every tuner


class FakeConfigCache:
    """Like ConfigCache: a persistent table, first writer wins, no deletion, and a read
    builds a new Config without its pre_hook (a SQL round trip)."""

    def __init__(self, table):
        self.table = table

    def __contains__(self, key):
        return key in self.table

    def __getitem__(self, key):
        row = self.table[key]
        return triton.Config(dict(row["kwargs"]), num_warps=row["num_warps"],
                             num_stages=row["num_stages"])

    def __setitem__(self, key, config):
        self.table.setdefault(key, {"kwargs": dict(config.kwargs),
                                    "num_warps": config.num_warps,
                                    "num_stages": config.num_stages})


def align32(value):
    return (value + 31) // 32 * 32


class FakeLibTuner(Autotuner):
    """LibTuner.run condensed: its own run() without super(); the choice lives in
    self.cache under self.get_key(args); best_config is set; a pre_hook is re-attached by
    matching kwargs against the tuner's own configs."""

    def __init__(self, fn, configs, key, table):
        super().__init__(fn, fn.arg_names, configs, key, None, None, do_bench=scripted_bench)
        self.strategy = [align32] * len(key)
        self.cache = FakeConfigCache(table)

    def get_key(self, args):
        key = tuple(strategy(args[name]) for strategy, name in zip(self.strategy, self.keys))
        return key + tuple(str(v.dtype) for v in args.values() if hasattr(v, "dtype"))

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            all_args = {**self.nargs, **kwargs}
            config_key = self.get_key({k: v for k, v in all_args.items() if k in self.arg_names})
            if config_key not in self.cache:
                timings = {c: self._bench(*args, config=c, **kwargs)
                           for c in self.prune_configs(kwargs)}
                self.cache[config_key] = min(timings, key=timings.get)
            config = self.cache[config_key]
            if config.pre_hook is None:
                for original in self.configs:
                    if original.all_kwargs() == config.all_kwargs():
                        config = original
                        break
        else:
            config = self.configs[0]
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


class FakeLibEntry(KernelInterface):
    """LibEntry.run condensed: the first call per argument signature goes through the tuner
    and keeps its config; later calls launch with it directly, never asking the tuner."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = fn.arg_names
        self.kernel_cache = (dict(),)
        self._cpu_cache = {}

    def run(self, *args, grid, warmup=False, **kwargs):
        entry_key = tuple((a.dtype, a.data_ptr() % 16 == 0) if hasattr(a, "data_ptr")
                          else (type(a), a) for a in args)
        cache = self.kernel_cache[0]
        if entry_key not in cache:
            ret = self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
            cache[entry_key] = (self.fn.best_config.all_kwargs(), self.fn.best_config.pre_hook)
            return ret
        meta, pre_hook = cache[entry_key]
        if pre_hook is not None:
            pre_hook({**dict(zip(self.arg_names, args)), **kwargs, **meta})
        return self.fn.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **meta)


def clear_libentry_dispatch_cache(entry):
    for cache in entry.kernel_cache:
        cache.clear()
    entry._cpu_cache.clear()


fake_libentry = types.ModuleType("fake_libentry")
fake_libentry.LibTuner = FakeLibTuner
fake_libentry.LibEntry = FakeLibEntry
fake_libentry.clear_libentry_dispatch_cache = clear_libentry_dispatch_cache

gems_tuner = FakeLibTuner(gems_body, make_configs(), ["n"], TABLE)
gems_kernel = FakeLibEntry(gems_tuner)


# --- helpers ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fresh():
    originals = (Autotuner.__dict__["run"], FakeLibTuner.__dict__["run"])
    double_kernel.cache.clear()
    TABLE.clear()
    clear_libentry_dispatch_cache(gems_kernel)
    LAUNCHED.clear()
    PRE_HOOK_CALLS.clear()
    BENCH_CALLS[0] = 0
    prefer(32)
    yield
    if at_hooks._active_hook is not None:
        at_hooks._active_hook.uninstall()
    assert (Autotuner.__dict__["run"], FakeLibTuner.__dict__["run"]) == originals


def prefer(block: int):
    BENCH_MS.clear()
    BENCH_MS.update({16: 3.0, 32: 3.0, 64: 3.0, block: 1.0})


def record(run_dir: Path, kernel, ns, libentry=None) -> at.AutotuneRecorder:
    recorder = at.AutotuneRecorder(run_dir, META).install(
        tuners.libentry_support(libentry) if libentry is not None else None)
    try:
        for n in ns:
            launch(kernel, n)
    finally:
        recorder.uninstall()
    return recorder


def replayer(run_dir: Path, libentry=None) -> at.AutotuneReplayer:
    return at.AutotuneReplayer(run_dir, "cpu").install(
        tuners.libentry_support(libentry) if libentry is not None else None)


def records_of(run_dir: Path, tuner) -> dict:
    data = json.loads((run_dir / "autotune" / "records.json").read_text())
    return data["kernels"][at.kernel_name(tuner)]


def set_record(run_dir: Path, tuner, key: tuple, entry: dict) -> None:
    path = run_dir / "autotune" / "records.json"
    data = json.loads(path.read_text())
    data["kernels"].setdefault(at.kernel_name(tuner), {})[at.key_str(key)] = entry
    path.write_text(json.dumps(data))


def case_markers(hook, kernel, n) -> list[dict]:
    hook.begin_case()
    launch(kernel, n)
    return [parse_marker(line)[1] for line in hook.take_markers()]


BROKEN = {"kwargs": {"BLOCK": 24}, "num_warps": 1, "num_stages": 1, "num_ctas": 1,
          "pre_hook": False}    # arange over 24 elements: not a power of 2, never builds


# --- serialisation ---------------------------------------------------------------------


def test_keys_and_configs_serialise_deterministically():
    assert at.key_str((64, np.int64(8), True, 2.5, F32, torch.float16)) == \
        "(64, 8, True, 2.5, 'torch.float32', 'torch.float16')"
    assert _key_token((64, 8, F32)) == "64/8/torch.float32"

    configs = make_configs()
    entry = at.config_to_dict(configs[0])
    assert entry == {"kwargs": {"BLOCK": 16}, "num_warps": 1, "num_stages": 1, "num_ctas": 1,
                     "pre_hook": True}
    assert at.config_from_dict(json.loads(json.dumps(entry)), configs) is configs[0]
    with pytest.raises(ValueError, match="pre_hook"):
        at.config_from_dict(entry, configs[1:])

    wide = {"kwargs": {"BLOCK": 128}, "num_warps": 4, "num_stages": 2, "num_ctas": 1,
            "maxnreg": 128, "pre_hook": False}
    rebuilt = at.config_from_dict(wide, configs)
    assert (rebuilt.kwargs, rebuilt.num_warps, rebuilt.maxnreg) == ({"BLOCK": 128}, 4, 128)
    assert at.config_to_dict(rebuilt) == wide


def test_kernel_name_walks_the_wrapper_chain():
    name = at.kernel_name(double_kernel)
    assert name.endswith(".double_body")
    with_heuristics = triton.autotune(configs=make_configs(), key=["n"])(
        triton.heuristics(values={"EXTRA": lambda args: 1})(double_body))
    assert at.kernel_name(with_heuristics) == name
    assert at.kernel_name(gems_tuner).endswith(".gems_body")


# --- Triton's Autotuner ----------------------------------------------------------------


def test_record_then_replay_forces_the_recorded_configs(tmp_path):
    recorder = record(tmp_path / "A", double_kernel, [100, 300])
    recorded = records_of(tmp_path / "A", double_kernel)
    assert {key: entry["kwargs"] for key, entry in recorded.items()} == {
        at.key_str((100, F32, F32)): {"BLOCK": 32}, at.key_str((300, F32, F32)): {"BLOCK": 32}}
    meta = json.loads((tmp_path / "A" / "autotune" / "meta.json").read_text())
    assert (meta["mode"], meta["backend"], meta["op"], meta["keys"]) == ("record", "cpu",
                                                                         "double", 2)
    assert meta["versions"]["triton"] == triton.__version__
    assert recorder.run_fields() == {"autotune_mode": "record",
                                     "autotune_records": {"kernels": 1, "keys": 2}}
    before = sorted(p.name for p in (tmp_path / "A").rglob("*"))

    prefer(64)                      # a live tune would now pick BLOCK=64
    double_kernel.cache.clear()
    BENCH_CALLS[0] = 0
    hook = replayer(tmp_path / "A")
    assert case_markers(hook, double_kernel, 100) == []
    assert LAUNCHED[-1] == 32
    assert case_markers(hook, double_kernel, 300) == []
    assert LAUNCHED[-1] == 32
    assert BENCH_CALLS[0] == 0      # forced, not tuned
    assert hook.run_fields() == {"autotune_mode": "replay",
                                 "autotune_replay_from": str(tmp_path / "A"),
                                 "autotune_replay_records_sha256": hashlib.sha256(
                                     (tmp_path / "A" / "autotune" / "records.json").read_bytes()
                                 ).hexdigest(),
                                 "autotune_fallbacks": {"key_missing": 0, "compile_failed": 0}}
    hook.uninstall()
    assert sorted(p.name for p in (tmp_path / "A").rglob("*")) == before   # no records written


def test_replay_forces_a_key_that_is_already_cached(tmp_path):
    record(tmp_path / "A", double_kernel, [100])
    prefer(64)
    double_kernel.cache.clear()
    assert launch(double_kernel, 100) == 64     # warm cache now holds another config
    tuned = BENCH_CALLS[0]

    hook = replayer(tmp_path / "A")
    assert launch(double_kernel, 100) == 32
    assert launch(double_kernel, 100) == 32
    assert BENCH_CALLS[0] == tuned
    hook.uninstall()
    assert launch(double_kernel, 100) == 64     # the real cache was never overwritten


def test_record_reads_back_the_config_a_warm_cache_used(tmp_path):
    assert launch(double_kernel, 500) == 32
    key = (500, F32, F32)
    double_kernel.cache[key] = double_kernel.configs[2]     # warm, and holding BLOCK=64
    record(tmp_path / "A", double_kernel, [500, 500])       # adds no key to the cache
    assert records_of(tmp_path / "A", double_kernel)[at.key_str(key)] == {
        "kwargs": {"BLOCK": 64}, "num_warps": 2, "num_stages": 1, "num_ctas": 1,
        "pre_hook": False}


def test_a_missing_key_tunes_live_and_says_so(tmp_path):
    record(tmp_path / "A", double_kernel, [100])
    double_kernel.cache.clear()
    BENCH_CALLS[0] = 0
    hook = replayer(tmp_path / "A")
    assert case_markers(hook, double_kernel, 700) == [{
        "reason": "key_missing", "kernel": at.kernel_name(double_kernel),
        "key": "700/torch.float32/torch.float32"}]
    assert LAUNCHED[-1] == 32 and BENCH_CALLS[0] == 3          # tuned live
    assert case_markers(hook, double_kernel, 100) == []
    assert [m["reason"] for m in case_markers(hook, double_kernel, 700)] == ["key_missing"]
    assert hook.fallback_counts == {"key_missing": 1}


def test_a_broken_config_falls_back_to_a_live_tune(tmp_path):
    record(tmp_path / "A", double_kernel, [100, 300])
    set_record(tmp_path / "A", double_kernel, (100, F32, F32), BROKEN)
    prefer(64)
    double_kernel.cache.clear()
    assert launch(double_kernel, 100) == 64     # cached: must be evicted and re-tuned
    BENCH_CALLS[0] = 0

    hook = replayer(tmp_path / "A")
    [first] = case_markers(hook, double_kernel, 100)
    assert first["reason"] == "compile_failed"
    assert first["key"] == "100/torch.float32/torch.float32"
    assert "power of 2" in first["detail"]
    assert LAUNCHED[-1] == 64 and BENCH_CALLS[0] == 3          # evicted, tuned live
    [again] = case_markers(hook, double_kernel, 100)           # not forced a second time
    assert again["reason"] == "compile_failed" and LAUNCHED.count(24) == 1
    assert case_markers(hook, double_kernel, 300) == [] and LAUNCHED[-1] == 32
    assert hook.fallback_counts == {"compile_failed": 1}


def test_a_pre_hook_config_replays_with_its_hook(tmp_path):
    prefer(16)
    record(tmp_path / "A", double_kernel, [100])
    assert records_of(tmp_path / "A", double_kernel)[at.key_str((100, F32, F32))]["pre_hook"]
    prefer(32)
    double_kernel.cache.clear()
    PRE_HOOK_CALLS.clear()
    BENCH_CALLS[0] = 0
    hook = replayer(tmp_path / "A")
    assert case_markers(hook, double_kernel, 100) == []
    assert LAUNCHED[-1] == 16 and PRE_HOOK_CALLS == [16] and BENCH_CALLS[0] == 0


def test_builtin_mm_record_then_replay(tmp_path):
    from adapters.builtin import kernels

    a, b = torch.randn(32, 32), torch.randn(32, 48)
    try:
        kernels.mm(a, b)
    except triton.runtime.errors.InterpreterError as exc:
        pytest.skip(f"builtin mm does not run under this Triton's interpreter: {exc}")
    kernels.mm_kernel.cache.clear()
    recorder = at.AutotuneRecorder(tmp_path / "A", META).install()
    kernels.mm(a, b)
    recorder.uninstall()
    [(key, entry)] = records_of(tmp_path / "A", kernels.mm_kernel).items()
    other = next(c for c in kernels.MM_CONFIGS if c.kwargs != entry["kwargs"])
    set_record(tmp_path / "A", kernels.mm_kernel, (32, 48, 32, F32, F32, F32),
               at.config_to_dict(other))

    hook = replayer(tmp_path / "A")         # the cache is warm with the live pick
    hook.begin_case()
    torch.testing.assert_close(kernels.mm(a, b), a @ b)
    assert hook.take_markers() == []
    assert kernels.mm_kernel.best_config.kwargs == other.kwargs
    assert key == at.key_str((32, 48, 32, F32, F32, F32))


@pytest.mark.e2e
def test_records_survive_a_crash(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        os.environ["TRITON_INTERPRET"] = "1"
        sys.path.insert(0, {str(ROOT)!r})
        import torch, triton, triton.language as tl
        from harness.compile.autotune import AutotuneRecorder

        @triton.jit
        def body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

        def bench(fn, quantiles=None, **_):
            fn()
            return [1.0] * len(quantiles)

        kernel = triton.autotune([triton.Config({{"BLOCK": 16}}), triton.Config({{"BLOCK": 32}})],
                                 key=["n"], do_bench=bench)(body)
        meta = {{"backend": "cpu", "provider": "builtin", "op": "x"}}
        AutotuneRecorder(sys.argv[1], meta).install()
        x = torch.ones(64)
        kernel[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](x, torch.empty_like(x), 64)
        raise RuntimeError("the case took the process down")
    """))
    run_dir = tmp_path / "A"
    proc = subprocess.run([sys.executable, str(script), str(run_dir)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0 and "took the process down" in proc.stderr
    data = json.loads((run_dir / "autotune" / "records.json").read_text())
    [(name, keys)] = data["kernels"].items()
    assert name.endswith(".body") and list(keys) == ["(64, 'torch.float32', 'torch.float32')"]
    at.AutotuneReplayer(run_dir, "cpu")        # a valid record run


# --- refusals and installation ---------------------------------------------------------


def test_replay_refuses_what_is_not_a_record_run_of_this_backend(tmp_path):
    record(tmp_path / "A", double_kernel, [100])
    hook = at.AutotuneReplayer(tmp_path / "A", "cpu")
    hook.write_meta(tmp_path / "B")
    (tmp_path / "C").mkdir()
    (tmp_path / "C" / "run.json").write_text(json.dumps({"autotune_mode": "replay"}))
    (tmp_path / "D").mkdir()
    cases = {tmp_path / "B": "replay from that record run",
             tmp_path / "C": "replay from the record run",
             tmp_path / "D": "not a record run",
             tmp_path / "nope": "no such run directory"}
    for path, expected in cases.items():
        with pytest.raises(UsageError, match=expected) as info:
            at.AutotuneReplayer(path, "cpu")
        assert "\n" not in info.value.message
    with pytest.raises(UsageError, match="recorded on backend cpu, this run is on backend cuda"):
        at.AutotuneReplayer(tmp_path / "A", "cuda")
    assert not (tmp_path / "B" / "autotune" / "records.json").exists()


def test_uninstall_restores_and_only_one_hook_at_a_time(tmp_path):
    original = Autotuner.__dict__["run"]
    recorder = at.AutotuneRecorder(tmp_path / "A", META).install()
    assert Autotuner.__dict__["run"] is not original
    assert FakeLibTuner.__dict__["run"] is not FakeLibTuner.__dict__["run"].__wrapped__
    with pytest.raises(RuntimeError, match="already installed"):
        at.AutotuneRecorder(tmp_path / "B", META).install()
    recorder.uninstall()
    assert Autotuner.__dict__["run"] is original
    assert json.loads((tmp_path / "A" / "autotune" / "records.json").read_text()) == {
        "schema_version": 1, "zlh_version": harness_version, "kernels": {}}


# --- FlagGems' LibTuner and LibEntry (stand-ins) ---------------------------------------

GEMS_KEY_100 = (128, F32, F32)      # align32(100)
GEMS_KEY_300 = (320, F32, F32)


def table_row(block: int, warps: int) -> dict:
    return {"kwargs": {"BLOCK": block}, "num_warps": warps, "num_stages": 1}


def test_libtuner_record_reads_back_a_warm_db(tmp_path):
    TABLE[GEMS_KEY_100] = table_row(64, 2)          # tuned by an earlier process
    record(tmp_path / "A", gems_kernel, [100, 100, 300], libentry=fake_libentry)
    assert BENCH_CALLS[0] == 3                      # only the cold key was measured
    recorded = records_of(tmp_path / "A", gems_tuner)
    assert {key: entry["kwargs"]["BLOCK"] for key, entry in recorded.items()} == {
        at.key_str(GEMS_KEY_100): 64, at.key_str(GEMS_KEY_300): 32}
    assert LAUNCHED[:2] == [64, 64]                 # the second call was a LibEntry hit


def test_libtuner_replay_forces_over_the_db_and_the_libentry_cache(tmp_path, monkeypatch):
    prefer(16)
    record(tmp_path / "A", gems_kernel, [100], libentry=fake_libentry)
    assert records_of(tmp_path / "A", gems_tuner)[at.key_str(GEMS_KEY_100)]["pre_hook"]

    TABLE.clear()                                   # another process, another DB state
    TABLE[GEMS_KEY_100] = table_row(64, 2)
    clear_libentry_dispatch_cache(gems_kernel)
    assert launch(gems_kernel, 100) == 64           # LibEntry now dispatches BLOCK=64
    PRE_HOOK_CALLS.clear()
    BENCH_CALLS[0] = 0

    # The adapter's tuner support finds the libentry module where FlagGems keeps it.
    monkeypatch.setitem(sys.modules, tuners.LIBENTRY_MODULE, fake_libentry)
    hook = at.AutotuneReplayer(tmp_path / "A", "cpu").install(tuners.tuner_support())
    assert case_markers(hook, gems_kernel, 100) == []
    assert LAUNCHED[-1] == 16 and PRE_HOOK_CALLS == [16] and BENCH_CALLS[0] == 0
    assert launch(gems_kernel, 100) == 16           # LibEntry hit keeps the forced kernel
    assert TABLE[GEMS_KEY_100] == table_row(64, 2)  # the DB is not written


def test_libtuner_broken_config_that_the_db_cannot_drop(tmp_path):
    record(tmp_path / "A", gems_kernel, [100, 300], libentry=fake_libentry)
    set_record(tmp_path / "A", gems_tuner, GEMS_KEY_100, BROKEN)
    set_record(tmp_path / "A", gems_tuner, GEMS_KEY_300, BROKEN)
    TABLE.clear()
    TABLE[GEMS_KEY_100] = table_row(64, 2)
    hook = replayer(tmp_path / "A", libentry=fake_libentry)

    [held] = case_markers(hook, gems_kernel, 100)
    assert held["reason"] == "compile_failed_no_evict" and LAUNCHED[-1] == 64
    [fresh] = case_markers(hook, gems_kernel, 300)
    assert fresh["reason"] == "compile_failed" and LAUNCHED[-1] == 32
    assert TABLE[GEMS_KEY_300] == table_row(32, 1)  # tuned live and stored
    assert hook.fallback_counts == {"compile_failed_no_evict": 1, "compile_failed": 1}


# --- caches ----------------------------------------------------------------------------


def test_cache_env(tmp_path):
    compile_env = compile_cache(tmp_path)
    assert compile_env.env == {"TRITON_CACHE_DIR": str(tmp_path.resolve() / ".triton_cache")}
    shared = tuners.tuner_cache(tmp_path, isolate=False, environ={})
    assert shared.env == {}
    assert shared.description == f"shared({Path.home() / '.flaggems' / 'config_cache'})"
    url = tuners.tuner_cache(tmp_path, False, {"FLAGGEMS_DB_URL": "postgresql://u:secret@db/t"})
    assert url.description == "shared(postgresql://u:***@db/t)"

    isolated = tuners.tuner_cache(tmp_path, isolate=True, environ={})
    assert isolated.description == "isolated"
    assert isolated.env["FLAGGEMS_CACHE_DIR"] == str(tmp_path.resolve() / ".flaggems_cache")
    assert isolated.private_dirs == (isolated.env["FLAGGEMS_CACHE_DIR"],)
    environ = {"FLAGGEMS_DB_URL": "sqlite:///shared.db"}
    apply_env(isolated.env, environ)
    assert "FLAGGEMS_DB_URL" not in environ and environ["FLAGGEMS_CACHE_DIR"]
