"""The analysis of the device experiment tests/device/rounds_spread.py, on synthetic rounds:
spreads, the variance ratio and its F interval, the per-op decision, the acceptance summary."""
import importlib.util
import json
import signal
import sys

import numpy as np
import pytest

from conftest import TESTS

spec = importlib.util.spec_from_file_location("rounds_spread", TESTS / "device" /
                                              "rounds_spread.py")
rounds_spread = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rounds_spread)


def test_f_interval_matches_the_tables():
    # F(0.975; 20, 20) = 2.464: a ratio of 1 on 20/20 df spans [1/2.464, 2.464]
    low, high = rounds_spread.f_interval(1.0, 20, 20)
    assert low == pytest.approx(1 / 2.464, rel=0.02) and high == pytest.approx(2.464, rel=0.02)


def rounds(rng, ms, sd_pct, k):
    return list(ms * np.exp(sd_pct / 100 * rng.standard_normal(k)))


@pytest.mark.parametrize("in_sd, honest", [(0.5, True), (0.05, False)])
def test_in_process_rounds_that_spread_less_are_not_honest(in_sd, honest):
    rng = np.random.default_rng(1)
    keys = [("mm", "", "bfloat16", f"s{i}", 0) for i in range(5)]
    fresh = {k: rounds(rng, 0.2, 0.5, 6) for k in keys}
    inproc = {k: rounds(rng, 0.2, in_sd, 6) for k in keys}
    fresh[("mm", "", "bfloat16", "tiny", 0)] = [0.001, 0.002, 0.001]     # < 20 us: not pooled
    inproc[("mm", "", "bfloat16", "tiny", 0)] = [0.001, 0.001, 0.001]
    rows = rounds_spread.spread_rows(fresh, inproc)
    assert len(rows) == 6 and sum(r["counted"] for r in rows) == 5
    assert all(r["low"] <= r["ratio"] <= r["high"] for r in rows if r["ratio"])
    (op,) = rounds_spread.pooled(rows).values()
    assert op["shapes"] == 5 and op["df"] == [25, 25]
    assert op["honest"] is honest
    text = "\n".join(rounds_spread.spread_text(rows, {"mm": op}, "t"))
    assert ("NOT honest" in text) is (not honest)


def _row(shape, a_ms, delta, low, high, p, significant, direction):
    return {"variant": "v", "dtype": "bfloat16", "shape_detail": shape, "occurrence": 0,
            "a_ms": a_ms, "b_ms": a_ms, "delta_pct": delta, "ci_low_pct": low,
            "ci_high_pct": high, "p_value": p, "significant": significant,
            "direction": direction, "interval": "rounds"}


def write_report(root, rows, faster=0, slower=0, unchanged=0, rounds=9):
    """A calibrate root's report.json: one op, mm, with these rows."""
    summary = {"n": len(rows), "faster": faster, "slower": slower, "unchanged": unchanged,
               "rounds": rounds, "per_round_median_delta_pct": [0.0] * rounds,
               "sign_unstable": 0, "side_spread_median_pct": {"A": 0.1, "B": 0.1}}
    (root / "report.json").write_text(json.dumps(
        {"ops": [{"op": "mm", "caliber": {}, "sides": {"A": {}, "B": {}}, "summary": summary,
                  "rows": rows}]}))


def test_acceptance_summary_of_a_calibrate_root(tmp_path):
    rows = [_row("a", 0.05, -0.31, -0.4, -0.2, 0.001, True, -1),
            _row("b", 0.03, -0.1, -0.3, 0.1, 0.5, False, 0),
            _row("c", 0.001, 0.5, 0.2, 0.8, 0.01, True, 1),
            # significant as the report had it (its op's family), withdrawn over the root's
            # four shapes: 0.04 > 0.05 / 2 once 0.001 and 0.01 passed
            _row("d", 0.04, 0.2, 0.01, 0.4, 0.04, True, 1)]
    write_report(tmp_path, rows, faster=2, slower=1, unchanged=1)
    (tmp_path / "status.tsv").write_text("round\top\tside\trc\telapsed_s\n1\tmm\tA\t0\t2.5\n"
                                         "1\tmm\tB\t0\t3.0\n")
    planted = rounds_spread.summarize_root(tmp_path, planted=True)
    assert planted["shapes_20us"] == 3 and planted["found_20us"] == 1
    assert planted["wrong_sign"] == 1 and planted["rate_20us"] == pytest.approx(1 / 3)
    assert planted["wall_s"] == 5.5 and planted["rounds"] == [9]
    aa = rounds_spread.summarize_root(tmp_path, planted=False)
    assert aa["significant"] == 2 and aa["significant_stored"] == 3
    assert aa["abs_delta_median_20us"] == pytest.approx(0.2)
    assert aa["abs_delta_max_20us"] == pytest.approx(0.31)
    text = "\n".join(rounds_spread.summary_lines(planted))
    assert "planted 0.3 % found with the right sign on 1/3" in text
    assert "significant 2 (as stored: 3)" in text


def test_a_plant_that_landed_over_twice_its_size_is_neither_found_nor_missed(tmp_path):
    rows = [_row("a", 0.05, -1.7, -2.1, -1.3, 0.001, True, -1),      # planted 1.3 %, found
            _row("b", 0.05, -0.31, -0.4, -0.2, 0.001, True, -1),     # planted 0.3 %, found
            _row("c", 0.05, -0.1, -0.3, 0.1, 0.5, False, 0)]         # missed
    write_report(tmp_path, rows, faster=2, unchanged=1)

    def shape(name, landed, sized_by="landing"):
        return {"variant": "v", "dtype": "bfloat16", "shape_detail": name, "occurrence": 0,
                "planted_pct": 0.3, "landed_pct": landed, "plant_sized_by": sized_by}
    (tmp_path / "calibration.json").write_text(json.dumps({"wall_s": 9.0, "ops": [{"shapes": [
        shape("a", 1.29), shape("b", 0.31), shape("c", 1.5, sized_by="latency")]}]}))
    n = rounds_spread.summarize_root(tmp_path, planted=True)
    # "c"'s nominal plant is counted: its probe was too loose to say what it landed
    assert (n["over_landed_20us"], n["shapes_20us"], n["found_20us"]) == (1, 2, 1)
    assert "found with the right sign on 1/2" in "\n".join(rounds_spread.summary_lines(n))
    (total,) = [t for t in rounds_spread.total_lines([n]) if "planted" in t]
    assert total.endswith("left out (plant landed over 2 times its size) 1"), total


def test_a_root_tested_again_on_a_longer_pilot(tmp_path):
    """PILOT=P: every shape's rounds tested again under the two-stage design on a pilot of P
    rounds. A shape whose first four rounds scatter, and whose later ones agree closely, is
    not significant on a 4-round pilot and is on a 16-round one (whose spread and degrees of
    freedom take in the quiet rounds)."""
    deltas = [-0.3 + (-1) ** k for k in range(4)] + [-0.3 + 0.05 * (-1) ** k for k in range(20)]
    row = dict(_row("a", 0.05, -0.3, -0.4, -0.2, 0.001, True, -1),
               rounds={"deltas_pct": deltas})
    write_report(tmp_path, [row], slower=1, rounds=24)
    short = rounds_spread.summarize_root(tmp_path, planted=True, pilot=4)
    long = rounds_spread.summarize_root(tmp_path, planted=True, pilot=16)
    assert short["found_20us"] == 0 and long["found_20us"] == 1


def test_pacing_is_adopted_only_when_it_lowers_the_spread_without_moving_the_median():
    rng = np.random.default_rng(2)
    key = ("mm", "", "bfloat16", "4096x4096x4096", 0)
    off = {key: rounds(rng, 0.22, 1.5, 8)}
    calm = {key: rounds(rng, 0.22 * np.median(off[key]) / 0.22, 0.1, 8)}
    (line,) = rounds_spread.pace_lines(rounds_spread.spread_rows(off, calm))
    assert line.endswith("adopt pacing (lower sd, median unbiased)"), line
    slower = {key: [v * 1.05 for v in calm[key]]}
    (line,) = rounds_spread.pace_lines(rounds_spread.spread_rows(off, slower))
    assert "keep pacing off" in line and "median shifted" in line


def test_groups_add_up():
    parts = [{"found_20us": 9, "shapes_20us": 10, "wrong_sign": 0, "wall_s": 100.0},
             {"found_20us": 10, "shapes_20us": 10, "wrong_sign": 0, "wall_s": 50.0},
             {"significant": 0, "shapes": 12, "shapes_20us": 3, "abs_delta_max_20us": 0.2,
              "abs_deltas_20us": [0.2, 0.01, 0.03], "wall_s": 80.0},
             {"significant": 1, "shapes": 5, "shapes_20us": 2, "abs_delta_max_20us": 0.5,
              "abs_deltas_20us": [0.5, 0.02], "wall_s": 20.0}]
    assert rounds_spread.total_lines(parts) == [
        "all planted roots: found 19/20 shapes >= 20 us (95.0 %), wrong sign 0, runs' wall 150 s",
        "all A/A roots: 1 significant of 17 shapes; |delta| (>= 20 us) median 0.030 % max "
        "0.500 %; runs' wall 100 s"]


def test_round_lines_split_a_turns_fresh_round_into_its_waits(tmp_path):
    from harness.corpus.rounds import run_line
    lines = {"A": [], "B": []}
    for number, start in ((0, 100.0), (1, 110.0), (2, 115.0), (3, 120.5)):
        for label, stop in (("A", 0.5), ("B", 1.0)):
            if number == 0 and label == "B":
                continue                 # the record: side A alone
            ready = start + (2.0 if number == 0 else 0.0)
            lines[label].append(run_line("softmax", number, label, start, ready, start + 3.0,
                                         start + 3.0 + stop))
    for label, got in lines.items():
        (tmp_path / f"worker_{label}.log").write_text("zlh spare start: pid 1\n" +
                                                      "\n".join(got) + "\n")
    (line,) = rounds_spread.round_lines(tmp_path)
    # rounds 1-3 (the record is not a round): asks 5.0 and 5.5 s apart; each run 3 s; stops
    # 0.5 and 1.0 s (median 0.75); the next round asked 1.0 and 1.5 s after the later stop
    assert line == ("softmax: 3 rounds, median period 5.25 s: spare wait 0.00 s, run 3.00 s, "
                    "stop 0.75 s, between rounds 1.25 s")


def test_round_lines_say_the_spares_a_side_kept(tmp_path):
    from harness.corpus.rounds import run_line
    for label, last in (("A", 5), ("B", 4)):
        (tmp_path / f"worker_{label}.log").write_text("\n".join(
            run_line("mm", n, label, 10.0 * n, 10.0 * n, 10.0 * n + 3, 10.0 * n + 3.2) +
            f", spares {s}" for n, s in ((1, 3), (2, last))) + "\nzlh turns-fresh run: torn\n")
    (line,) = rounds_spread.round_lines(tmp_path)
    assert line.endswith("stop 0.20 s, between rounds 6.80 s, spares at the end A 5, B 4")


def test_round_sd_lines_take_every_round_of_the_shapes_at_or_above_20_us():
    big = dict(_row("4096x4096", 0.0357, -0.31, -0.4, -0.2, 0.001, True, -1),
               rounds={"deltas_pct": [-0.1, -0.3, -0.5], "sd_pct": 9.9})
    tiny = dict(_row("64", 0.002, 0.1, -1, 1, 0.5, False, 0), rounds={"deltas_pct": [1, -1]})
    once = dict(_row("8192", 0.05, 0.1, -1, 1, 0.5, False, 0), rounds={"deltas_pct": [0.1]})
    unknown = dict(_row("2048", 0.04, None, None, None, None, False, 0),
                   rounds={"deltas_pct": [0.1, 0.3]})
    lines = rounds_spread.round_sd_lines(
        [dict(row, op="softmax") for row in (big, tiny, once, unknown)])
    assert lines == ["softmax 4096x4096: 35.7 us, 3 rounds, sd 0.200 %, delta -0.310 %, "
                     "significant",
                     "softmax 2048: 40.0 us, 2 rounds, sd 0.141 %, delta -"]


def test_the_listed_shapes_carry_the_verdicts_decided_again(tmp_path):
    """With PILOT the per-shape lines say what the shapes were decided now, not what the
    report had stored: a shape tested again on a longer pilot loses its `significant`."""
    deltas = [-0.3, -0.31, -0.29, -0.3] + [-0.3 + 2.0 * (-1) ** k for k in range(20)]
    row = dict(_row("a", 0.05, -0.3, -0.4, -0.2, 0.001, True, -1),
               rounds={"deltas_pct": deltas})
    write_report(tmp_path, [row], slower=1, rounds=24)
    n = rounds_spread.summarize_root(tmp_path, planted=True, pilot=16)
    assert n["significant"] == 0 and n["significant_stored"] == 1
    (line,) = n["round_sd"]
    assert "significant" not in line


def test_an_ops_span_runs_from_its_first_start_to_its_last_end(tmp_path):
    """Two sides that ran at once count once: softmax's record at 10:00:00 (7.5 s), then a
    round whose A and B started together at 10:00:08 and took 1.5 and 2.0 s: 10.0 s, where
    the runs' elapsed add up to 11 s. A run without a named directory is left out."""
    rows = [("0", "softmax", "A", "7.5", "/r/softmax/r0_A/softmax_20261206-100000"),
            ("1", "softmax", "A", "1.5", "/r/softmax/r1_A/softmax_20261206-100008"),
            ("1", "softmax", "B", "2.0", "/r/softmax/r1_B/softmax_20261206-100008-1"),
            ("0", "mm", "A", "3.0", "-")]
    (tmp_path / "status.tsv").write_text(
        "round\top\tside\trc\telapsed_s\trun_dir\n"
        + "".join(f"{r}\t{op}\t{side}\t0\t{e}\t{d}\n" for r, op, side, e, d in rows))
    assert rounds_spread.op_spans(tmp_path) == {"softmax": 10.0}
    assert rounds_spread.status_wall(tmp_path, {"softmax"}) == 11.0
    line = [ln for ln in rounds_spread.summary_lines(
        {"root": "r", "ops": 1, "shapes": 0, "shapes_20us": 0, "significant": 0, "rounds": [],
         "wall_s": 11.0, "abs_delta_median_20us": None, "abs_delta_max_20us": None,
         "op_spans": rounds_spread.op_spans(tmp_path)}) if ln.startswith("wall an op")]
    assert line == ["wall an op, first run's start to last run's end (to the second): "
                    "softmax 10.0 s"]


def test_new_memory_lines_count_the_later_placements_that_took_new_memory(tmp_path):
    def write(run, took):
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({"caliber": {"placements": 4}}))
        row = {"extra": {"placements_new_memory": took,         # one placement not measured
                         "placements_copied": took},
               "gems": {"repeat_medians_ms": [0.03, 0.031, 0.029]}}
        (run / "results.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(
            {"extra": {}, "gems": {"repeat_medians_ms": [0.1]}}) + "\n")
    write(tmp_path / "softmax" / "r1_A" / "softmax_1", 3)
    write(tmp_path / "softmax" / "r1_B" / "softmax_2", 1)      # two fell back
    (tmp_path / "add" / "r1_A").mkdir(parents=True)            # reused memory: no line
    assert rounds_spread.new_memory_lines(tmp_path) == [
        "softmax: 4 of 6 later placements in new memory",
        "softmax: 4 later placements moved the adapter's made-once inputs by a copy, 0 could "
        "not (no room)"]


def test_round_lines_say_when_a_rounds_second_side_followed_the_first(tmp_path):
    from harness.corpus.rounds import run_line
    for label, offset in (("A", 0.0), ("B", 3.5)):        # B asked 0.3 s after A stopped
        (tmp_path / f"worker_{label}.log").write_text("\n".join(
            run_line("mm", n, label, 10.0 * n + offset, 10.0 * n + offset,
                     10.0 * n + offset + 3, 10.0 * n + offset + 3.2, "twins") + ", spares 3"
            for n in (1, 2, 3)) + "\n")
    (line,) = rounds_spread.round_lines(tmp_path)
    assert "second side asked 0.30 s after the first stopped" in line


def test_a_box_that_ends_stops_the_calibration_with_sigterm_so_it_keeps_its_rounds(tmp_path):
    """rounds_spread stops a calibration at the end of its box as a user would (SIGTERM: zlh
    closes its runs, then the root is rescored), not with SIGKILL, which would leave the op
    cut short without a report."""
    seen = tmp_path / "seen"
    child = ("import signal, sys, time\n"
             "def stop(signum, frame):\n"
             f"    open({str(seen)!r}, 'w').write(str(signum)); sys.exit(143)\n"
             "signal.signal(signal.SIGTERM, stop)\n"
             "print('ready', flush=True)\n"
             "time.sleep(60)\n")
    log_path = tmp_path / "log"
    with open(log_path, "w") as log:
        assert rounds_spread.run_boxed([sys.executable, "-c", child], log, 3) == 124
        assert rounds_spread.run_boxed([sys.executable, "-c", "pass"], log, 30) == 0
    assert seen.read_text() == str(signal.SIGTERM)
    assert log_path.read_text().startswith("ready")


def test_a_plant_or_aa_call_prints_where_its_big_shapes_spread_from():
    """rounds_within's table rides along with the call's output, for shapes >= 20 us only."""
    spec_w = importlib.util.spec_from_file_location("rounds_within", TESTS / "device" /
                                                    "rounds_within.py")
    rounds_within = importlib.util.module_from_spec(spec_w)
    spec_w.loader.exec_module(rounds_within)
    rng = np.random.default_rng(4)
    runs = {f"r{n}_{side}": {"shapes": {"mm 4096": list(0.2 * np.exp(rng.normal(0, 0.01, 20))),
                                        "mm 384": list(0.003 * np.exp(rng.normal(0, 0.01, 20)))}}
            for n in (1, 2, 3) for side in "AB"}
    lines = rounds_spread.within_lines(rounds_within, {"mm": runs})
    assert "agree" in lines[0] and any("mm 4096" in line for line in lines)
    assert not any("mm 384" in line for line in lines)
    assert lines[-1].startswith("shapes >= 20 us: 1;")
    assert rounds_spread.within_lines(rounds_within, {}) == []


def test_an_op_run_in_two_roots_counts_once_from_the_one_with_more_rounds(tmp_path):
    """A box that cut an op after two rounds, the op run again in a later call: adding the
    calls up counts its shapes once, from the root that ran it to more rounds — among roots
    of its kind: an A/A of the same op, with more rounds still, takes nothing from the plant."""
    cut, again, aa = tmp_path / "cut", tmp_path / "again", tmp_path / "aa"
    for root, rounds, p, plant in ((cut, 2, 0.5, 0.3), (again, 16, 0.001, 0.3),
                                   (aa, 24, 0.5, None)):
        root.mkdir()
        write_report(root, [_row("a", 0.05, -0.31, -0.4, -0.2, p, p < 0.05, -1)],
                     slower=int(p < 0.05), unchanged=int(p >= 0.05), rounds=rounds)
        (root / "status.tsv").write_text("round\top\tside\trc\telapsed_s\n1\tmm\tA\t0\t2.5\n")
        (root / "plan.json").write_text(json.dumps({"B": {"options": {"plant_pct": plant}}}))
    elsewhere = rounds_spread.counted_elsewhere([cut, again, aa])
    assert elsewhere == {str(cut): {"mm": str(again)}}
    parts = [rounds_spread.summarize_root(root, planted=root != aa,
                                          elsewhere=elsewhere.get(str(root)))
             for root in (cut, again, aa)]
    assert [p["shapes_20us"] for p in parts] == [0, 1, 1] and parts[0]["wall_s"] == 0
    assert f"mm: counted from {again}" in "\n".join(rounds_spread.summary_lines(parts[0]))
    planted, aa_total = rounds_spread.total_lines(parts)
    assert planted.startswith("all planted roots: found 1/1 shapes"), planted
    assert aa_total.startswith("all A/A roots: 0 significant of 1 shapes"), aa_total


def test_a_root_with_its_samples_has_its_turns_rounds_paired_again(tmp_path, monkeypatch):
    """summarize derives each round in turns again as zlh now does (the median of its
    neighbour pairs); report.json's deltas (ratios of medians, scattered here) stay for a
    round whose turns broke, and for every round with PAIRS=0."""
    rng = np.random.default_rng(3)
    stored = [-0.3 + (-1) ** k for k in range(8)]          # the medians' deltas: noise
    row = dict(_row("a", 0.05, -0.3, -0.9, 0.4, 0.4, False, 0),
               rounds={"deltas_pct": stored})
    write_report(tmp_path, [row], unchanged=1, rounds=8)
    doc = json.loads((tmp_path / "report.json").read_text())
    doc["ops"][0]["summary"]["rounds_design"] = {"design": "two-stage", "min_rounds": 4,
                                                 "target_pct": 0.1, "max_rounds": 8}
    (tmp_path / "report.json").write_text(json.dumps(doc))
    turns, broken = {"first": True, "cases": 1, "lost": None}, {"lost": "the peer ended"}
    runs = {}
    for n in range(1, 9):
        drift = np.exp(0.02 * rng.standard_normal(20))
        runs[f"r{n}_A"] = {"turns": turns, "shapes": {"v|bfloat16|a|0": list(drift)}}
        runs[f"r{n}_B"] = {"turns": broken if n == 8 else turns,
                           "shapes": {"v|bfloat16|a|0": list(
                               drift * 1.003 * np.exp(0.0005 * rng.standard_normal(20)))}}
    (tmp_path / "samples.json").write_text(json.dumps({"mm": runs}))
    paired = rounds_spread.summarize_root(tmp_path, planted=True)
    assert paired["rounds_paired_again"] == 7
    assert paired["found_20us"] == 1
    monkeypatch.setenv("PAIRS", "0")
    kept = rounds_spread.summarize_root(tmp_path, planted=True)
    assert kept["rounds_paired_again"] is None and kept["found_20us"] == 0


def test_a_root_with_level_placements_has_their_rounds_paired_again(tmp_path):
    """A shape both sides timed on level placements, in rounds without turns: summarize reads
    each round from its placement pairs, as zlh now does, where the stored ratios of the
    interquartile means scatter with the levels drawn."""
    rng = np.random.default_rng(5)
    stored = [-0.3 + (-1) ** k for k in range(8)]
    row = dict(_row("a", 0.05, -0.3, -0.9, 0.4, 0.4, False, 0),
               rounds={"deltas_pct": stored})
    write_report(tmp_path, [row], unchanged=1, rounds=8)
    runs = {}
    for n in range(1, 9):
        levels = rng.choice([0.0474, 0.048, 0.0486], 16)      # placement j alike on both
        runs[f"r{n}_A"] = {"turns": None, "levels": {"v|bfloat16|a|0": list(levels)}}
        runs[f"r{n}_B"] = {"turns": None, "levels": {"v|bfloat16|a|0": list(
            levels * 1.003 * np.exp(0.0002 * rng.standard_normal(16)))}}
    (tmp_path / "samples.json").write_text(json.dumps({"mm": runs}))
    got = rounds_spread.summarize_root(tmp_path, planted=True)
    assert got["rounds_paired_again"] == 8 and got["found_20us"] == 1
    assert "given their paired delta again" in "\n".join(rounds_spread.summary_lines(got))


def test_level_lines_say_what_each_records_probe_flagged(tmp_path):
    def row(shape, ms, **extra):
        return json.dumps({"shape_detail": shape, "gems": {"median_ms": ms}, "extra": extra})
    record = tmp_path / "layer_norm" / "r0_A" / "layer_norm_1"
    record.mkdir(parents=True)
    (record / "results.jsonl").write_text("\n".join([
        row("20x6x65536", 0.0503, level_spread_pct=1.92, level_placements=64),
        row("4096x4096", 0.031, level_spread_pct=0.31), row("64x64", 0.0014)]) + "\n")
    replay = tmp_path / "layer_norm" / "r1_A" / "layer_norm_2"     # a replay: not the record
    replay.mkdir(parents=True)
    (replay / "results.jsonl").write_text(row("8x8", 0.05, level_spread_pct=9.0) + "\n")
    (tmp_path / "add" / "r0_A" / "add_1").mkdir(parents=True)      # no probe: no line
    (tmp_path / "add" / "r0_A" / "add_1" / "results.jsonl").write_text(row("8", 0.1) + "\n")
    assert rounds_spread.level_lines(tmp_path) == [
        "layer_norm: record's level probe: flagged 20x6x65536 50.3 us 1.92 % (64 placements); "
        "1 under the spread (at most 0.31 %); 1 not probed"]


def test_keep_records_brings_back_each_ops_record_and_no_replay(tmp_path):
    root, kept = tmp_path / "root", tmp_path / "kept"
    record = root / "einsum" / "r0_A" / "einsum_1"
    (record / "autotune").mkdir(parents=True)
    (record / "results.jsonl").write_text('{"shape_detail": "16x512x512"}\n')
    (record / "autotune" / "records.json").write_text('{"kernels": {"bmm": {}}}')
    replay = root / "einsum" / "r1_A" / "einsum_2"
    replay.mkdir(parents=True)
    (replay / "results.jsonl").write_text("{}\n")
    rounds_spread.keep_records(root, kept)
    got = sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file())
    assert got == ["records/einsum/r0_A/autotune/records.json",
                   "records/einsum/r0_A/results.jsonl"]
