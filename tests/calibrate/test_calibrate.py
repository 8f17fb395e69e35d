"""zlh calibrate: floor statistics on synthetic rounds, calibration.json, --noise-floor labels,
plant sizing, a planted run on the CPU, the end-to-end command, the clocks chart."""
import json
import math
from datetime import datetime, timezone
import stat

import pytest
from click.testing import CliRunner

import harness
from harness.ab import compare
from harness.ab.html import render_html
from harness.ab.orchestrate import run_side
from harness.ab.render import render_terminal
from harness.ab.sides import ABPlan, Side
from harness.calibrate import floor
from harness.measure import stats
from harness.calibrate.noise import NoiseFloor
from harness.run.plant import Plant, check_plant
from harness.calibrate.run import CalibratePlan, document, render
from harness.cli import main
from harness.common import markers
from harness.common.errors import UsageError
from harness.run.options import BenchOptions
from harness.store.reader import load_run
from harness.telemetry import chart, tsv
from harness.measure.measurement import Measurement
from harness.store.results import SUCCESS, Row
from harness.store.rundir import RunDir
from fake_runs import CALIBER, make_run
from spin_backend import SpinBackend

import backends


# ---- statistics -------------------------------------------------------------------------------
def test_detectable_change_uses_students_t_at_80_percent_power():
    # t(0.975, 2) = 4.303 and t(0.80, 2) = 1.061 (tables): (4.303 + 1.061) / sqrt(3) = 3.097
    assert stats.detectable_pct(1.0, 3) == pytest.approx(3.097, abs=2e-3)
    # t(0.975, 4) = 2.776, t(0.80, 4) = 0.941: (2.776 + 0.941) * 0.2 / sqrt(5) = 0.3325
    assert stats.detectable_pct(0.2, 5) == pytest.approx(0.3325, abs=1e-3)
    assert stats.detectable_pct(1.0, 1) is None and stats.detectable_pct(None, 3) is None


def test_shape_floor_of_per_round_deltas():
    out = floor.shape_floor([0.1, -0.3, 0.2, None, math.nan])
    assert out["rounds"] == 3
    assert out["noise_median_pct"] == pytest.approx(0.2)
    assert out["noise_max_pct"] == pytest.approx(0.3)
    logs = [100 * math.log1p(d / 100) for d in (0.1, -0.3, 0.2)]     # as zlh ab tests rounds
    mean = sum(logs) / 3
    assert out["sd_pct"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in logs) / 2),
                                          rel=1e-9)
    assert out["detectable_pct"] == pytest.approx(stats.detectable_pct(out["sd_pct"], 3))
    assert floor.shape_floor([])["noise_max_pct"] is None
    # large deltas: the same detectable change as the A/B table's (log scale), not raw deltas'
    from harness.measure import sequential
    big = [-50.0, -30.0, -40.0]
    assert floor.shape_floor(big)["detectable_pct"] == pytest.approx(
        sequential.shape_rounds(big, None, None)["detectable_pct"])


def exact_run(root, name, latencies, mode, extra=None):
    """A run whose every sample is the given latency: its median is exactly that."""
    run = RunDir.create(root, name)
    run.write_results([Row(op="softmax", dtype="bfloat16", shape=None, shape_detail=shape,
                           status=SUCCESS, torch=Measurement((ms,) * 5, "graph"),
                           gems=Measurement((ms,) * 5, "graph"), extra=dict(extra or {}))
                       for shape, ms in latencies.items()])
    run.write_run_json({"op": "softmax", "status": "complete",
                        "caliber": dict(CALIBER, autotune_mode=mode)})
    return run.path


def rounds_of(tmp_path, a_ms, b_ms, shapes=("64x64", "1024"), b_extra=None):
    """Synthetic A/B rounds: per round one latency per side, the same for every shape (x10)."""
    pairs = []
    for i, (la, lb) in enumerate(zip(a_ms, b_ms)):
        a = exact_run(tmp_path, f"a{i}", {s: la * 10 ** k for k, s in enumerate(shapes)},
                      "record" if i == 0 else "replay")
        b = exact_run(tmp_path, f"b{i}", {s: lb * 10 ** k for k, s in enumerate(shapes)},
                      "replay", b_extra)
        pairs.append((load_run(a), load_run(b)))
    return pairs


def calibration_doc(tmp_path, a_ms, b_ms, plant_pct=None, b_extra=None):
    report = compare.compare_runs(rounds_of(tmp_path, a_ms, b_ms, b_extra=b_extra))
    plan = CalibratePlan(["softmax"], BenchOptions(), tmp_path, rounds=len(a_ms),
                         plant_pct=plant_pct)
    return document(plan, [report]), report


def test_calibration_document_from_synthetic_aa_rounds(tmp_path):
    doc, _ = calibration_doc(tmp_path, [1.000, 1.002, 0.999], [1.001, 1.000, 1.001])
    assert doc["schema_version"] == 1 and doc["kind"] == "calibration"
    assert doc["plant_pct"] is None and doc["rounds"] == 3
    (op,) = doc["ops"]
    shape = op["shapes"][0]
    expected = [(a / b - 1) * 100 for a, b in zip([1.000, 1.002, 0.999], [1.001, 1.000, 1.001])]
    assert shape["deltas_pct"] == pytest.approx(expected)
    assert shape["noise_max_pct"] == pytest.approx(max(abs(d) for d in expected))
    assert shape["noise_median_pct"] == pytest.approx(sorted(abs(d) for d in expected)[1])
    assert op["summary"]["significant"] == 0 and "plant" not in op["summary"]
    json.dumps(doc, allow_nan=False)
    text = "\n".join(render(doc))
    assert "|d| max %" in text and "detectable % (N=3)" in text and "machine:" in text


def test_planted_rounds_count_detections_with_the_right_sign(tmp_path):
    planted = {"planted": {"cycles": 900, "sized_by": "landing", "probe": "landed",
                           "landed_pct": 0.96}}
    doc, _ = calibration_doc(tmp_path, [1.000, 1.001, 0.999], [1.010, 1.011, 1.009],
                             plant_pct=1.0, b_extra=planted)
    (op,) = doc["ops"]
    assert all(s["detected"] and not s["wrong_sign"] for s in op["shapes"])
    # what the record measured the plant to land, per shape, beside what the rounds read
    assert all((s["landed_pct"], s["plant_sized_by"]) == (0.96, "landing") for s in op["shapes"])
    assert "landed %" in "\n".join(render(doc)) and " 0.960 " in "\n".join(render(doc))
    assert op["summary"]["plant"] == {"shapes": 2, "detected": 2, "wrong_sign": 0, "rate": 1.0}
    assert doc["floor"]["plant"]["rate"] == 1.0
    assert "planted 1% detected with the right sign (all shapes): 2/2 (100%)" in \
        "\n".join(render(doc))
    wrong, _ = calibration_doc(tmp_path / "w", [1.010, 1.011, 1.009], [1.000, 1.001, 0.999],
                               plant_pct=1.0)
    assert wrong["floor"]["plant"]["wrong_sign"] == 2 and wrong["floor"]["plant"]["detected"] == 0


# ---- --noise-floor ------------------------------------------------------------------------------
def write_floor(tmp_path, **changes):
    doc, _ = calibration_doc(tmp_path / "cal", [1.000, 1.002, 0.999], [1.001, 1.000, 1.001])
    doc.update(changes)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc))
    return path, doc


def test_noise_floor_labels_significant_deltas_within_the_floor(tmp_path):
    path, doc = write_floor(tmp_path)
    floor_pct = doc["ops"][0]["shapes"][0]["noise_max_pct"]          # ~0.2 %
    small = compare.compare_runs(rounds_of(tmp_path / "s", [1.000, 1.0001, 0.9999],
                                           [0.9985, 0.99861, 0.99839]))
    big = compare.compare_runs(rounds_of(tmp_path / "b", [1.000, 1.001, 0.999],
                                         [0.95, 0.951, 0.949]))
    noise = NoiseFloor.load(path)
    assert all(r.significant for r in small.rows + big.rows)
    assert noise.label(small) == 2 and noise.label(big) == 0
    row = small.rows[0]
    assert row.within_noise and abs(row.delta_pct) <= floor_pct
    assert f"within noise (floor {floor_pct:.3g}%)" in row.annotations
    assert small.summary["within_noise"] == 2
    text = render_terminal(small)
    lines = text.split("\n")
    first_row = next(i for i, line in enumerate(lines) if line.startswith("----")) + 1
    assert "noise" in lines[first_row] and "within the noise floor 2" in text
    page = render_html({"ops": [small.to_dict()]})
    assert "<td>noise</td>" in page and "within noise" in page
    assert not any(r.within_noise for r in big.rows)


def test_noise_floor_file_problems_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        NoiseFloor.load(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text('{"ops": []}')
    with pytest.raises(UsageError, match="not a zlh calibration.json"):
        NoiseFloor.load(tmp_path / "x.json")
    planted, _ = write_floor(tmp_path, plant_pct=1.0)
    with pytest.raises(UsageError, match="planted-change self-test"):
        NoiseFloor.load(planted)


def test_ab_cli_takes_a_noise_floor(tmp_path):
    path, _ = write_floor(tmp_path)
    a = make_run(tmp_path, "a", {"64x64": 1.0, "1024": 10.0})
    b = make_run(tmp_path, "b", {"64x64": 0.999, "1024": 5.0}, mode="replay", replay_from=a,
                 seed=3)
    result = CliRunner().invoke(main, ["ab", str(a), str(b), "--noise-floor", str(path),
                                       "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["shape_detail"]: r for r in json.loads(result.output)["rows"]}
    assert rows["1024"]["significant"] and not rows["1024"]["within_noise"]
    bad = CliRunner().invoke(main, ["ab", str(a), str(b), "--noise-floor", str(tmp_path)])
    assert bad.exit_code == 2 and "--noise-floor" in bad.output


# ---- planting ---------------------------------------------------------------------------------
def test_plant_is_sized_from_side_a_latency():
    backend = SpinBackend()
    key = ("", "bfloat16", "64x64", 0)
    plant = Plant(0.3, backend, 0, {key: 0.050})
    lead, line = plant.lead(key, {"op": "gelu", "dtype": "bfloat16", "shape": "64x64"})
    lead(1)
    assert backend.spun == [150]                       # 0.3 % of 50 us at 1 GHz = 150 cycles
    lead(40)
    assert backend.spun[-1] == 40 * 150                # a sample of 40 calls: one spin for all
    name, fields = markers.parse_marker(line)
    assert name == markers.PLANTED and fields["cycles"] == "150" and fields["pct"] == "0.3"
    assert float(fields["planted_ms"]) == pytest.approx(0.00015)
    lead, line = plant.lead(("", "bfloat16", "other", 0), {"op": "gelu"})
    lead(3)
    assert backend.spun[-1] == 0 and "nothing planted" in line
    zero = Plant(0.0, backend, 0)
    lead, _ = zero.lead(key, {"op": "gelu"})
    lead(3)
    assert backend.spun[-1] == 0 and zero.cycles_per_ms is None   # no calibration needed
    assert plant.run_fields()["planted_cases"] == 1


def test_plant_needs_a_sizing_run_and_a_spin():
    check_plant(None, None, SpinBackend())
    check_plant(0.0, None, SpinBackend())
    with pytest.raises(UsageError, match="plant_pct needs replay"):      # API: keywords
        check_plant(1.0, None, SpinBackend())
    with pytest.raises(UsageError, match="no device spin"):
        check_plant(1.0, "runs/a", type("NoSpin", (), {"name": "x", "has_spin": lambda s: False})())


def test_a_planted_cpu_run_is_slower_by_about_the_plant(tmp_path):
    opts = dict(adapter="builtin", backend="cpu", dtypes=["float32"], warmup_ms=1.0,
                min_samples=5, min_time_ms=0.0, max_time_ms=30.0, out=str(tmp_path),
                echo=lambda _: None)
    a = harness.bench("add", **opts)
    b = harness.bench("add", replay=str(a.run_dir), plant_pct=300.0, **opts)
    for ra, rb in zip(a.rows, b.rows):
        assert rb.gems_ms > 2.0 * ra.gems_ms            # +300 % planted on the host clock
        # the baseline is not planted: torch's add takes microseconds, the plant (3x the
        # interpreted kernel) milliseconds. Not torch B against torch A: two medians of a
        # microsecond op can differ by 2x on a busy host.
        assert rb.torch_ms < ra.gems_ms
        assert any(markers.marker_name(m) == markers.PLANTED for m in rb.markers)
    info = json.loads((b.run_dir / "run.json").read_text())
    assert info["plant"]["pct"] == 300.0 and info["plant"]["cycles_per_ms"] == 1e6
    assert info["plant"]["planted_cases"] == len(b.rows)
    with pytest.raises(UsageError, match="plant_pct needs replay"):      # API: keywords
        harness.bench("add", plant_pct=1.0, **opts)


def test_side_options_and_telemetry_off_reach_the_child(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/argv"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    plan = ABPlan(["add"], Side("A"), Side("B", python=str(fake), options={"plant_pct": 1.5}),
                  BenchOptions(telemetry_interval=2.0, retry_throttled=3), tmp_path / "ab")
    run_side(plan, "add", 1, plan.b, tmp_path / "r1_A")
    argv = (tmp_path / "argv").read_text().split()
    assert argv[argv.index("--plant-pct") + 1] == "1.5"
    assert argv[argv.index("--telemetry-interval") + 1] == "0.0"
    assert argv[argv.index("--retry-throttled") + 1] == "3"


def test_telemetry_and_plant_options_do_not_follow_a_stored_run():
    options = BenchOptions.from_flat(telemetry_interval=1.0, plant_pct=2.0, retry_throttled=2)
    back = BenchOptions.from_run({"options": options.to_dict()})
    assert back.telemetry_interval == 5.0 and back.plant_pct is None
    assert back.retry_throttled == 2
    with pytest.raises(UsageError, match="telemetry_interval"):
        BenchOptions.from_flat(telemetry_interval=-1.0)


# ---- end to end ---------------------------------------------------------------------------------
@pytest.mark.e2e
def test_calibrate_end_to_end_on_the_cpu(tmp_path):
    root = tmp_path / "cal"
    result = CliRunner().invoke(main, [
        "calibrate", "add", "--adapter", "builtin", "--backend", "cpu", "--rounds", "2",
        "--warmup-ms", "1", "--min-samples", "3", "--min-time-ms", "0", "--max-time-ms", "20",
        "--root", str(root), "-q"])
    assert result.exit_code == 0, result.output
    doc = json.loads((root / "calibration.json").read_text())
    assert doc["kind"] == "calibration" and doc["rounds"] == 2
    assert doc["machine"]["backend"] == "cpu"
    (op,) = doc["ops"]
    assert len(op["shapes"]) == 2 and all(len(s["deltas_pct"]) == 2 for s in op["shapes"])
    assert all(s["noise_max_pct"] >= s["noise_median_pct"] >= 0 for s in op["shapes"])
    assert "machine: " in result.output and "detectable % (N=2)" in result.output
    assert "backend cpu" in (root / "telemetry.err").read_text()
    assert "--telemetry-interval 0.0" in (next((root / "add").glob("r1_A")) / "bench.log"
                                          ).read_text().splitlines()[0]
    floor_ok = CliRunner().invoke(main, ["ab", str(next((root / "add" / "r1_A").glob("add_*"))),
                                         str(next((root / "add" / "r1_B").glob("add_*"))),
                                         "--noise-floor", str(root / "calibration.json")])
    assert floor_ok.exit_code == 0, floor_ok.output


# ---- the clocks chart -------------------------------------------------------------------------
def test_report_html_shows_the_clocks_of_each_op_window(tmp_path):
    root = tmp_path / "ab"
    run = make_run(root / "softmax" / "r1_A", "a", {"s1": 1.0})
    info = json.loads((run / "run.json").read_text())
    info.update(started_at="2026-11-29T10:00:00+0000", finished_at="2026-11-29T10:00:20+0000")
    (run / "run.json").write_text(json.dumps(info))
    start = datetime(2026, 11, 29, 10, 0, 0, tzinfo=timezone.utc).timestamp()
    sample = backends.TelemetrySample(0, 1980.0, 3201.0, 40.0, 300.0, 90.0, ())
    slow = backends.TelemetrySample(0, 1410.0, 3201.0, 85.0, 700.0, 99.0, ("hw_thermal",))
    lines = [tsv.line(start + t, 0, "0", slow if t == 10 else sample, "nvml", 20.0)
             for t in (-100, 0, 5, 10, 15, 20)]
    (root / tsv.FILE).write_text(tsv.header() + "".join(lines))
    data = chart.for_report(root, ["softmax"])
    assert data["windows"]["softmax"] == [start, start + 20]
    svg = chart.clock_svg(data["points"], data["windows"]["softmax"])
    assert svg.count("<polyline") == 2 and "hw_thermal" in svg
    assert svg.count(",") - svg.count("hw_thermal,") >= 10      # 5 points per line, not 6
    report = make_run(tmp_path, "a2", {"s1": 1.0})
    op = compare.compare_runs([(load_run(report), load_run(report))]).to_dict()
    page = render_html({"ops": [op], "telemetry": data})
    assert '<div class="charts">' in page and "device clocks over time" in page
    assert "http" not in page.replace("http-equiv", "")
