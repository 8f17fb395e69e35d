"""The first `zlh bench` reads well: sides named by role (test / base), interpreter times said
so, flags in letters no wider than the numbers, speedups of an interpreted kernel with their
digits, no `undersampled` flag from the default budgets, progress with a total, a time and an
ETA, and after the tables a line per op and what to do next; the compiler is named."""
from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import CPU_FAST
from harness.cli import main
from harness.measure.measurement import Measurement
from harness.measure.stopping import StoppingRule
from harness.run.table import render_rows
from harness.store.results import Row


def _row(shape, torch_ms, gems_ms, gems_samples=40):
    torch = Measurement(tuple([torch_ms] * 40 + [torch_ms * 50]), "host")
    gems = Measurement(tuple([gems_ms] * gems_samples), "host")
    return Row(op="add", dtype="float32", shape=[shape], shape_detail=str(shape),
               status="SUCCESS", torch=torch, gems=gems, metrics={"gems_gbps": 0.0091})


def test_columns_name_the_sides_by_role_and_say_interpreter_times():
    legend, table = render_rows([_row(1000, 0.00107, 1.31668), _row(4096, 0.0014, 7.385)],
                                interpreted=True)
    header = table.splitlines()[0]
    assert "test ms" in header and "base ms" in header and "test GB/s" in header
    assert "gems" not in table and "torch" not in table
    assert legend.startswith("interpreted (cpu backend)")
    assert "0.00081" in table and "0.0091" in table        # not 0.001 / 0.0
    flags_width = len(header) - len(header.rstrip().rsplit(" ", 1)[0])
    assert flags_width <= len("  test ms"), header          # flags no wider than a number
    assert "flags base/test: o outliers" in table


def test_the_default_budgets_do_not_flag_themselves():
    rule = StoppingRule()
    assert not rule.undersampled(18)       # a slow interpreted case under the 1 s cap
    assert rule.undersampled(9)            # well short of the minimum: flagged
    assert not StoppingRule(min_samples=1).undersampled(1)
    assert StoppingRule(min_samples=3).undersampled(1)


def test_bench_prints_progress_a_summary_and_the_next_step(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64], [128]]\nsoftmax: [[4, 64]]\n")
    result = CliRunner().invoke(main, ["bench", "add", "softmax", *CPU_FAST, "--shapes",
                                       str(shapes), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    out, err = result.stdout, result.stderr
    assert "compiler=triton" in out
    assert "[1/2] add float32 64 SUCCESS" in err and ", eta " in err
    assert "[1/1] softmax float32 4x64 SUCCESS" in err
    assert "interpreted (cpu backend)" in out and "test ms" in out and "gems ms" not in out
    summary = out[out.index("summary (speedup"):].splitlines()
    assert summary[1].lstrip().startswith("add") and "2/2 ok" in summary[1]
    assert summary[2].lstrip().startswith("softmax") and "1/1 ok" in summary[2]
    assert summary[3].startswith("next: zlh show ") and "zlh ab --replay " in summary[3]
    as_json = CliRunner().invoke(main, ["bench", "add", *CPU_FAST, "--shapes", str(shapes),
                                        "--out", str(tmp_path / "j"), "--json"])
    assert as_json.exit_code == 0, as_json.output
    run = json.loads(as_json.stdout)["runs"][0]
    assert run["compiler"]["package"] == "triton" and run["compiler"]["version"]
