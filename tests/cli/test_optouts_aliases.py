"""Opt-outs and aliases: --no-autotune-hooks (caliber autotune_mode uncontrolled; with
--replay, or where a side replays another, refused), --gpus for --devices, `nv` for cuda,
a FlagGems checkout found without --flaggems-dir where unambiguous (and said which), and an
absolute node id naming its checkout."""
from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

import adapters
import backends
from adapters.flaggems import checkout
from conftest import FIXTURES, budget_args
from harness.cli import main
from harness.common.errors import PreflightError

FAKE = FIXTURES / "fake_flaggems"
FAST = [*budget_args(max_time_ms=10), "--backend", "cpu"]


@pytest.fixture(autouse=True)
def no_named_checkout(monkeypatch):
    monkeypatch.delenv("FLAGGEMS_DIR", raising=False)
    saved = list(sys.path)
    yield
    sys.path[:] = saved
    for name in list(sys.modules):
        if name.split(".")[0] in ("flag_gems", "benchmark"):
            del sys.modules[name]


def test_no_autotune_hooks_runs_uncontrolled_and_refuses_replay(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64]]\n")
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", *FAST,
                                       "--shapes", str(shapes), "--no-autotune-hooks",
                                       "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["caliber"]["autotune_mode"] == "uncontrolled"
    assert info["options"]["autotune_hooks"] is False
    assert not (run_dir / "autotune" / "records.json").exists()
    result = CliRunner().invoke(main, ["bench", "add", "--adapter", "builtin", *FAST,
                                       "--no-autotune-hooks", "--replay", str(run_dir),
                                       "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "--no-autotune-hooks switches off" in result.output
    result = CliRunner().invoke(main, ["ab", "add", "--adapter", "builtin", *FAST,
                                       "--switch", "ZLH_BUILTIN_SLOW=0,1",
                                       "--no-autotune-hooks", "--root", str(tmp_path / "ab")])
    assert result.exit_code == 2 and "zlh ab replays side A's record" in result.output
    assert not (tmp_path / "ab").exists()


def test_gpus_is_devices_and_nv_is_cuda(tmp_path):
    assert backends.backend_for("nv").name == "cuda"
    result = CliRunner().invoke(main, ["batch", "--adapter", "builtin", *FAST, "--ops", "add",
                                       "--gpus", "7", "--out", str(tmp_path / "b")])
    assert result.exit_code == 3 and "--devices 7: backend cpu sees devices 0" in result.output


def test_a_checkout_is_found_where_unambiguous_and_said_which(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    adapter = adapters.get_adapter("flaggems")
    with pytest.raises(PreflightError, match="none found beside an importable flag_gems"):
        adapter.root()
    (tmp_path / "FlagGems").symlink_to(FAKE)
    adapter = adapters.get_adapter("flaggems")
    assert adapter.root() == FAKE.resolve()
    assert adapter.identity()["found_by"] == "./FlagGems"
    sys.path.insert(0, str(FAKE / "src"))          # the importable flag_gems: the same one
    assert adapters.get_adapter("flaggems").root() == FAKE.resolve()
    other = tmp_path / "other"
    (other / "benchmark").mkdir(parents=True)
    monkeypatch.setattr(checkout, "discover_checkouts", lambda: [
        ("the importable flag_gems", FAKE.resolve()), ("./FlagGems", other)])
    with pytest.raises(PreflightError, match="more than one in sight"):
        adapters.get_adapter("flaggems").root()
    adapter = adapters.get_adapter("flaggems", flaggems_dir=str(FAKE))   # named: no search
    assert adapter.root() == FAKE.resolve() and adapter.found["flaggems"] == "--flaggems-dir"


def test_an_absolute_node_id_names_its_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    node = f"{FAKE.resolve()}/benchmark/test_softmax.py::test_softmax"
    result = CliRunner().invoke(main, ["bench", node, "--adapter", "flaggems", *FAST,
                                       "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    identity = json.loads((run_dir / "run.json").read_text())["adapter"]
    assert identity["flaggems_dir"] == str(FAKE.resolve())
    assert identity["found_by"] == "the op's node id"
    assert f"FlagGems checkout: {FAKE.resolve()} (the op's node id)" in result.output
