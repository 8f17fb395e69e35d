"""A report.json whose op reports were edited or damaged: `zlh report` (text and --html) ends
in one line naming the file, the op report and the field (exit 2), never in a TypeError from
the renderer; an intact report still prints."""
from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from harness.cli import main

ROW = {"variant": "", "dtype": "float32", "shape_detail": "64", "occurrence": 0, "a_ms": 0.84,
       "b_ms": 0.81, "delta_pct": 3.2, "ci_low_pct": -28.5, "ci_high_pct": 35.0,
       "p_value": 0.41, "significant": False, "direction": 0, "interval": "rounds",
       "annotations": [], "timer_a": "host", "timer_b": "host",
       "rounds": {"median_delta_pct": 3.2, "min_delta_pct": 0.7, "max_delta_pct": 5.7,
                  "sign_stable": True, "rounds": 2, "deltas_pct": [5.7, 0.7]},
       "spread_a_pct": 6.1, "spread_b_pct": 1.1, "within_noise": False}
OP = {"op": "add", "caliber": {"backend": "cpu"},
      "sides": {"A": {"run_dir": "a", "label": "A"}, "B": {"run_dir": "b", "label": "B"}},
      "rows": [ROW],
      "unpaired": [{"side": "B", "dtype": "float16", "shape_detail": "64", "status": "FAILED",
                    "reason": "x"}],
      "output_mismatches": [], "markers": [], "caliber_problems": [], "broken_by_b": [],
      "summary": {"n": 1, "geomean_speedup": 1.03, "delta_min_pct": 3.2, "delta_max_pct": 3.2,
                  "delta_median_pct": 3.2, "faster": 0, "slower": 0, "unchanged": 1,
                  "per_round_median_delta_pct": [5.7, 0.7], "sign_unstable": 0,
                  "side_spread_median_pct": {"A": 6.1, "B": 1.1}, "rounds": 2}}


def _set(path, value):
    def edit(op):
        target = op
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


CASES = [
    (["sides"], "x", "ops[0]: field sides: expected an object, got 'x'"),
    (["sides", "A"], None, "ops[0]: sides: field A: expected an object, got None"),
    (["caliber"], None, "ops[0]: field caliber: expected an object, got None"),
    (["op"], 5, "ops[0]: field op: expected a non-empty string, got 5"),
    (["unpaired"], None, "ops[0]: field unpaired: expected a list of objects, got None"),
    (["unpaired", 0], {"side": "B"}, "ops[0]: unpaired[0]: field dtype: expected a value"),
    (["output_mismatches"], [{"round": 1}], "output_mismatches[0]: field dtype: expected"),
    (["broken_by_b"], -1, "ops[0]: field broken_by_b: expected a list of strings, got -1"),
    (["markers"], [1], "ops[0]: field markers: expected a list of strings, got [1]"),
    (["verdict"], [], "ops[0]: field verdict: expected a string, got []"),
    (["summary"], -1, "ops[0]: field summary: expected an object, got -1"),
    (["summary", "n"], "1", "ops[0]: summary: field n: expected an integer >= 0, got '1'"),
    (["summary", "faster"], None, "summary: field faster: expected an integer >= 0, got None"),
    (["summary", "geomean_speedup"], "x", "summary: field geomean_speedup: expected a finite"),
    (["summary", "per_round_median_delta_pct"], "x",
     "summary: field per_round_median_delta_pct: expected a list of numbers or nulls"),
    (["summary", "side_spread_median_pct"], [], "field side_spread_median_pct: expected an obj"),
    (["rows", 0], "x", "ops[0]: rows[0]: expected an object, got 'x'"),
    (["rows", 0, "a_ms"], "x", "ops[0]: rows[0]: field a_ms: expected a finite number, got 'x'"),
    (["rows", 0, "dtype"], None, "rows[0]: field dtype: expected a string, got None"),
    (["rows", 0, "direction"], 7, "rows[0]: field direction: expected -1, 0 or 1, got 7"),
    (["rows", 0, "annotations"], "x", "rows[0]: field annotations: expected a list of strings"),
    (["rows", 0, "rounds"], [], "rows[0]: field rounds: expected an object, got []"),
    (["rows", 0, "rounds", "min_delta_pct"], "x", "rows[0]: rounds: field min_delta_pct"),
]


def _root(tmp_path, edit=None):
    op = copy.deepcopy(OP)
    if edit:
        edit(op)
    root = tmp_path / "ab"
    root.mkdir()
    (root / "report.json").write_text(json.dumps({"schema_version": 1, "ops": [op]}))
    return root


def test_an_intact_report_prints(tmp_path):
    result = CliRunner().invoke(main, ["report", str(_root(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "== add: A=a  B=b" in result.output


@pytest.mark.parametrize("html", [False, True], ids=["text", "html"])
@pytest.mark.parametrize("path,value,fragment", CASES, ids=[c[2][:50] for c in CASES])
def test_a_damaged_op_report_is_one_line(tmp_path, path, value, fragment, html):
    root = _root(tmp_path, _set(path, value))
    result = CliRunner().invoke(main, ["report", str(root), *(["--html"] if html else [])])
    assert result.exc_info is None or result.exc_info[0] is SystemExit, \
        "".join(__import__("traceback").format_exception(*result.exc_info))
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == 2, result.output
    assert lines and lines[0].startswith(f"zlh: {root / 'report.json'}: "), result.output
    assert fragment in lines[0], lines[0]
    assert not (root / "report.html").exists()
