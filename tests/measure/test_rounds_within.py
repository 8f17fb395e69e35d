"""The analysis of tests/device/rounds_within.py on synthetic rounds with placements: the
spread of a run's placements and the rounds' spread under the mean of them."""
import importlib.util
import json
import math

import numpy as np
import pytest

from conftest import TESTS

spec = importlib.util.spec_from_file_location("rounds_within", TESTS / "device" /
                                              "rounds_within.py")
rounds_within = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rounds_within)


def write_run(root, op, name, placements, placed=None):
    run = root / op / name / "run_1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(
        {"caliber": {"placements": placed or len(placements)}}))
    row = {"op": op, "dtype": "bfloat16", "shape_detail": "4096x4096", "status": "SUCCESS",
           "gems_ms": float(np.median(placements)),
           "gems": {"samples_ms": [p for p in placements for _ in range(3)],
                    "repeat_medians_ms": placements}}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n")


def test_placements_that_differ_inside_a_run_show_and_their_mean_is_taken(tmp_path):
    rng = np.random.default_rng(3)
    for n in range(1, 7):
        for side in "AB":
            write_run(tmp_path, "softmax", f"r{n}_{side}",
                      list(0.03 * np.exp(rng.normal(0, 0.004, 4))))
    (row,) = rounds_within.analyse(rounds_within.export(tmp_path))
    assert row["rounds"] == 6 and 0.2 < row["pl_sd"] < 0.6           # about 0.4 % drawn
    doc = rounds_within.export(tmp_path)
    deltas = [100 * math.log(np.mean(doc["softmax"][f"r{n}_A"]["placements"][k]) /
                             np.mean(doc["softmax"][f"r{n}_B"]["placements"][k]))
              for n in range(1, 7) for k in doc["softmax"][f"r{n}_A"]["placements"]]
    assert row["mean_sd"] == pytest.approx(np.std(deltas, ddof=1))
    assert row["trim_sd"] == pytest.approx(row["mean_sd"])   # four placements: nothing trimmed
    halves = [100 * math.log(np.mean(doc["softmax"][f"r{n}_A"]["placements"][k][:2]) /
                             np.mean(doc["softmax"][f"r{n}_B"]["placements"][k][:2]))
              for n in range(1, 7) for k in doc["softmax"][f"r{n}_A"]["placements"]]
    assert row["half_sd"] == pytest.approx(np.std(halves, ddof=1))
    assert row["half_sd"] != pytest.approx(row["mean_sd"])
    lines = rounds_within.table([row])
    assert "pl.sd" in lines[0] and "half.sd" in lines[0]
    assert lines[1].endswith(f"{row['pl_sd']:>6.3f} {row['mean_sd']:>7.3f} "
                             f"{row['trim_sd']:>7.3f} {row['half_sd']:>7.3f}")


def test_the_trimmed_mean_leaves_out_one_outlying_placement(tmp_path):
    for n in range(1, 5):
        for side in "AB":                        # eight placements, one of A's far off
            placements = [0.03] * 8
            if side == "A":
                placements[n % 8] = 0.03 * (1.02 if n % 2 else 0.98)
            write_run(tmp_path, "add", f"r{n}_{side}", placements)
    (row,) = rounds_within.analyse(rounds_within.export(tmp_path))
    assert row["trim_sd"] == pytest.approx(0.0, abs=1e-9) and row["mean_sd"] > 0.2


def test_runs_without_placements_have_no_placement_columns(tmp_path):
    for n in (1, 2, 3):
        for side in "AB":
            run = tmp_path / "add" / f"r{n}_{side}" / "run_1"
            run.mkdir(parents=True)
            (run / "results.jsonl").write_text(json.dumps(
                {"op": "add", "shape_detail": "64", "status": "SUCCESS", "gems_ms": 0.03 + n / 1e4,
                 "gems": {"samples_ms": [0.03 + n / 1e4] * 5}}) + "\n")
    (row,) = rounds_within.analyse(rounds_within.export(tmp_path))
    assert "pl_sd" not in row and "pl.sd" not in rounds_within.table([row])[0]


def test_repeats_without_placements_and_too_few_rounds_give_no_placement_spread(tmp_path):
    for n in (1, 2, 3):
        for side in "AB":                        # --repeat 4 alone: the repeats' medians
            write_run(tmp_path, "add", f"r{n}_{side}", [0.03, 0.031, 0.029, 0.03], placed=1)
    (row,) = rounds_within.analyse(rounds_within.export(tmp_path))
    assert "pl_sd" not in row
    for side in "AB":                            # with placements, but one round only
        write_run(tmp_path, "mul", f"r1_{side}", [0.03, 0.031])
    write_run(tmp_path, "mul", "r2_A", [0.03, 0.031])          # round 2: B lacks them
    write_run(tmp_path, "mul", "r2_B", [0.03], placed=1)
    doc = rounds_within.export(tmp_path)
    assert rounds_within.placement_spread(doc["mul"], [1, 2], "mul|bfloat16|4096x4096|0") == {}


def test_r_is_near_one_where_a_rounds_two_runs_share_their_level_and_near_zero_where_not():
    rng = np.random.default_rng(5)
    level = rng.normal(0, 0.004, 40)                     # a round's placement, both sides'
    shared = [(0.03 * np.exp(x + rng.normal(0, 4e-4)), 0.03 * np.exp(x + rng.normal(0, 4e-4)))
              for x in level]
    own = [(0.03 * np.exp(rng.normal(0, 0.004)), 0.03 * np.exp(rng.normal(0, 0.004)))
           for _ in level]
    assert rounds_within.side_correlation(shared) > 0.95
    assert abs(rounds_within.side_correlation(own)) < 0.4
    assert rounds_within.side_correlation(shared[:2]) is None            # under three rounds
    assert rounds_within.side_correlation([(0.03, 0.031)] * 5) is None   # a side never moved


def test_first_says_how_much_slower_a_rounds_first_run_read():
    # A first in odd rounds (ABBA): a first run 0.2 % slower makes odd deltas +0.2, even −0.2
    deltas = [0.5 + (0.2 if n % 2 else -0.2) for n in range(1, 9)]
    signs = [1.0 if n % 2 else -1.0 for n in range(1, 9)]
    assert rounds_within.first_effect(deltas, signs) == pytest.approx(0.2)
    assert rounds_within.first_effect([0.5] * 8, signs) == pytest.approx(0.0)
    assert rounds_within.first_effect([0.1, 0.2, 0.3], [1.0, -1.0, 1.0]) is None


def test_agree_tells_a_level_each_run_draws_from_its_samples_noise():
    """Neighbour pairs read the way their round's delta does about half the time where the
    rounds' deltas are sampling noise, and nearly always where each run draws a level of its
    own (a process whose data lie elsewhere): the `agree` column."""
    rng = np.random.default_rng(7)

    def doc(level_sd):
        runs = {}
        for n in range(1, 9):
            for side in "AB":
                level = rng.normal(0, level_sd)
                samples = 0.2 * np.exp(level + rng.normal(0, 0.005, 40))
                runs[f"r{n}_{side}"] = {"shapes": {"mm 4096": list(samples)}}
        return {"mm": runs}
    (noise,) = rounds_within.analyse(doc(0.0))
    (levels,) = rounds_within.analyse(doc(0.02))
    assert 0.4 <= noise["agree"] <= 0.7 and levels["agree"] >= 0.9, (noise, levels)
    assert levels["sd"] > 5 * noise["sd"]
    header, line = rounds_within.table([levels])[:2]
    assert "agree" in header and f" {levels['agree']:>5.2f} " in line


def write_level_run(root, op, name, levels, per=4):
    """A run whose one case was timed on level placements (`levels`: their medians, each
    placement `per` samples alike), without --placements."""
    run = root / op / name / "run_1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"caliber": {"placements": 1}}))
    row = {"op": op, "dtype": "bfloat16", "shape_detail": "20x6x65536", "status": "SUCCESS",
           "gems_ms": float(np.mean(levels)), "extra": {"level_placements": len(levels)},
           "gems": {"samples_ms": [v for v in levels for _ in range(per)],
                    "repeat_medians_ms": list(levels)}}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n")


def test_level_placements_in_pairs_cancel_a_level_both_sides_land_on(tmp_path):
    """Placement j of A and B landing on one level (drawn per placement, 2 % apart): the
    paired delta reads B's planted 0.3 % with little spread, where the ratio of the two
    sides' means spreads with the levels."""
    rng = np.random.default_rng(11)
    for n in range(1, 9):
        shared = 0.048 * np.exp(rng.choice([0.0, 0.02, 0.04], size=32, p=[0.5, 0.3, 0.2]))
        own = 0.048 * np.exp(rng.choice([0.0, 0.02, 0.04], size=32, p=[0.5, 0.3, 0.2]))
        landed = np.where(rng.random(32) < 0.6, shared, own)     # most placements alike
        write_level_run(tmp_path, "layer_norm", f"r{n}_A", list(landed))
        other = np.where(rng.random(32) < 0.6, landed, own[::-1])
        write_level_run(tmp_path, "layer_norm", f"r{n}_B", list(other * 1.003))
    doc = rounds_within.export(tmp_path)
    assert len(doc["layer_norm"]["r1_A"]["levels"]) == 1 and not doc["layer_norm"]["r1_A"][
        "placements"]
    (row,) = rounds_within.analyse(doc)
    assert row["lv_mean"] == pytest.approx(-0.2996, abs=0.01)   # 100·ln(1/1.003)
    assert row["lv_sd"] < 0.05 < row["sd"]
    header, line = rounds_within.table([row])[:2]
    assert header.endswith("lv.mean  lv.sd") and line.endswith(
        f" {row['lv_mean']:>+7.3f} {row['lv_sd']:>6.3f}")


def test_an_older_export_is_split_into_its_level_placements_where_they_divide_evenly(tmp_path):
    for n in (1, 2):
        for side in "AB":
            write_level_run(tmp_path, "layer_norm", f"r{n}_{side}", [0.05, 0.051, 0.049])
    doc = rounds_within.export(tmp_path)
    key = next(iter(doc["layer_norm"]["r1_A"]["shapes"]))
    for run in doc["layer_norm"].values():
        del run["levels"]                                        # as exported before
    run = doc["layer_norm"]["r1_A"]
    run["shapes"]["other|bfloat16|64|0"] = [0.01] * 12           # matches no MATCH
    rounds_within.split_levels(doc, 3, "20x6x65536")
    assert run["levels"] == {key: pytest.approx([0.05, 0.051, 0.049])}
    doc["layer_norm"]["r2_B"]["levels"].clear()
    doc["layer_norm"]["r2_B"]["shapes"][key] = [0.05] * 10      # 10 samples: not 3 parts
    rounds_within.split_levels(doc, 3, "20x6x65536")
    assert doc["layer_norm"]["r2_B"]["levels"] == {}
    assert rounds_within.level_paired(doc["layer_norm"], [1, 2], key) == {}   # one round


def test_a_wrong_command_line_prints_the_usage_and_exits_2(capsys):
    assert rounds_within.main(["show"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and "show OUT.json LEVELS MATCH" in err
