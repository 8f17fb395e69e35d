"""The bench option table: every consumer derives from it (click options, checks, a child's
arguments, run.json, the API keywords, a manifest's vocabulary, the reference rows)."""
from __future__ import annotations

import inspect
import os
import json

import click
import pytest

import harness
from harness.cli import main
from harness.cli.common import BENCH_NAMES
from harness.common.errors import UsageError
from harness.product.validate_protocol import BENCH_KEYS
from harness.embed.timing import TIMING_NAMES
from harness.run.option_table import BY_NAME, OPTIONS
from harness.run.options import (FLAT_NAMES, LOCATION_NAMES, BenchOptions,
                                 manifest_option_names, option_rows)

# A value other than the default for every option (a valid one).
OTHER = {"adapter": "builtin", "cases": "pkg.mod:cases", "backend": "cpu", "device": 1,
         "dtypes": ["float16", "bfloat16"], "shapes": "/s.yaml", "level": "comprehensive",
         "timer": "event", "repeat": 3, "l2": "flush", "warmup_ms": 12.5, "min_samples": 7,
         "min_time_ms": 2.0, "max_time_ms": 80.0, "target_rel_err": 0.002, "seed": 5,
         "inputs": "upstream", "check": False, "flaggems_dir": "/fg", "isolate_tuner_cache": True,
         "ir": False,
         "ir_stage": "ptx", "telemetry_interval": 0.5, "retry_throttled": 2, "out": "/o",
         "replay": "/r", "keep_cache": True, "autotune_hooks": False, "plant_pct": 1.5,
         "plant_landing_pct": 0.3,
         "kernel_split": True, "case_shard": "1/3", "pace_us": 250.0, "timing": False,
         "baseline_timing": False, "placements": 4, "level_placements": 64, "level_min_us": 5.0,
         "placement_memory": "new", "placement_seed": 9,
         "keep_compile_cache": True, "compile_cache": "/c", "sweep_ms": 40.0}


def test_every_option_has_a_value_here_and_the_dataclass_its_fields():
    assert set(OTHER) == set(FLAT_NAMES)
    options = BenchOptions.from_flat(**OTHER)
    assert all(options.value(name) != BY_NAME[name].default for name in FLAT_NAMES)
    assert BenchOptions().to_flat() == {**{o.name: o.default for o in OPTIONS}, "argv": None}


def test_zlh_bench_takes_every_option_under_its_flat_name_and_flag():
    params = {p.name: p for p in main.commands["bench"].params}
    for option in OPTIONS:
        param = params[option.name]
        assert isinstance(param, click.Option) and option.flag in param.opts
        assert param.hidden == option.hidden
    shared = [o.name for o in OPTIONS if o.shared]
    assert BENCH_NAMES == tuple(shared)
    assert all({p.name for p in main.commands[c].params} >= set(shared)
               for c in ("ab", "batch", "screen", "calibrate"))


def test_arguments_read_back_to_the_same_options():
    """A fresh `zlh bench` (click) and a corpus worker (`from_argv`) read the same argv."""
    from harness.cli.common import parse_bench_args
    options = BenchOptions.from_flat(**OTHER)
    argv = options.to_argv()
    assert BenchOptions.from_argv(argv) == options
    shared = BenchOptions.from_flat(**{k: v for k, v in OTHER.items() if k in BENCH_NAMES})
    assert BenchOptions.from_flat(**parse_bench_args(shared.to_argv(), "t")) == shared
    assert BenchOptions().to_argv() == [] and BenchOptions.from_argv([]) == BenchOptions()
    with pytest.raises(UsageError, match="unknown option '--nope'"):
        BenchOptions.from_argv(["--nope"])


def test_run_json_records_each_value_once_and_older_run_json_still_reads():
    options = BenchOptions.from_flat(**OTHER)
    record = options.run_record()
    caliber = options.caliber_values()
    recorded = {o.name for o in OPTIONS if o.caliber}
    assert not recorded & set(record) and set(record) | recorded == set(FLAT_NAMES)
    assert caliber["stopping"]["min_samples"] == 7 and caliber["bench_level"] == "comprehensive"
    assert "warmup_ms" not in options.budget_record() and "max_unroll" in options.budget_record()
    # a run reproduced for a replay hooks the tuners again (an unhooked one recorded nothing)
    expected = options.replace(**{k: BY_NAME[k].default for k in LOCATION_NAMES},
                               autotune_hooks=True, timing=True)
    now = {"options": record, "caliber": {**caliber, "backend": "cpu"}}
    assert BenchOptions.from_run(json.loads(json.dumps(now))) == expected
    older = {"options": options.to_dict(), "seed": 5, "budget": options.budget.to_dict(),
             "caliber": {**caliber, "backend": "cpu"}}
    assert BenchOptions.from_run(older) == expected


def test_api_keywords_and_the_manifest_vocabulary_come_from_the_table():
    assert TIMING_NAMES == tuple(o.name for o in OPTIONS if o.measure)
    signature = inspect.signature(harness.measure)
    assert list(signature.parameters) == ["fn", *TIMING_NAMES, "name"]
    assert signature.parameters["timer"].default == "auto"
    assert BENCH_KEYS == manifest_option_names() == (
        "level", "repeat", "l2", "warmup_ms", "min_samples", "min_time_ms", "max_time_ms",
        "target_rel_err", "placements", "placement_memory", "level_placements", "level_min_us",
        "seed", "ir_stage")
    with pytest.raises(UsageError, match="unknown bench option nope"):
        harness.bench("add", nope=1)


def test_reference_rows_say_flag_range_group_and_caliber():
    rows = {r["name"]: r for r in option_rows()}
    assert list(rows) == list(FLAT_NAMES)
    assert rows["warmup_ms"]["flag"] == "--warmup-ms" and rows["warmup_ms"]["range"] == "0.."
    assert rows["repeat"]["range"] == "1..1000" and rows["repeat"]["caliber"] == "repeat"
    assert rows["backend"]["help"].startswith("Device runtime: ")
    assert all(r["help"] and r["group"] for r in rows.values())


def test_a_real_run_json_holds_each_option_once_and_reproduces_the_options(tmp_path):
    shapes = tmp_path / "add.yaml"
    shapes.write_text("add: [[64]]\n")
    run = harness.bench("add", adapter="builtin", backend="cpu", shapes=str(shapes),
                        out=str(tmp_path / "runs"), min_samples=3, min_time_ms=1.0,
                        max_time_ms=20.0, warmup_ms=1.0, seed=7, repeat=2)
    info = json.loads((run.run_dir / "run.json").read_text())
    assert not {o.name for o in OPTIONS if o.caliber} & set(info["options"])
    assert "seed" not in info and "warmup_ms" not in info["budget"]
    assert info["caliber"]["seed"] == 7 and info["caliber"]["warmup_ms"] == 1.0
    again = BenchOptions.from_run(info)
    assert (again.seed, again.repeat, again.rule.min_samples, again.budget.warmup_ms) == \
        (7, 2, 3, 1.0)
    assert again.shapes == os.path.abspath(shapes) and again.out == "runs"
