"""Bad input, second table: documents that parse but cannot be trusted (a key given twice,
nesting without end, a YAML alias to itself), special files where a file is expected (a FIFO
would block the read forever), fields of the wrong type inside run directories, records,
noise floors and receipts, environment assignments that lose a value, interpreters that are
not Python, and a root that already holds an A/B.

Same contract as test_bad_inputs.py: one first line on stderr starting `zlh: ` (or `!!! `),
the exit code, no traceback, and nothing left behind in the workspace.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

from fake_runs import fake_run
from test_bad_inputs import FAKE_FG, FAST, SH, snapshot

NESTED = "[" * 5000 + "]" * 5000
SHAPES = {
    "add.yaml": "add: [[64]]\n",
    "dupkey.yaml": "add: [[64]]\nsoftmax: [[4, 64]]\nadd: [[32]]\n",
    "alias.yaml": "add: &a [*a]\n",
    "deep.yaml": f"add: {NESTED}\n",
    "extra.yaml": "add: {shapes: [[64]], shape_dsc: N}\n",
}
RECIPES = {
    "dupkey.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nops: [mm]\n",
    "deep.yaml": f"ops: {NESTED}\n",
    "envnul.yaml": "ops: [add]\nenv_a: {X: \"a\\0b\"}\nenv_b: {X: '1'}\n",
}
FLOORS = {
    "opsint.json": {"kind": "calibration", "ops": [1]},
    "shapeint.json": {"kind": "calibration", "ops": [{"op": "add", "shapes": [5]}]},
    "occstr.json": {"kind": "calibration", "ops": [{"op": "add", "shapes": [
        {"dtype": "float32", "shape_detail": "64", "occurrence": "x", "noise_max_pct": 1}]}]},
}
CONFIG = {"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_stages": 1, "num_ctas": 1,
          "pre_hook": False}
RECORDS = {"cfgstr": "x", "kwlist": dict(CONFIG, kwargs=[1]),
           "warpsstr": dict(CONFIG, num_warps="four")}


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _copy(root: Path, src: Path, name: str) -> Path:
    target = root / "bad" / name
    shutil.copytree(src, target)
    return target


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_inputs_rest")
    for folder, files in (("sh", SHAPES), ("rc", RECIPES)):
        (root / folder).mkdir()
        for name, text in files.items():
            (root / folder / name).write_text(text)
    (root / "nf").mkdir()
    for name, doc in FLOORS.items():
        (root / "nf" / name).write_text(json.dumps({"schema_version": 1, **doc}))
    os.mkfifo(root / "fifo")
    (root / "mf").mkdir()
    (root / "mf" / "dupkey.json").write_text('{"schema_version": 1, "schema_version": 1}')
    (root / "mf" / "deep.json").write_text('{"a": ' + NESTED + "}")
    (root / "model.json").write_bytes(b"\xff\xfe{}")
    for name, value in (("zero", 0), ("text", "x"), ("negative", -64)):
        (root / f"model_{name}.json").write_text(json.dumps(
            {"hidden_size": 64, "num_attention_heads": value, "intermediate_size": 128,
             "vocab_size": 256}))
    shutil.copytree(FAKE_FG, root / "fg")
    (root / "fg" / "benchmark" / "core_shapes.yaml").write_text("softmax: [[1, 2]\n")
    (root / "oldab").mkdir()
    (root / "oldab" / "report.json").write_text('{"schema_version": 1, "ops": []}')
    rec = fake_run(root, "fx/rec")
    rep = fake_run(root, "fx/rep", mode="replay", replay_from=rec)
    (root / "r").mkdir()
    for key, path in (("rec", rec), ("rep", rep)):
        (root / "r" / key).symlink_to(path)
    _edit(_copy(root, rep, "versions") / "run.json", lambda d: d.update(versions="x"))
    _edit(_copy(root, rep, "device") / "run.json", lambda d: d.update(device="x"))
    _edit(_copy(root, rep, "repeat") / "run.json", lambda d: d["caliber"].update(repeat="x"))
    _edit(_copy(root, rec, "reprec") / "run.json", lambda d: d["caliber"].update(repeat="x"))
    _edit(_copy(root, rec, "nocal") / "run.json", lambda d: d.pop("caliber"))
    text = (_copy(root, rep, "nan") / "run.json").read_text()
    (root / "bad" / "nan" / "run.json").write_text(text.replace('"warmup_ms": 1.0',
                                                                '"warmup_ms": NaN'))
    (_copy(root, rep, "dupkey") / "run.json").write_text(text[:-2] + ', "op": "mm"}\n')
    row = json.loads((rep / "results.jsonl").read_text())
    for name, change in (("detail", {"shape_detail": ["64"]}), ("status", {"status": 5}),
                         ("occurrence", {"occurrence": -1}), ("samples", {"gems": {
                             "timer": "host", "samples_ms": ["x"]}})):
        (_copy(root, rep, name) / "results.jsonl").write_text(json.dumps({**row, **change}))
    (_copy(root, rep, "rowdeep") / "results.jsonl").write_text('{"a": ' + NESTED + "}\n")
    for name, config in RECORDS.items():
        records = {"schema_version": 1, "kernels": {"k": {"(64,)": config}}}
        (_copy(root, rec, f"rec_{name}") / "autotune" / "records.json").write_text(
            json.dumps(records))
    (_copy(root, rec, "rec_table") / "autotune" / "records.json").write_text(
        '{"schema_version": 1, "kernels": {"k": "x"}}')
    return root


def R(*argv, code, first, id=None):
    return pytest.param(list(argv), code, first, id=id or " ".join(argv)[:70])


BENCH = ["bench", "add", *SH, *FAST]
SIDES = ["--env-b", "ZLH_BUILTIN_SLOW=1", *SH, *FAST]
ROWS = [
    # ---- documents that parse but cannot be trusted ---------------------------------------
    R("bench", "add", "--shapes", "sh/dupkey.yaml", *FAST, code=2,
      first="is not valid YAML at line 3: key 'add' appears twice (first at line 1"),
    R("bench", "add", "--shapes", "sh/alias.yaml", *FAST, code=2,
      first="a YAML alias refers to the node that contains it"),
    R("bench", "add", "--shapes", "sh/deep.yaml", *FAST, code=2, first="nested more than"),
    R("bench", "add", "--shapes", "sh/extra.yaml", *FAST, code=2,
      first="'add' has an unknown key shape_dsc (an entry takes shapes and shape_desc)"),
    R("shapes", "check", "sh/dupkey.yaml", code=2, first="key 'add' appears twice"),
    R("ab", "--recipe", "rc/dupkey.yaml", code=2, first="key 'ops' appears twice"),
    R("ab", "--recipe", "rc/deep.yaml", code=2, first="nested more than"),
    R("ab", "--recipe", "rc/envnul.yaml", code=2,
      first="env_a.X: an environment variable cannot hold a NUL byte"),
    R("product", "prepare", "mf/dupkey.json", "--selection", "canary", "--dry-run", code=2,
      first="key 'schema_version' appears twice in one object"),
    R("product", "prepare", "mf/deep.json", "--selection", "canary", "--dry-run", code=2,
      first="nested more than"),
    R("shapes", "model", "model.json", "--tokens", "1", "--out", "m.yaml", code=2,
      first="model config model.json is not JSON or YAML"),
    *[R("shapes", "model", f"model_{name}.json", "--tokens", "1", "--out", "m.yaml", code=2,
        first=f"model config num_attention_heads={value} is not a whole number >= 1")
      for name, value in (("zero", "0"), ("text", "'x'"), ("negative", "-64"))],
    # ---- a checkout whose core_shapes.yaml is broken: the checkout fails, not every case ----
    R("shapes", "derive", "--flaggems-dir", "fg", "--out", "d.yaml", code=2,
      first="core_shapes.yaml is not valid YAML at line 2"),
    R("bench", "softmax", "--flaggems-dir", "fg", *FAST, code=3,
      first="PREFLIGHT_FAILED check=flaggems_dir"),
    # ---- a FIFO where a file is read: refused, not waited on --------------------------------
    R("ab", "--recipe", "fifo", code=2, first="recipe fifo cannot be read: not a regular file"),
    R("ab", "add", *SIDES, "--noise-floor", "fifo", code=2,
      first="--noise-floor fifo cannot be read: not a regular file"),
    R("ab", "--env-b", "X=1", *SH, "--ops-file", "fifo", code=2,
      first="ops file fifo cannot be read: not a regular file"),
    R("product", "prepare", "fifo", "--selection", "canary", "--dry-run", code=2,
      first="manifest fifo: cannot be read (not a regular file"),
    R("shapes", "model", "fifo", "--tokens", "1", "--out", "m.yaml", code=2,
      first="model config fifo cannot be read: not a regular file"),
    # ---- noise floors of another shape ------------------------------------------------------
    R("ab", "r/rec", "r/rep", "--noise-floor", "nf/opsint.json", code=2,
      first="field ops: expected a list of objects, got [1]"),
    R("ab", "r/rec", "r/rep", "--noise-floor", "nf/shapeint.json", code=2,
      first="ops[0]: field shapes: expected a list of objects"),
    R("ab", "r/rec", "r/rep", "--noise-floor", "nf/occstr.json", code=2,
      first="shapes[0]: field occurrence: expected an integer >= 0, got 'x'"),
    # ---- run directories with fields of the wrong type ---------------------------------------
    R("ab", "r/rec", "bad/versions", code=2, first="run.json: field versions: expected an obj"),
    R("show", "bad/device", code=2, first="run.json: field device: expected an object"),
    R("ab", "r/rec", "bad/repeat", code=2,
      first="run.json: caliber: field repeat: expected an integer >= 1, got 'x'"),
    R("ab", "--replay", "bad/reprec", code=2, first="caliber: field repeat: expected an int"),
    R("ab", "r/rec", "bad/nan", code=2,
      first="field caliber.warmup_ms: expected a finite number, got NaN"),
    R("ab", "r/rec", "bad/dupkey", code=2, first="key 'op' appears twice in one object"),
    R("ab", "--replay", "bad/nocal", code=4, first="its run.json has no caliber"),
    R("ab", "r/rec", "bad/detail", code=2,
      first="line 1 is not a result row (field shape_detail: expected a string, got ['64'])"),
    R("ab", "r/rec", "bad/status", code=2, first="field status: expected a string, got 5"),
    R("show", "bad/occurrence", code=2, first="field occurrence: expected an integer >= 0"),
    R("show", "bad/samples", code=2, first="field gems.samples_ms: expected a list of finite"),
    R("show", "bad/rowdeep", code=2, first="line 1 is not a result row (nested more than"),
    # ---- autotune records with configs of the wrong type -----------------------------------
    R(*BENCH, "--replay", "bad/rec_cfgstr", code=2, first="field config: expected an object"),
    R(*BENCH, "--replay", "bad/rec_kwlist", code=2, first="field kwargs: expected an object"),
    R(*BENCH, "--replay", "bad/rec_warpsstr", code=2,
      first="field num_warps: expected an integer >= 0, got 'four'"),
    R(*BENCH, "--replay", "bad/rec_table", code=2,
      first="kernel k: expected an object of key -> config, got 'x'"),
    R("ab", "--replay", "bad/rec_cfgstr", code=2, first="field config: expected an object"),
    # ---- environment assignments that would lose a value ------------------------------------
    R("ab", "add", "--env-a", "X=1", "--env-a", "X=2", "--env-b", "X=1", *SH, code=2,
      first="--env-a: X is given twice (X=1 and X=2); give it once"),
    R("ab", "add", "--switch", " =0,1", *SH, code=2, first="--switch expects NAME=A_VALUE"),
    # ---- a root that already holds an A/B -----------------------------------------------------
    R("ab", "add", *SIDES, "--root", "oldab", code=2,
      first="--root oldab already holds an A/B (report.json)"),
    R("ab", "r/rec", "r/rep", "--root", "oldab", code=2, first="already holds an A/B"),
    R("ab", "--replay", "r/rec", "--root", "oldab", code=2, first="already holds an A/B"),
    R("calibrate", "add", *SH, *FAST, "--root", "oldab", code=2, first="already holds an A/B"),
    # ---- scrub patterns the regex engine refuses with something else than re.error ---------
    R("fingerprint", "r/rec", "--scrub", "a{99999999999}", code=2,
      first="bad scrub pattern 'a{99999999999}': the repetition number is too large"),
    R("ab", "r/rec", "r/rep", "--scrub", "a{99999999999}", code=2,
      first="bad scrub pattern 'a{99999999999}'"),
    R("ab", "add", *SIDES, "--scrub", "(" * 5000 + ")" * 5000, code=2,
      first="bad scrub pattern '((((", id="ab --scrub nested 5000 deep"),
    # ---- numbers ----------------------------------------------------------------------------
    R("calibrate", "add", *SH, "--timeout", "nan", code=2,
      first="Invalid value for '--timeout': nan is not a finite number"),
    R(*BENCH, "--sweep-devices", "0,1", code=2, first="--sweep-devices needs --parallel-sweep"),
]
if Path("/bin/true").exists():
    ROWS.append(R("ab", "add", *SH, "--python-a", "/bin/true", code=3,
                  first="PREFLIGHT_FAILED check=interpreter --python-a /bin/true (python: "
                        "/bin/true) did not run the import check"))


@pytest.mark.parametrize("argv, code, first", ROWS)
def test_bad_input(workspace, monkeypatch, argv, code, first):
    monkeypatch.chdir(workspace)
    for name in ("FLAGGEMS_DIR", "FLAGGEMS_VLLM_DIR", "ZLH_BUILTIN_SLOW"):
        monkeypatch.delenv(name, raising=False)
    before = snapshot(workspace)
    result = CliRunner().invoke(main, argv)
    assert result.exc_info is None or result.exc_info[0] is SystemExit, \
        "".join(__import__("traceback").format_exception(*result.exc_info))
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == code, result.output
    assert lines and lines[0].startswith(("zlh: ", "!!! ")), result.output
    assert first in lines[0], lines[0]
    assert snapshot(workspace) == before, "left behind: " + ", ".join(
        sorted(snapshot(workspace) - before))
