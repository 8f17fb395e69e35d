"""The geomean speedup carries its interval in every view (text, JSON, HTML), and the
geomean gate reads it: an A/A whose interval reaches 1 passes `geomean:PCT` whatever its
point says."""
from __future__ import annotations

import json

from click.testing import CliRunner

from fake_runs import fake_run
from harness.ab.html import render_html
from harness.cli import main
from harness.measure.measurement import Measurement
from harness.store.results import SUCCESS, Row
from harness.store.rundir import RunDir


def _pair(tmp_path, samples_a, samples_b):
    run_a = fake_run(tmp_path, "a")
    run_b = fake_run(tmp_path, "b", mode="replay", replay_from=run_a)
    for run, samples in ((run_a, samples_a), (run_b, samples_b)):
        RunDir(run).write_results([Row(op="add", dtype="float32", shape=[64], shape_detail="64",
                                       status=SUCCESS, torch=Measurement(samples, "host"),
                                       gems=Measurement(samples, "host"))])
    return str(run_a), str(run_b)


def test_a_noisy_a_a_passes_the_geomean_gate_and_shows_its_interval(tmp_path):
    # B's median is 12 % above A's, but its samples straddle A's: the interval reaches 1
    run_a, run_b = _pair(tmp_path, [1.0, 0.6, 1.4, 0.9, 1.1, 0.7, 1.3],
                         [1.12, 0.65, 1.5, 0.8, 1.2, 0.75, 1.45])
    result = CliRunner().invoke(main, ["ab", run_a, run_b, "--fail-on", "geomean:5%",
                                       "--json"])
    assert result.exit_code == 0, result.output
    (op,) = json.loads(result.stdout)["ops"]
    s = op["summary"]
    assert s["geomean_speedup"] < 0.95 and s["geomean_interval"] == "samples"
    assert s["geomean_ci_low"] < s["geomean_speedup"] < 1.0 < s["geomean_ci_high"], s
    text = CliRunner().invoke(main, ["ab", run_a, run_b])
    assert f"[{s['geomean_ci_low']:.4f}, {s['geomean_ci_high']:.4f}] (95% CI over samples)" \
        in text.output, text.output
    page = render_html(json.loads(result.stdout))
    assert (f"geomean speedup {s['geomean_speedup']:.4f}x [{s['geomean_ci_low']:.4f}, "
            f"{s['geomean_ci_high']:.4f}] (95% CI over samples)") in page


def test_a_clear_regression_trips_the_geomean_gate(tmp_path):
    run_a, run_b = _pair(tmp_path, [1.0, 1.01, 0.99, 1.0, 1.02],
                         [2.0, 2.02, 1.98, 2.0, 2.04])
    result = CliRunner().invoke(main, ["ab", run_a, run_b, "--fail-on", "geomean:5%"])
    assert result.exit_code == 6, result.output
    assert "REGRESSION gate=geomean limit_pct=5 op=add geomean_speedup=0.5000" in result.stderr
