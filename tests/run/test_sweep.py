"""Parallel autotune sweep: refusals, merging with conflicting winners, the end-to-end
flow on the CPU (two shards, a merged record, the measurement replaying it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.compile.autotune.merge import merge_records, write_merged
from harness.compile.autotune.records import META_FILE, RECORDS_FILE
from harness.run.options import BenchOptions
from harness.run.sweep import SweepRefused, check_sweep

CONFIG = {"kwargs": {"BLOCK": 32}, "num_warps": 4, "num_stages": 3, "num_ctas": 1,
          "pre_hook": False}


def record_dir(path: Path, kernels: dict, backend="cpu") -> Path:
    (path / "autotune").mkdir(parents=True)
    (path / RECORDS_FILE).write_text(json.dumps({"schema_version": 1, "kernels": kernels}))
    (path / META_FILE).write_text(json.dumps({"schema_version": 1, "mode": "record",
                                              "backend": backend, "op": "mm"}))
    return path


@pytest.mark.parametrize("options, shards, devices, cases, why", [
    (BenchOptions(replay="/x"), 2, [0, 1], None, "a replay was asked for"),
    (BenchOptions(), 2, [0], None, "at least 2 devices"),
    (BenchOptions(), 1, [0, 1], None, "at least 2 devices and 2 shards"),
    (BenchOptions(level="comprehensive"), 2, [0, 1], None, "level comprehensive"),
    (BenchOptions(), 2, [0, 1], 1, "1 case(s)"),
])
def test_refusals(options, shards, devices, cases, why):
    with pytest.raises(SweepRefused, match=why.replace("(", r"\(").replace(")", r"\)")):
        check_sweep(options, shards, devices, cases)
    check_sweep(BenchOptions(level="comprehensive", shapes="s.yaml"), 2, [0, 1], 5)   # fine


def test_merge_keeps_every_key_and_counts_conflicts_first_shard_wins(tmp_path):
    a = record_dir(tmp_path / "a", {"k": {"(16,)": CONFIG, "(32,)": CONFIG}})
    other = dict(CONFIG, kwargs={"BLOCK": 64})
    b = record_dir(tmp_path / "b", {"k": {"(32,)": other, "(48,)": other}, "j": {"(1,)": CONFIG}})
    records, conflicts, meta = merge_records([a, b], "cpu")
    assert records == {"k": {"(16,)": CONFIG, "(32,)": CONFIG, "(48,)": other},
                       "j": {"(1,)": CONFIG}}
    assert conflicts == ["k (32,)"]
    merged = write_merged(tmp_path / "m", records, meta, [a, b], conflicts)
    info = json.loads((merged / META_FILE).read_text())
    assert info["mode"] == "record" and info["keys"] == 4 and info["shard_conflicts"] == conflicts
    again, _, _ = merge_records([b, a], "cpu")
    assert again["k"]["(32,)"] == other              # order decides, deterministically


@pytest.mark.parametrize("devices, why", [("0,0", "distinct non-negative indices"),
                                          ("0,x", "indices such as 0,1,2")])
def test_bad_sweep_devices_name_their_own_option(tmp_path, devices, why):
    result = CliRunner().invoke(main, [
        "bench", "mm", "--adapter", "builtin", "--backend", "cpu", "--parallel-sweep", "2",
        "--sweep-devices", devices, "--out", str(tmp_path / "runs"), "--quiet"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"zlh: --sweep-devices expects {why}, got '{devices}'")
    assert result.stderr.count("\n") == 1 and not (tmp_path / "runs").exists()


@pytest.mark.e2e
def test_two_shards_merge_and_the_measurement_replays_every_key(tmp_path):
    shapes = tmp_path / "mm.yaml"
    shapes.write_text("mm: [[16, 16, 16], [32, 32, 32], [48, 16, 32]]\n")
    result = CliRunner().invoke(main, [
        "bench", "mm", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes),
        "--warmup-ms", "1", "--min-samples", "3", "--min-time-ms", "0", "--max-time-ms", "20",
        "--parallel-sweep", "2", "--sweep-devices", "0,1", "--out", str(tmp_path / "runs"),
        "--quiet"])
    assert result.exit_code == 0, result.output
    assert "parallel sweep of mm: 2 shards" in result.output
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("mm_")]
    info = json.loads((run / "run.json").read_text())
    assert info["autotune_mode"] == "replay" and info["autotune_fallbacks"]["key_missing"] == 0
    merged = Path(info["autotune_replay_from"])
    records = json.loads((merged / RECORDS_FILE).read_text())["kernels"]
    assert sum(len(k) for k in records.values()) == 3          # every shape's key
    shards = json.loads((merged / META_FILE).read_text())["merged_from"]
    assert len(shards) == 2 and all(Path(s).parent.name.startswith("shard") for s in shards)
    rows = [json.loads(x) for x in (Path(shards[0]) / "results.jsonl").read_text().splitlines()]
    assert [r["shape_detail"] for r in rows] == ["16x16x16", "48x16x32"]   # round-robin


@pytest.mark.e2e
def test_a_failing_shard_falls_back_to_a_serial_sweep(tmp_path):
    result = CliRunner().invoke(main, [
        "bench", "fault_raise", "--adapter", "builtin", "--backend", "cpu",
        "--parallel-sweep", "2", "--sweep-devices", "0,1", "--out", str(tmp_path / "runs"),
        "--quiet"], catch_exceptions=True)
    assert "parallel sweep of fault_raise refused: shard" in result.output
    assert "a merge with holes is never published" in result.output
