"""`zlh batch|screen --shard K/N` and `zlh merge`: the shards of a selection, run into roots of
their own and merged, give the root the unsharded command gives, op for op (statuses, rows,
verdicts); shards that do not join are refused in one line with their exit code."""
from __future__ import annotations

import csv
import json
import os
import random
import shutil

import pytest
from click.testing import CliRunner

from conftest import CPU_FAST
from harness.cli import main
from harness.common.errors import UsageError
from harness.corpus.selection import Item
from harness.corpus.sharding import Shard, parse_shard
from harness.store.reader import load_run

TIMES = ("elapsed_s", "run_dir", "torch_ms", "gems_ms", "speedup", "elapsed_a", "elapsed_b",
         "median_delta_pct")


def zlh(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def table(path, sep=","):
    with open(path, newline="") as f:
        return [{k: v for k, v in row.items() if k not in TIMES}
                for row in csv.DictReader(f, delimiter=sep)]


@pytest.fixture(scope="module")
def shards(corpus_roots, tmp_path_factory):
    """Shards 1/2 and 2/2 of corpus_batch's batch (add | softmax) and of corpus_roots' screen
    (add | nothing: a shard may hold no op)."""
    base = tmp_path_factory.mktemp("shards")
    shapes = corpus_roots / "shapes.yaml"
    for k in (1, 2):
        result = zlh("batch", *CPU_FAST, "--shapes", shapes, "--ops", "add,softmax",
                     "--shard", f"{k}/2", "--out", base / f"b{k}", "-q")
        assert result.exit_code == 0, result.output
        result = zlh("screen", *CPU_FAST, "--shapes", shapes, "--ops", "add", "--switch",
                     "ZLH_BUILTIN_SLOW=0,1", "--shard", f"{k}/2", "--root", base / f"s{k}")
        assert result.exit_code == 0, result.output
    return base


def test_merged_batch_equals_the_unsharded_one(shards, corpus_batch, tmp_path):
    plans = [json.loads((shards / f"b{k}" / "batch.json").read_text()) for k in (1, 2)]
    assert [[o["op"] for o in p["ops"]] for p in plans] == [["add"], ["softmax"]]
    assert [(p["shard"]["k"], p["shard"]["n"]) for p in plans] == [(1, 2), (2, 2)]
    assert plans[0]["shard"]["selection"] == plans[1]["shard"]["selection"]
    result = zlh("merge", shards / "b2", shards / "b1", "--out", tmp_path / "m")
    assert result.exit_code == 0, result.output
    merged = tmp_path / "m"
    for name in ("ops_status.csv", "summary.csv"):
        assert table(merged / name) == table(corpus_batch / name)
    doc = json.loads((merged / "batch.json").read_text())
    assert [o["op"] for o in doc["ops"]] == ["add", "softmax"] and "shard" not in doc
    assert [s["k"] for s in doc["merged"]["shards"]] == [1, 2] and not doc["merged"]["missing"]
    row = next(csv.DictReader(open(merged / "ops_status.csv")))
    run = load_run(merged / row["run_dir"])            # relative paths hold in the merge
    assert run.op == "add" and run.rows
    source = shards / "b1" / row["run_dir"] / "run.json"
    assert os.stat(source).st_ino == os.stat(merged / row["run_dir"] / "run.json").st_ino
    again = zlh("batch", "--resume", merged)
    assert again.exit_code == 2 and "made by zlh merge" in again.output


def test_merged_screen_equals_the_unsharded_one_and_rescores(shards, corpus_roots, tmp_path):
    empty = json.loads((shards / "s2" / "screen.json").read_text())
    assert empty["batch"]["ops"] == [] and empty["batch"]["shard"]["k"] == 2
    result = zlh("merge", shards / "s1", shards / "s2", "--out", tmp_path / "m")
    assert result.exit_code == 0, result.output
    merged, screen = tmp_path / "m", corpus_roots / "screen"
    assert table(merged / "screen.tsv", "\t") == table(screen / "screen.tsv", "\t")
    for side in ("A", "B"):
        assert table(merged / side / "ops_status.csv") == table(screen / side / "ops_status.csv")
    assert (merged / "ir_changed.txt").read_text() == (screen / "ir_changed.txt").read_text()
    rescored = zlh("screen", "--rescore", merged)
    assert rescored.exit_code == 0, rescored.output
    assert table(merged / "screen.tsv", "\t") == table(screen / "screen.tsv", "\t")
    weighed = zlh("partition", merged / "screen.tsv", "--devices", "0,1", "--verdict",
                  "NO_TRITON")
    assert weighed.exit_code == 0 and "add" in weighed.output, weighed.output
    other = tmp_path / "other-switch"
    shutil.copytree(shards / "s2", other)
    doc = json.loads((other / "screen.json").read_text())
    doc["B"]["env"] = {"ZLH_BUILTIN_SLOW": "2"}
    (other / "screen.json").write_text(json.dumps(doc))
    refused = zlh("merge", shards / "s1", other, "--out", tmp_path / "m2")
    assert refused.exit_code == 2 and "other side B" in refused.output, refused.output


def _copy(shards, name, tmp_path, edit=None):
    target = tmp_path / f"{name}-copy"
    shutil.copytree(shards / name, target)
    if edit is not None:
        doc = json.loads((target / "batch.json").read_text())
        edit(doc)
        (target / "batch.json").write_text(json.dumps(doc))
    return target


def test_shards_that_do_not_join_are_refused(shards, tmp_path):
    b1, b2, out = shards / "b1", shards / "b2", tmp_path / "out"
    cases = [
        ((b1,), 2, "shard 2/2 missing"),
        ((b1, _copy(shards, "b1", tmp_path), b2), 2, "shards overlap"),
        ((b1, _copy(shards, "b2", tmp_path / "c", lambda d: d["caliber"].update(
            device="NVIDIA H200"))), 4, "another caliber"),
        ((b1, _copy(shards, "b2", tmp_path / "o", lambda d: d["options"].update(
            max_time_ms=50.0))), 2, "other bench options"),
        ((b1, shards / "s2"), 2, "a screen root"),
    ]
    for roots, code, words in cases:
        result = zlh("merge", *roots, "--out", out)
        assert result.exit_code == code and words in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1 and not out.exists()
    unfinished = _copy(shards, "b2", tmp_path / "u")
    (unfinished / "softmax" / ".complete").unlink()
    result = zlh("merge", b1, unfinished, "--out", out)
    assert result.exit_code == 2 and "1 unfinished op(s) (first: softmax)" in result.output


def test_partial_merge_then_merge_again(shards, tmp_path):
    out = tmp_path / "out"
    result = zlh("merge", shards / "b1", "--out", out, "--partial")
    assert result.exit_code == 0 and "shards missing 2/2" in result.output, result.output
    doc = json.loads((out / "batch.json").read_text())
    assert doc["merged"]["missing"] == [2]
    assert [r["op"] for r in csv.DictReader(open(out / "ops_status.csv"))] == ["add"]
    result = zlh("merge", shards / "b1", shards / "b2", "--out", out)      # the rest came
    assert result.exit_code == 0, result.output
    assert [r["op"] for r in csv.DictReader(open(out / "ops_status.csv"))] == ["add", "softmax"]
    result = zlh("merge", shards / "b2", "--out", out, "--partial")         # would drop add
    assert result.exit_code == 2 and "holds shard 1/2" in result.output
    assert (out / "add" / ".complete").is_file()
    other = tmp_path / "other"
    (other / "x").mkdir(parents=True)
    result = zlh("merge", shards / "b1", shards / "b2", "--out", other)
    assert result.exit_code == 2 and "not a root zlh merge made" in result.output


def test_shards_are_stable_disjoint_and_balanced():
    names = [f"op{i:03d}" for i in range(23)]
    items = [Item(n) for n in names]
    for n in (1, 4, 7, 30):
        parts = [Shard(k, n).take(items) for k in range(1, n + 1)]
        shuffled = random.Random(n).sample(items, len(items))
        assert [set(i.op for i in p) for p in parts] == \
            [set(i.op for i in Shard(k, n).take(shuffled)) for k in range(1, n + 1)]
        assert sorted(i.op for p in parts for i in p) == names
        sizes = [len(p) for p in parts]
        assert max(sizes) - min(sizes) <= 1
    assert [i.op for i in Shard(2, 4).take(items)] == ["op001", "op005", "op009", "op013",
                                                       "op017", "op021"]


@pytest.mark.parametrize("text, env, k", [
    ("3/4", {}, 3), ("auto/4", {"SLURM_ARRAY_TASK_ID": "4"}, 4),
    ("auto/4", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0"}, 4),
    ("auto/4", {"SLURM_ARRAY_TASK_ID": "14", "SLURM_ARRAY_TASK_MIN": "10",
                "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, 3),
    ("auto/4", {"JOB_COMPLETION_INDEX": "0"}, 1)])
def test_shard_from_the_command_line_or_the_job_array(text, env, k):
    assert parse_shard(text, env) == Shard(k, 4)


@pytest.mark.parametrize("text, env, words", [
    ("0/4", {}, "count from 1"), ("5/4", {}, "from 1 to 4"), ("2", {}, "expects K/N"),
    ("1/0", {}, "from 1 to"), ("auto/4", {}, "neither SLURM_ARRAY_TASK_ID"),
    ("auto/4", {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "8"}, "has 8 tasks")])
def test_bad_shards_are_one_line(text, env, words):
    with pytest.raises(UsageError, match=words):
        parse_shard(text, env)


def test_bad_shard_on_the_command_line(tmp_path):
    result = zlh("batch", *CPU_FAST, "--ops", "add", "--shard", "0/2", "--out", tmp_path / "b")
    assert result.exit_code == 2 and "count from 1" in result.output
    assert not (tmp_path / "b").exists()
