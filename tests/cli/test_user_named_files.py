"""Files named by the user are never replaced or deleted unasked: `shapes check` without a
checkout is one line and writes nothing, it removes only an unmatched-keys file it wrote,
`shapes derive/model --out` and `product reaccount --out` refuse an existing file unless
--force."""
import json

import yaml
from click.testing import CliRunner

from conftest import FIXTURES
from harness.cli import main

FAKE = FIXTURES / "fake_flaggems"
MODEL = {"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
         "num_hidden_layers": 2, "vocab_size": 1000}


def zlh(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line(result, code, words):
    assert result.exit_code == code, result.output
    assert words in result.output and len(result.output.strip().splitlines()) == 1, \
        result.output
    assert "Traceback" not in result.output


def test_shapes_check_without_a_checkout_is_one_line_and_touches_nothing(tmp_path,
                                                                         monkeypatch):
    monkeypatch.delenv("FLAGGEMS_DIR", raising=False)
    shapes = tmp_path / "s.yaml"
    shapes.write_text("softmax: [[4, 4]]\nBlasBenchmark: [[1, 2, 3, 4]]\n")
    mine = tmp_path / "s.unmatched.yaml"
    mine.write_text("my notes\n")
    one_line(zlh("shapes", "check", shapes), 2, "no FlagGems checkout")
    one_line(zlh("shapes", "check", shapes, "--adapter", "flaggems"), 2,
             "no FlagGems checkout")
    assert mine.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.unmatched.yaml", "s.yaml"]


def test_shapes_check_removes_or_replaces_only_its_own_file(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("softmax: [[4, 4]]\nno_such_op: [[3]]\n")
    target = tmp_path / "s.unmatched.yaml"
    target.write_text("my notes\n")
    one_line(zlh("shapes", "check", shapes, "--flaggems-dir", FAKE), 2,
             "was not written by zlh shapes check")
    assert target.read_text() == "my notes\n"
    target.unlink()
    assert zlh("shapes", "check", shapes, "--flaggems-dir", FAKE).exit_code == 1
    assert yaml.safe_load(target.read_text()) == {"no_such_op": [[3]]}
    assert zlh("shapes", "check", shapes, "--flaggems-dir", FAKE).exit_code == 1  # its own
    shapes.write_text("softmax: [[4, 4]]\n")
    result = zlh("shapes", "check", shapes, "--flaggems-dir", FAKE)
    assert result.exit_code == 0 and not target.exists()


def test_shapes_derive_and_model_refuse_an_existing_out_unless_forced(tmp_path):
    config = tmp_path / "model.json"
    config.write_text(json.dumps(MODEL))
    out = tmp_path / "out.yaml"
    for command in (["shapes", "derive", "--flaggems-dir", FAKE],
                    ["shapes", "model", config, "--tokens", "1,16"]):
        out.write_text("keep me\n")
        one_line(zlh(*command, "--out", out), 2, "exists; add --force to replace it")
        assert out.read_text() == "keep me\n"
        result = zlh(*command, "--out", out, "--force")
        assert result.exit_code == 0, result.output
        assert out.read_text() != "keep me\n"


def test_product_reaccount_refuses_an_earlier_reaccount_unless_forced(tmp_path):
    run_root, out = tmp_path / "sealed", tmp_path / "re"
    run_root.mkdir()
    (run_root / "campaign-receipt.json").write_text(json.dumps(
        {"kind": "campaign", "status": "TERMINAL"}))
    out.mkdir()
    (out / "reaccount-matrix.csv").write_text("keep me\n")
    one_line(zlh("product", "reaccount", run_root, "--out", out), 2,
             "already holds a re-account (reaccount-matrix.csv); add --force")
    assert (out / "reaccount-matrix.csv").read_text() == "keep me\n"
    result = zlh("product", "reaccount", run_root, "--out", out, "--force")
    assert "add --force" not in result.output      # past the check (the fake run is refused)
