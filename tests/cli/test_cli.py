import json
import os
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main
from conftest import FAST



def zlh(*args):
    return CliRunner().invoke(main, list(args))


def assert_one_line_error(result, code, *fragments):
    assert result.exit_code == code, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("zlh: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]


def test_unknown_op_suggests_close_names(tmp_path):
    result = zlh("bench", "softmx", "--adapter", "builtin", "--backend", "cpu", "--out",
                 str(tmp_path))
    assert_one_line_error(result, 2, "unknown op 'softmx'", "did you mean softmax")
    assert not list(tmp_path.iterdir())          # nothing started


def test_unknown_backend(tmp_path):
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "tpu", "--out", str(tmp_path))
    assert_one_line_error(result, 2, "unknown backend 'tpu'", "cuda", "musa")


def test_unsupported_dtype(tmp_path):
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--dtypes", "int7",
                 "--out", str(tmp_path))
    assert_one_line_error(result, 2, "dtype int7 not supported by op 'add'", "float32")


def test_bfloat16_refused_under_the_interpreter(tmp_path):
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--dtypes",
                 "bfloat16", "--out", str(tmp_path))
    assert_one_line_error(result, 2, "bfloat16 not supported")


def test_missing_shape_file(tmp_path):
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(tmp_path / "nope.yaml"), "--out", str(tmp_path))
    assert_one_line_error(result, 2, "shape file not found")


def test_invalid_shape_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("add: [[1, 2]\n  softmax: :\n")
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(bad),
                 "--out", str(tmp_path))
    assert_one_line_error(result, 2, "not valid YAML", "line")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("add: [[1, -2]]\n")
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(wrong), "--out", str(tmp_path))
    assert_one_line_error(result, 2, "invalid shape")


def test_shape_file_without_the_op(tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("softmax: [[4, 8]]\n")
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(other), "--out", str(tmp_path / "runs"), *FAST)
    assert_one_line_error(result, 2, "no entry for op 'add'")


def test_graph_timer_refused_on_cpu(tmp_path):
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--timer", "graph",
                 "--out", str(tmp_path))
    assert_one_line_error(result, 2, "does not support graph capture")


def test_unavailable_backend_is_a_preflight_failure(tmp_path):
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "musa", "--out", str(tmp_path))
    assert_one_line_error(result, 3, "PREFLIGHT_FAILED check=backend")


def test_bench_softmax_on_cpu_leaves_the_run_directory(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(yaml.safe_dump({"softmax": {"shapes": [[4, 64], [3, 100]],
                                                  "shape_desc": "M, N"}}))
    result = zlh("bench", "softmax", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(shapes), "--out", str(tmp_path / "runs"), *FAST)
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("softmax_")
    assert {p.name for p in run_dir.iterdir()} == {"run.json", "results.jsonl", "results.csv",
                                                   "run.log", "shapes.yaml", "autotune", "ttgir",
                                                   "telemetry.err", "heartbeat"}
    assert "backend cpu: no device telemetry" in (run_dir / "telemetry.err").read_text()
    meta = json.loads((run_dir / "autotune" / "meta.json").read_text())
    assert meta["mode"] == "record" and meta["backend"] == "cpu" and meta["op"] == "softmax"
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "complete"
    assert info["caliber"]["backend"] == "cpu" and info["caliber"]["timer"] == "host"
    assert info["caliber"]["shape_mode"].startswith("file:")
    assert info["caliber"]["autotune_mode"] == "record" and info["autotune_mode"] == "record"
    assert info["caliber"]["tuner_cache"] == "none" and info["caliber"]["ir_capture"] is True
    assert info["ir"]["hooks_ok"] is True and info["ir"]["dumped"] == 0   # interpreter: no IR
    assert not any(p.name.startswith(".cache-") for p in (tmp_path / "runs").iterdir())
    assert info["versions"]["torch"] and info["versions"]["triton"]
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["shape_detail"] for r in rows] == ["4x64", "3x100"]
    assert all(r["status"] == "SUCCESS" and r["gems_ms"] > 0 and r["torch_ms"] > 0 for r in rows)
    assert yaml.safe_load((run_dir / "shapes.yaml").read_text())["softmax"]["shapes"] == \
        [[4, 64], [3, 100]]
    assert "dtype=float32" in result.output        # folded legend
    assert "4x64" in (run_dir / "run.log").read_text()


@pytest.mark.e2e
def test_mm_record_then_replay_in_a_fresh_process(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("mm: [[32, 32, 32], [16, 48, 40]]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    base = [sys.executable, "-m", "harness.cli", "bench", "mm", "--adapter", "builtin",
            "--backend", "cpu", "--shapes", str(shapes), *FAST]
    rec = subprocess.run(base + ["--out", str(tmp_path / "a")], capture_output=True, text=True,
                         env=env, timeout=300)
    assert rec.returncode == 0, rec.stderr
    (run_a,) = (tmp_path / "a").iterdir()
    records = json.loads((run_a / "autotune" / "records.json").read_text())["kernels"]
    (kernel,) = records
    assert kernel.endswith("mm_kernel") and len(records[kernel]) == 2
    rep = subprocess.run(base + ["--out", str(tmp_path / "b"), "--replay", str(tmp_path / "a")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert rep.returncode == 0, rep.stderr
    (run_b,) = (tmp_path / "b").iterdir()
    info = json.loads((run_b / "run.json").read_text())
    assert info["caliber"]["autotune_mode"] == "replay"
    assert sum(info["autotune_fallbacks"].values()) == 0
    assert not (run_b / "autotune" / "records.json").exists()
    # a replay of a replay is refused before anything runs: no third process needed for that
    again = zlh(*base[3:], "--out", str(tmp_path / "c"), "--replay", str(run_b))
    assert again.exit_code == 2 and "replay from that record run" in again.stderr


# A signal mid-run (the run finalised, its measured cases and tuned configs kept):
# test_hardening.py::test_a_signal_leaves_a_complete_run_log.


@pytest.mark.e2e
def test_cli_error_has_no_traceback_in_a_real_process(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "bench", "mx", "--adapter",
                           "builtin", "--backend", "cpu", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "zlh: unknown op 'mx' for adapter builtin; did you mean mm? (known: add, mm, softmax)"]


def test_no_ir_run_and_fingerprint_of_it(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(shapes), "--no-ir", "--out", str(tmp_path / "runs"), *FAST)
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert not (run_dir / "ttgir").exists()
    assert json.loads((run_dir / "run.json").read_text())["caliber"]["ir_capture"] is False
    printed = zlh("fingerprint", str(run_dir))
    assert printed.exit_code == 1 and printed.output.strip() == "no IR"
    shown = zlh("show", str(run_dir))
    assert shown.exit_code == 0 and "ir_capture" in shown.output and "64" in shown.output


def test_backends_command_lists_every_backend():
    result = zlh("backends")
    assert result.exit_code == 0
    for name in ("cuda", "musa", "rocm", "ascend", "cpu", "mthreads"):
        assert name in result.output


def test_progress_goes_to_stderr_and_quiet_silences_it(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    args = ["bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes),
            *FAST]
    loud = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "a")])
    assert loud.exit_code == 0, loud.output
    assert "[1/1] add float32 64 SUCCESS" in loud.stderr
    assert "[1/1] add" not in loud.stdout
    quiet = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert quiet.exit_code == 0 and "[1/1] add" not in quiet.stderr


def test_api_prints_only_through_the_callers_echo(tmp_path, capfd):
    import harness
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    lines, progress = [], []
    run = harness.bench("add", adapter="builtin", backend="cpu", shapes=str(shapes),
                        out=str(tmp_path), echo=lines.append, progress=progress.append,
                        warmup_ms=1, min_samples=3, min_time_ms=0, max_time_ms=20)
    out, err = capfd.readouterr()
    assert "add" not in out and "[1]" not in err
    assert any("zlh bench add" in ln for ln in lines) and len(progress) == 1 \
        and progress[0].startswith("[1/1] add float32 64 SUCCESS ")
    assert run.rows[0].status == "SUCCESS" and run.caliber.timer == "host"


def test_no_nan_or_infinity_in_any_json_written(tmp_path):
    """One sample per case: its relative error is infinite, and must be written as null."""
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(shapes), "--out", str(tmp_path / "runs"), "--warmup-ms", "0",
                 "--min-samples", "1", "--min-time-ms", "0", "--max-time-ms", "0")
    assert result.exit_code == 0, result.output

    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    (run_dir,) = (tmp_path / "runs").iterdir()
    files = list(run_dir.rglob("*.json")) + list(run_dir.rglob("*.jsonl"))
    assert len(files) >= 4
    for path in files:
        for line in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            strict(line)
    row = json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])
    assert row["gems"]["n"] == 1 and row["gems"]["rel_err"] is None


def test_every_backends_visibility_keys_are_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("MTHREADS_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("ASCEND_VISIBLE_DEVICES", "2")
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    result = zlh("bench", "add", "--adapter", "builtin", "--backend", "cpu", "--shapes",
                 str(shapes), "--out", str(tmp_path / "runs"), *FAST)
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    env = json.loads((run_dir / "run.json").read_text())["env"]
    assert env["MTHREADS_VISIBLE_DEVICES"] == "1" and env["ASCEND_VISIBLE_DEVICES"] == "2"
    assert "UNRELATED_VARIABLE" not in env
