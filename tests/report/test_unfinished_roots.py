"""`zlh report` of a corpus root whose command was cut short says what it lacks: the ops
planned but not in its table (counted NOT_FINISHED, with the resume that runs them), and an
ops_status.csv that is not zlh's table is refused instead of read as no op."""
from __future__ import annotations

import json
import signal

from click.testing import CliRunner

from harness.cli import main
from conftest import CPU_FAST


def test_a_batch_cut_short_reports_the_ops_it_did_not_finish(tmp_path):
    out = tmp_path / "b"
    result = CliRunner().invoke(main, ["batch", "--ops", "add", *CPU_FAST, "--out", str(out),
                                       "-q"])
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "batch.json").read_text())
    planned = plan["ops"] + [dict(plan["ops"][0], op="softmax"), dict(plan["ops"][0], op="mm")]
    (out / "batch.json").write_text(json.dumps(dict(plan, ops=planned)))   # as if cut short
    shown = CliRunner().invoke(main, ["report", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "counts: PASS 1, NOT_FINISHED 2" in shown.output
    assert (f"2 of 3 planned ops not finished (softmax, mm): zlh batch --resume {out} runs "
            f"them") in shown.output
    (out / "ops_status.csv").write_text("garbage\n")
    damaged = CliRunner().invoke(main, ["report", str(out)])
    assert damaged.exit_code == 2 and "not the table zlh batch writes" in damaged.output


def test_a_command_gives_back_the_signal_handlers_it_installed():
    """A SIGTERM after the command has ended (the interpreter shutting down) must end the
    process as before, not raise inside an exit callback: the handlers go back."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    result = CliRunner().invoke(main, ["report", "/nonexistent-root"])
    assert result.exit_code == 2
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_campaign_cut_short_before_its_merge_names_the_resume(tmp_path):
    (tmp_path / "campaign.json").write_text("{}")
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert f"zlh campaign --resume {tmp_path} goes on and merges" in result.output, result.output


def test_a_copied_campaign_root_is_titled_by_where_it_is_now(tmp_path):
    import shutil
    from report_roots import campaign_root
    first = campaign_root(tmp_path / "cp1")
    shutil.copytree(first, tmp_path / "cp2")
    shown = CliRunner().invoke(main, ["report", str(tmp_path / "cp2")])
    assert shown.exit_code == 0, shown.output
    assert "== zlh campaign cp2" in shown.output and "cp1" not in shown.output.splitlines()[0]


def test_an_ab_root_cut_short_or_still_running_says_so(tmp_path):
    from harness.common.lock import holding
    from report_roots import ab_root
    root = ab_root(tmp_path / "ab", ops=("softmax",),
                   extra={"plan.json": {"ops": ["softmax", "mm"]}})
    doc = json.loads((root / "report.json").read_text())
    (root / "report.json").write_text(json.dumps(dict(doc, ops_done=["softmax"])))
    shown = CliRunner().invoke(main, ["report", str(root)])
    assert shown.exit_code == 0, shown.output
    assert "NOT_FINISHED 1" in shown.output
    assert f"1 planned op(s) not in the report (mm): cut short; zlh ab --rescore {root}" \
        in shown.output
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "report.json").write_text('{"schema_version": 1, "ops": [], "ops_done": []}')
    (empty / "plan.json").write_text('{"ops": ["softmax"]}')
    from harness.common import lock
    with holding(empty, "ab"):
        held, lock._HELD = lock._HELD, {}                       # as another process sees it
        try:
            running = CliRunner().invoke(main, ["report", str(empty)])
        finally:
            lock._HELD = held
    assert running.exit_code == 1 and "it is still running (zlh ab, pid" in running.output
    cut = CliRunner().invoke(main, ["report", str(empty)])
    assert cut.exit_code == 1 and f"no op finished: zlh ab --rescore {empty}" in cut.output
    # an op whose rounds ended in a failure is no unfinished op: the old line stands
    (empty / "report.json").write_text('{"schema_version": 1, "ops": [], "ops_done": '
                                       '["softmax"]}')
    failed = CliRunner().invoke(main, ["report", str(empty)])
    assert failed.exit_code == 1 and "every op failed or was refused" in failed.output
