"""`zlh history`: roots lined up by build date, and the step rule (a build whose range over
shapes excludes the previous build's median, by more than STEP_PCT; never between two
noise floors)."""
from __future__ import annotations

from click.testing import CliRunner

import report_roots as R
from harness.cli import main
from harness.report.history import is_step, line_up, load
from harness.report.model import OpEntry


def _e(delta, low=None, high=None, noise=False):
    return OpEntry("x", "NO_IR_DIFF" if noise else "IR_CHANGED", delta=delta, low=low,
                   high=high, noise=noise)


def test_the_step_rule():
    assert is_step(_e(0.0, -1, 1), _e(8.0, 7, 9))                 # interval leaves 0 behind
    assert not is_step(_e(0.0, -1, 1), _e(3.0, -1, 9))            # still covers the old median
    assert not is_step(_e(0.0), _e(0.8, 0.7, 0.9))                # within STEP_PCT
    assert not is_step(_e(0.0, noise=True), _e(9.0, 8, 10, noise=True))   # identical code
    assert is_step(_e(0.0, noise=True), _e(9.0, 8, 10))
    assert not is_step(None, _e(5.0, 4, 6)) and not is_step(_e(None), _e(5.0, 4, 6))


def test_history_flags_the_build_where_an_op_changed(tmp_path):
    """Three builds; op0003 (a noise floor op in build 1) moves by 30 % in build 3 only."""
    roots = [R.screen_root(tmp_path / f"s{k}", 8, seed=k, compiler=f"3.{k}.0",
                           started=R.T0 + 1000 * k,
                           shift={"op0003": 30.0} if k == 2 else None) for k in (2, 0, 1)]
    builds, ops = line_up(load(roots))
    assert [b.label for b in builds] == ["triton 3.0.0", "triton 3.1.0", "triton 3.2.0"]
    by_op = {h.op: h for h in ops}
    assert by_op["op0003"].steps == [2]
    assert by_op["op0005"].steps == []         # a noise floor on every build
    assert ops[0].steps                        # ops with a step come first
    result = CliRunner().invoke(main, ["history", *map(str, roots)])
    assert result.exit_code == 0, result.output
    assert "build 3: triton 3.2.0" in result.output and "op0003" in result.output
    page = tmp_path / "h.html"
    result = CliRunner().invoke(main, ["history", *map(str, roots), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert 'class="num step"' in page.read_text()


def test_history_refuses_a_batch_root(tmp_path):
    batch = R.batch_root(tmp_path / "b")
    screen = R.screen_root(tmp_path / "s", 3)
    result = CliRunner().invoke(main, ["history", str(screen), str(batch)])
    assert result.exit_code == 2 and "is a batch root" in result.output


def test_history_wants_two_roots_that_exist(tmp_path):
    screen = R.screen_root(tmp_path / "s", 3)
    one = CliRunner().invoke(main, ["history", str(screen)])
    assert one.exit_code == 2 and "name two or more roots" in one.output
    gone = CliRunner().invoke(main, ["history", str(screen), str(tmp_path / "nope")])
    assert gone.exit_code == 2 and "nope: no such folder" in gone.output
