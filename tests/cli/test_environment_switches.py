"""The environment as the user set it: a variable that breaks a library is named (not the
op, not --python-a), zlh's output survives a narrow stream encoding, a side variable the
backend replaces is refused, and a corpus root is resumed only under its own switches."""
import json
import os
import shutil
import subprocess
import sys

from click.testing import CliRunner

import backends

from harness.cli import main
from harness.corpus.campaign import plan_campaign, read_campaign, write_plan
from conftest import FAST, ROOT
from product_fakes import builtin_doc, mutated, write



def zlh(tmp_path, *args, **env):
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=600)


def test_a_variable_a_library_refuses_at_import_is_one_line_naming_it(tmp_path):
    proc = zlh(tmp_path, "bench", "add", "--backend", "cpu", "--out", str(tmp_path / "o"),
               TORCH_LOGS="bogus")
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "PREFLIGHT_FAILED check=environment" in lines[0] and "TORCH_LOGS='bogus'" in lines[0]
    assert not (tmp_path / "o").exists()


def test_batch_output_survives_an_ascii_stream_encoding(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    proc = zlh(tmp_path, "batch", "--adapter", "builtin", "--backend", "cpu", "--ops", "add",
               "--shapes", str(shapes), *FAST, "--out", str(tmp_path / "b"),
               PYTHONIOENCODING="ascii")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout and "CRASH" not in proc.stdout


def ab(tmp_path, *args):
    return CliRunner().invoke(main, ["ab", "add", "--adapter", "builtin", "--backend", "cpu",
                                     *args, "--root", str(tmp_path / "ab")])


def test_a_side_variable_that_breaks_the_interpreter_is_named_not_python_a(tmp_path):
    result = ab(tmp_path, "--env-a", "PYTHONHOME=/nonexistent")
    assert result.exit_code == 3, result.output
    assert "check=environment" in result.output and "PYTHONHOME='/nonexistent'" in result.output
    assert "--python-a" not in result.output and not (tmp_path / "ab").exists()
    result = ab(tmp_path, "--env-b", "TORCH_LOGS=bogus")      # torch refuses it at import
    assert result.exit_code == 3, result.output
    assert "side B's environment (TORCH_LOGS='bogus')" in result.output
    assert "cannot import torch: ValueError: Invalid log settings: bogus" in result.output


def test_a_side_variable_the_backend_replaces_is_refused(tmp_path):
    for args in (["--env-a", "TRITON_INTERPRET=0"], ["--switch", "TRITON_INTERPRET=1,0"]):
        result = ab(tmp_path, *args)
        assert result.exit_code == 2, result.output
        assert "TRITON_INTERPRET=0 would not apply: backend cpu sets TRITON_INTERPRET=1" in \
            result.output
        assert not (tmp_path / "ab").exists()


def test_a_batch_resumed_under_another_switch_is_refused_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.delenv("ZLH_BUILTIN_SLOW", raising=False)
    root = tmp_path / "b"
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", "--backend", "cpu",
                                       "--ops", "add", "--shapes", str(shapes), *FAST,
                                       "--out", str(root)])
    assert result.exit_code == 0, result.output
    assert json.loads((root / "batch.json").read_text())["env"] == {
        k: v for k, v in os.environ.items() if k.startswith(("TRITON_", "ZLH_"))
        and k != "ZLH_PARENT_PID"}
    monkeypatch.setenv("ZLH_BUILTIN_SLOW", "1")
    result = CliRunner().invoke(main, ["batch", "--resume", str(root)])
    assert result.exit_code == 2
    assert "ZLH_BUILTIN_SLOW: unset -> '1'" in result.output and "--allow-env-change" in \
        result.output
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "--allow-env-change"])
    assert result.exit_code == 0, result.output
    doc = json.loads((root / "batch.json").read_text())
    assert doc["env"]["ZLH_BUILTIN_SLOW"] == "1"
    assert doc["env_changes"][0]["to"]["ZLH_BUILTIN_SLOW"] == "1"
    assert "ZLH_BUILTIN_SLOW" not in doc["env_changes"][0]["from"]
    # the new values are the root's now: a later resume under them goes on
    assert CliRunner().invoke(main, ["batch", "--resume", str(root)]).exit_code == 0
    result = CliRunner().invoke(main, ["batch", "--ops", "add", "--allow-env-change",
                                       "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "applies to --resume only" in result.output


def test_a_screen_resumed_under_another_switch_is_refused(tmp_path, monkeypatch, corpus_roots):
    """(A copy of conftest's screen: `--ops add --switch ZLH_BUILTIN_SLOW=0,1`, made without
    ZLH_SCREEN_PROBE.)"""
    monkeypatch.delenv("ZLH_SCREEN_PROBE", raising=False)
    root = shutil.copytree(corpus_roots / "screen", tmp_path / "s", symlinks=True)
    assert "ZLH_SCREEN_PROBE" not in json.loads((root / "A/batch.json").read_text())["env"]
    monkeypatch.setenv("ZLH_BUILTIN_SLOW", "1")       # both sides set it: not a change
    monkeypatch.setenv("ZLH_SCREEN_PROBE", "x")
    result = CliRunner().invoke(main, ["screen", "--resume", str(root)])
    assert result.exit_code == 2, result.output
    assert "ZLH_SCREEN_PROBE: unset -> 'x'" in result.output
    assert "ZLH_BUILTIN_SLOW" not in result.output
    # a campaign over that screen records its switches too, and its resume is checked
    monkeypatch.delenv("ZLH_SCREEN_PROBE")
    plan = plan_campaign(tmp_path / "c", root, [0], 1, [], ("NO_TRITON",), timeout_s=120)
    write_plan(plan)
    assert read_campaign(tmp_path / "c").env == plan.env and "ZLH_SCREEN_PROBE" not in plan.env
    monkeypatch.setenv("ZLH_SCREEN_PROBE", "x")
    result = CliRunner().invoke(main, ["campaign", "--resume", str(tmp_path / "c"), "--dry-run"])
    assert result.exit_code == 2 and "ZLH_SCREEN_PROBE: unset -> 'x'" in result.output
    result = CliRunner().invoke(main, ["campaign", "--resume", str(tmp_path / "c"), "--dry-run",
                                       "--allow-env-change"])
    assert result.exit_code == 0, result.output


def test_the_cpu_backend_says_when_it_replaces_triton_interpret(monkeypatch, caplog):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with caplog.at_level("WARNING", logger="zlh"):
        backends.get_backend("cpu").activate_env()
    assert os.environ["TRITON_INTERPRET"] == "1"
    assert "TRITON_INTERPRET=0 ignored: backend cpu" in caplog.text


def test_a_product_cell_value_the_backend_replaces_is_a_violation(tmp_path):
    doc = mutated(builtin_doc(tmp_path),
                  lambda d: d["protocol"]["cells"][2]["env"].update(TRITON_INTERPRET="0"))
    result = CliRunner().invoke(main, ["product", "prepare", str(write(tmp_path / "m.json", doc)),
                                       "--selection", "canary", "--dry-run"])
    assert result.exit_code == 2
    assert "protocol.cells[2].env.TRITON_INTERPRET: backend cpu sets TRITON_INTERPRET=1" in \
        result.output
