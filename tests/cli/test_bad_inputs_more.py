"""Bad input, third table: paths that name nothing (empty, or holding a NUL byte), a folder
given where a run directory was meant and the reverse, run.json fields of the wrong type
that readers used unchecked, a stale or garbled ZLH_PARENT_PID, and the Python API's values
that ended in a bare TypeError / ValueError.

Same contract as test_bad_inputs.py: one line on stderr starting `zlh: `, the exit code, no
traceback, nothing left behind in the workspace.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

import harness
from harness.cli import main
from harness.common.errors import UsageError
from harness.telemetry import tsv

from fake_runs import fake_run
from test_bad_inputs import FAST, SH, check_bad_input


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_inputs_more")
    (root / "sh").mkdir()
    (root / "sh" / "add.yaml").write_text("add: [[64]]\n")
    rec = fake_run(root, "runs/rec")
    rep = fake_run(root, "runs/rep", mode="replay", replay_from=rec)
    (root / "r").mkdir()
    for key, path in (("rec", rec), ("rep", rep)):
        (root / "r" / key).symlink_to(path)
    for name, change in (("sha", {"autotune_replay_records_sha256": 5}),
                         ("reason", {"reason": ["disk", "full"]}),
                         ("finished", {"finished_at": {"t": 1}})):
        target = root / "bad" / name
        shutil.copytree(rep, target)
        info = json.loads((target / "run.json").read_text())
        info.update(change)
        (target / "run.json").write_text(json.dumps(info))
    (root / "rounds.yaml").write_text("ops: [add]\nenv_b: {X: '1'}\nrounds: 100000000000000000000\n")
    (root / "abroot").mkdir()
    (root / "abroot" / "report.json").write_text('{"schema_version": 1, "ops": []}')
    return root


def R(*argv, code, first, env=None, id=None):
    return pytest.param(list(argv), code, first, env or {}, id=id or " ".join(argv)[:70])


BENCH = ["bench", "add", *SH, *FAST]
ROWS = [
    # ---- run.json fields readers used without a check ---------------------------------------
    R("ab", "r/rec", "bad/sha", code=2,
      first="field autotune_replay_records_sha256: expected a string, got 5"),
    R("show", "bad/reason", code=2, first="run.json: field reason: expected a string"),
    R("ab", "r/rec", "bad/finished", code=2, first="field finished_at: expected a string"),
    # ---- empty paths: not the current directory ------------------------------------------------
    R("ab", "r/rec", "", code=2, first="RUN_B: an empty path", id="ab RUN ''"),
    R("ab", "", "", code=2, first="RUN_A: an empty path", id="ab '' ''"),
    R("show", "", code=2, first="RUN_DIR: an empty path", id="show ''"),
    R("fingerprint", "", code=2, first="RUN_DIR: an empty path", id="fingerprint ''"),
    R("report", "", code=2, first="ROOT: an empty path", id="report ''"),
    R("ops", "--flaggems-dir", "", code=2, first="'--flaggems-dir': an empty value"),
    R("ops", "--vllm", "", code=2, first="'--vllm': an empty value"),
    R(*BENCH, "--flaggems-dir", "", code=2, first="'--flaggems-dir': an empty value"),
    # ---- a NUL byte (only an in-process caller can pass one) ------------------------------------
    *[R(*argv, code=2, first="holds a NUL byte", id=" ".join(argv).replace("\0", "\\0"))
      for argv in (["show", "a\0b"], ["report", "a\0b"], ["fingerprint", "a\0b"],
                   ["ab", "r/rec", "a\0b"], ["ab", "--replay", "a\0b"],
                   ["ab", "r/rec", "r/rep", "--root", "a\0b"],
                   ["ab", "r/rec", "r/rep", "--noise-floor", "a\0b"],
                   ["ab", "add", "--env-b", "X=1", *SH, "--recipe", "a\0b"],
                   ["ops", "--flaggems-dir", "a\0b"], [*BENCH, "--out", "a\0b"],
                   ["bench", "add", *FAST, "--shapes", "a\0b"], [*BENCH, "--replay", "a\0b"])],
    # ---- a folder where a run directory was meant, and the reverse ------------------------------
    R("show", "runs/rec", code=2, first="runs/rec is not a run directory (no run.json; it holds "
                                    "runs, e.g. runs/rec/add_"),
    R("show", "abroot", code=2, first="(no run.json; it is an A/B root: `zlh report abroot`"),
    R("ab", "abroot", "r/rep", code=2, first="it is an A/B root"),
    R("report", "r/rec", code=2, first="r/rec is a run directory, not an A/B root: `zlh show"),
    R(*BENCH, "--out", "r/rec", code=2,
      first="--out r/rec is a run directory (it holds run.json), not a folder to write under"),
    R("ab", "add", "--env-b", "X=1", *SH, *FAST, "--root", "r/rec", code=2,
      first="--root r/rec is a run directory"),
    R("ab", "r/rec", "r/rep", "--root", "r/rec", code=2, first="--root r/rec is a run direc"),
    # ---- counts past any run that ends: a typo, refused before anything runs ------------------
    R(*BENCH, "--repeat", "100000", code=2, first="'--repeat': 100000 is not in the range 1<=x<=1000"),
    R(*BENCH, "--retry-throttled", "10" * 10, code=2, first="'--retry-throttled'"),
    R("ab", "add", "--env-b", "X=1", *SH, *FAST, "--rounds", "1" * 21, code=2,
      first="'--rounds': 111111111111111111111 is not in the range 1<=x<=1000"),
    R("calibrate", "add", *SH, "--rounds", "1001", code=2, first="'--rounds': 1001 is not in"),
    R("ab", "--recipe", "rounds.yaml", code=2,
      first="rounds must be a whole number from 1 to 1000 or auto, got 100000000000000000000"),
    # ---- a scrub pattern that matches the empty string: every IR alike, or nothing removed -----
    R("ab", "r/rec", "r/rep", "--scrub", ".*", code=2,
      first="bad scrub pattern '.*': it matches the empty string"),
    R("ab", "r/rec", "r/rep", "--scrub", "", code=2, first="bad scrub pattern ''", id="scrub ''"),
    # ---- ZLH_PARENT_PID that is no process id ---------------------------------------------------
    *[R("show", "r/rec", code=2, env={"ZLH_PARENT_PID": value},
        first="ZLH_PARENT_PID=", id=f"ZLH_PARENT_PID={value!r}")
      for value in ("abc", "0", "-1", "\u0665", "99999999999999999999999")],
]


@pytest.mark.parametrize("argv, code, first, env", ROWS)
def test_bad_input(workspace, monkeypatch, argv, code, first, env):
    check_bad_input(workspace, monkeypatch, argv, code, first, env, only_line=True)


@pytest.mark.e2e
def test_a_parent_pid_that_is_not_the_parent_is_one_line_in_a_real_process(workspace):
    """ZLH_PARENT_PID naming a process that is not this one's parent (the zlh command that
    started it ended, or a leftover export): a line and 143, not a silent SIGTERM."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), ZLH_PARENT_PID="1")
    proc = subprocess.run([sys.executable, "-m", "harness", "show", "r/rec"], cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 143, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith("zlh: ZLH_PARENT_PID=1: the zlh command "
                                                   "that started this one has ended"), lines


def test_columns_in_other_scripts_digits_do_not_cut_lines(monkeypatch):
    monkeypatch.setenv("COLUMNS", "\u0665")           # '٥'.isdigit() is True
    result = CliRunner().invoke(main, ["ops", "--adapter", "builtin"])
    assert result.exit_code == 0
    assert "softmax" in result.stdout.split()


def test_api_counts_past_any_run_that_ends_are_refused():
    from harness.run.options import BenchOptions
    with pytest.raises(UsageError, match="option repeat: 5000 is above its maximum 1000"):
        BenchOptions.from_flat(repeat=5000)
    with pytest.raises(UsageError, match="rounds must be an integer from 1 to 1000"):
        harness.compare_callables(lambda: None, lambda: None, rounds=10 ** 6)
    from harness.common.fields import Fields        # what campaign.json's rounds goes through
    with pytest.raises(UsageError, match="rounds: expected an integer from 1 to 1000"):
        Fields({"rounds": 10 ** 20}, "campaign.json").int("rounds", low=1, high=1000)


def test_telemetry_points_without_a_finite_time_are_skipped(tmp_path):
    row = "\t".join(["{t}", "0", "0", "1500", "800", "40", "100", "50", "none", "nvml", "3"])
    (tmp_path / tsv.FILE).write_text(tsv.header() + "".join(
        row.format(t=t) + "\n" for t in ("nan", "inf", "12.5")))
    assert [p.time for p in tsv.read(tmp_path / tsv.FILE)] == [12.5]


# ---- the Python API --------------------------------------------------------------------------
@pytest.mark.parametrize("keywords, message", [
    ({"out": "a\0b"}, "option out: 'a\\x00b' holds a NUL byte"),
    ({"adapter": "flaggems", "flaggems_dir": "a\0b"}, "option flaggems_dir"),
    ({"shapes": "a\0b"}, "option shapes"),
    ({"case_shard": "\u00b2/3"}, "option case_shard: expected k/N"),
])
def test_bench_refuses_values_no_path_can_hold(tmp_path, keywords, message):
    options = {"adapter": "builtin", "backend": "cpu", "out": str(tmp_path / "runs"), **keywords}
    with pytest.raises(UsageError, match=message.replace("\\", "\\\\").replace("(", r"\(")):
        harness.bench("add", **options)
    assert not (tmp_path / "runs").exists()


def test_compare_refuses_paths_that_name_nothing(workspace, tmp_path):
    rec, rep = workspace / "r" / "rec", workspace / "r" / "rep"
    for run_b, message in (("a\0b", "run_b 'a\\x00b': a path cannot hold a NUL byte"),
                           ("", "run_b: an empty path")):
        with pytest.raises(UsageError) as info:
            harness.compare(rec, run_b)
        assert message in info.value.message
    with pytest.raises(UsageError, match="holds? a NUL byte|cannot hold a NUL byte"):
        harness.compare(rec, rep, root=str(tmp_path / "a\0b"))
    with pytest.raises(UsageError, match="is a run directory"):
        harness.compare(rec, rep, root=rec)


def test_measure_names_an_unknown_keyword():
    with pytest.raises(UsageError, match="unknown timing option bogus"):
        harness.measure(lambda: None, backend="cpu", bogus=1)
    with pytest.raises(UsageError, match="unknown timing option rule"):
        harness.measure(lambda: None, backend="cpu", rule=harness.StoppingRule())


@pytest.mark.parametrize("make, message", [
    (lambda: harness.StoppingRule(min_samples=-1), "min_samples must be an integer >= 1"),
    (lambda: harness.StoppingRule(min_samples="5"), "min_samples must be an integer >= 1"),
    (lambda: harness.StoppingRule(min_time_ms=math.nan), "min_time_ms must be a finite"),
    (lambda: harness.StoppingRule(target_rel_err=-0.1), "target_rel_err must be a finite"),
    (lambda: harness.Budget(warmup_ms=math.nan), "warmup_ms must be a finite number >= 0"),
    (lambda: harness.Budget(warmup_ms=math.inf), "warmup_ms must be a finite number >= 0"),
    (lambda: harness.Budget(max_unroll=0), "max_unroll must be an integer >= 1"),
    (lambda: harness.Budget(estimate_calls=True), "estimate_calls must be an integer >= 1"),
])
def test_rule_and_budget_refuse_values_out_of_range(make, message):
    with pytest.raises(UsageError, match=message) as info:
        make()
    assert isinstance(info.value, ValueError) and info.value.exit_code == 2
