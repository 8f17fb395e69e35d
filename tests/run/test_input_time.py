"""The adapter's time building inputs is counted apart from the measuring: run.json's
`inputs_s`, the summary line, `zlh show`, and a batch note when it is most of an op's time."""
from __future__ import annotations

import json
import time

import torch

from adapters.base import Case, CaseInputs
from harness.common.errors import EXIT_OK
from harness.corpus.outcome import Attempt, judge, slow_inputs
from harness.run.runner import run_op
from harness.run.show import show_run
from harness.run.table import summary_line
from harness.store.results import SUCCESS
from scripted import ScriptedAdapter, plan_for

YIELD_S, BUILD_S, CALL_S = 0.3, 0.2, 0.02


class SlowInputs(ScriptedAdapter):
    """Two cases: the generator takes YIELD_S before each (inputs made as the case is
    yielded), each `build` BUILD_S; the function under test CALL_S per call."""

    def cases(self, op, dtypes, shapes, level, backend, device):
        for i in range(2):
            time.sleep(YIELD_S)

            def build():
                time.sleep(BUILD_S)
                return CaseInputs((torch.randn(8),))

            def slow(x):
                time.sleep(CALL_S)
                return x * 2

            yield Case(op=op, dtype="float32", shape=[8, i], shape_detail=f"8x{i}",
                       build=build, baseline=lambda x: x * 2, under_test=slow)


def test_run_json_counts_input_building_and_not_the_measuring(tmp_path, fast_rule,
                                                               fast_budget):
    plan = plan_for(["ok", "ok"], tmp_path, fast_rule, fast_budget)
    plan.adapter = SlowInputs(["ok", "ok"])
    result = run_op(plan, "op", echo=lambda _: None)
    assert [r.status for r in result.rows] == [SUCCESS, SUCCESS]
    info = json.loads((result.run_dir / "run.json").read_text())
    # both kinds counted: 2 x yield + at least 2 builds (a case may be built more than once)
    assert info["inputs_s"] >= 2 * (YIELD_S + BUILD_S) - 0.01
    assert all(r.extra["inputs_s"] >= YIELD_S + BUILD_S - 0.01 for r in result.rows)  # per case
    # the under-test calls (CALL_S each, five samples or more per case) are not
    assert info["wall_s"] - info["inputs_s"] >= 2 * 5 * CALL_S
    log = (result.run_dir / "run.log").read_text()
    assert f"of which building inputs {info['inputs_s']:.1f} s" in log
    assert f"(building inputs {info['inputs_s']:.1f} s)" in show_run(str(result.run_dir))


def test_summary_line_names_input_building_from_a_second_on():
    counts = {SUCCESS: 3, "FAILED": 0, "SKIPPED": 1}
    assert summary_line(counts, 0, 40.0, 31.04).endswith(
        "wall 40.0 s, of which building inputs 31.0 s")
    assert "building inputs" not in summary_line(counts, 0, 40.0, 0.4)


def test_batch_notes_an_op_whose_time_went_to_its_inputs(tmp_path, fast_rule, fast_budget):
    plan = plan_for(["ok"], tmp_path, fast_rule, fast_budget)
    run_dir = run_op(plan, "op", echo=lambda _: None).run_dir
    log = tmp_path / "run.log"
    log.write_text("")

    def notes(inputs_s, elapsed_s):
        path = run_dir / "run.json"
        info = json.loads(path.read_text())
        info["inputs_s"] = inputs_s
        path.write_text(json.dumps(info))
        return judge(Attempt(EXIT_OK, elapsed_s, log, run_dir), 60).notes

    assert "inputs=31s" in notes(31.2, 40.0)
    assert not any(n.startswith("inputs=") for n in notes(3.0, 4.0))     # under 5 s
    assert not any(n.startswith("inputs=") for n in notes(12.0, 40.0))   # under half


def test_only_a_number_counts_as_input_time():
    assert slow_inputs(6.0, 10.0)
    assert not slow_inputs("6", 10.0) and not slow_inputs(True, 1.0) and not slow_inputs(None, 1)
