"""`zlh calibrate` prints per shape the rounds a fixed --rounds N needs to detect a change of
the planted (or --detect-pct) size, from the spread it measured."""
import pytest

from harness.ab import compare
from harness.calibrate import floor
from harness.calibrate.run import CalibratePlan, document, render
from harness.measure import stats
from harness.run.options import BenchOptions
from test_calibrate import rounds_of


@pytest.mark.parametrize("sd, change", [(1.0, 3.1), (0.1, 0.3), (0.5, 0.3), (0.05, 0.3)])
def test_rounds_to_detect_is_the_first_count_whose_detectable_change_is_small_enough(sd, change):
    n = floor.rounds_to_detect(sd, change)
    assert stats.detectable_pct(sd, n) <= change
    assert n == 2 or stats.detectable_pct(sd, n - 1) > change


def test_rounds_to_detect_known_values_and_the_limit():
    assert floor.rounds_to_detect(1.0, 3.1) == 3          # 3 rounds detect 3.097 sd
    assert floor.rounds_to_detect(1.0, 3.09) == 4
    assert floor.rounds_to_detect(20.0, 0.3) is None       # more than 1000 rounds
    assert floor.rounds_to_detect(None, 0.3) is None


def test_a_calibration_prints_the_rounds_for_the_planted_size(tmp_path):
    a_ms, b_ms = [1.000, 1.002, 0.999, 1.001], [1.004, 1.005, 1.003, 1.006]
    report = compare.compare_runs(rounds_of(tmp_path, a_ms, b_ms))
    plan = CalibratePlan(["softmax"], BenchOptions(), tmp_path, rounds=4, plant_pct=0.3)
    doc = document(plan, [report])
    assert doc["detect_pct"] == 0.3 and doc["wall_s"] >= 0
    shape = doc["ops"][0]["shapes"][0]
    assert shape["rounds_to_detect"] == floor.rounds_to_detect(shape["sd_pct"], 0.3)
    text = "\n".join(render(doc))
    assert "rounds for 0.3%" in text
    assert f" {shape['rounds_to_detect']} " in text.splitlines()[2]
    other = document(CalibratePlan(["softmax"], BenchOptions(), tmp_path, rounds=4,
                                   detect_pct=1.0), [report])
    assert other["ops"][0]["shapes"][0]["rounds_to_detect"] == floor.rounds_to_detect(
        shape["sd_pct"], 1.0)
    assert "rounds for 1%" in "\n".join(render(other))


@pytest.mark.e2e
def test_calibrate_rounds_auto_in_persistent_workers_on_the_cpu(tmp_path):
    import json
    from click.testing import CliRunner
    from harness.cli import main
    from conftest import CPU_FAST
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[4096]]\n")
    root = tmp_path / "cal"
    # Two pilot rounds give a half-width of about 9 times their sd, and a loaded host's deltas
    # have spread over 100 %: the target is one no host noise can miss, so the pilot suffices.
    result = CliRunner().invoke(main, ["calibrate", "add", *CPU_FAST, "--shapes", str(shapes),
                                       "--rounds", "auto", "--min-rounds", "2",
                                       "--max-rounds", "3", "--target-pct", "1000000",
                                       "--round-process", "persistent", "--settle-ms", "0",
                                       "--root", str(root), "-q"])    # no device to settle
    assert result.exit_code == 0, result.output
    doc = json.loads((root / "calibration.json").read_text())
    assert doc["rounds"] == "auto" and doc["round_process"] == "persistent"
    assert doc["rounds_auto"]["min_rounds"] == 2
    (shape,) = doc["ops"][0]["shapes"]
    assert shape["rounds"] == 2 and shape["rounds_needed_target"] == 2   # the pilot sufficed
    assert "rounds for 0.3%" in result.output and "wall:" in result.output
    assert len((root / "status.tsv").read_text().splitlines()) == 1 + 4
