"""Bad input, table-driven: every row is a command a user could type, the exit code it must
end with, and a fragment of the first line it must print on stderr.

For every row: no traceback (in-process: no exception but SystemExit escapes the command),
the first stderr line starts with `zlh: ` or `!!! ` (refusals), no `!!!` line on stdout,
and nothing is left behind: the workspace holds exactly the same files before and after
(no run directory, no `runs/ab_*`, no `.cache-*`, no `.ttgir.new-*`, no temp file).

Most rows run in-process through click's CliRunner (fast); `test_bad_input_in_a_real_process`
runs a few as real processes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

from fake_runs import fake_run
from conftest import FAKE_FLAGGEMS, FAST

SH = ["--shapes", "sh/add.yaml"]
SHAPE_FILES = {
    "add.yaml": "add: [[64]]\n",
    "add128.yaml": "add: [[128]]\n",
    "notyaml.yaml": "add: [[1, 2]\n",
    "empty.yaml": "",
    "list.yaml": "- [64]\n",
    "neg.yaml": "add: [[-4]]\n",
    "str.yaml": "add: [[abc]]\n",
    "bool.yaml": "add: [[true]]\n",
    "float.yaml": "add: [[64.5]]\n",
    "emptylist.yaml": "add: []\n",
    "soft.yaml": "softmax: [[4, 64]]\n",
    "mm2.yaml": "mm: [[16, 16]]\n",
    "soft1.yaml": "softmax: [[64]]\n",
    "intkey.yaml": "1: [[4]]\nadd: [[4]]\n",
    "desc.yaml": "add: {shapes: [[4]], shape_desc: [1]}\n",
    "typo.yaml": "add: {shape: [[4]]}\n",
    "nulls.yaml": "add: [[null]]\n",
}
RECIPES = {
    "opsstr.yaml": "ops: add\nswitch: ZLH_BUILTIN_SLOW=0,1\n",
    "roundsstr.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nrounds: two\n",
    "rounds0.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nrounds: 0\n",
    "roundsfloat.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nrounds: 1.5\n",
    "envoff.yaml": "ops: [add]\nenv_a: {ZLH_BUILTIN_SLOW: off}\nenv_b: {ZLH_BUILTIN_SLOW: '1'}\n",
    "envnull.yaml": "ops: [add]\nenv_b: {ZLH_BUILTIN_SLOW: }\n",
    "envlist.yaml": "ops: [add]\nenv_b: [ZLH_BUILTIN_SLOW=1]\n",
    "scrubstr.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nscrub: x\n",
    "scrubbad.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nscrub: ['(']\n",
    "bastr.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nbench_args: --adapter builtin\n",
    "babogus.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nbench_args: [--bogus-flag]\n",
    "notyaml.yaml": "ops: [add\n",
    "list.yaml": "- ops\n",
    "unknown.yaml": "ops: [add]\nroundz: 2\n",
    "switchint.yaml": "ops: [add]\nswitch: 5\n",
    "pybad.yaml": "ops: [add]\npython_a: /nonexistent/python\npython_b: /nonexistent/python\n",
    "slowbanana.yaml": "ops: [add]\nenv_b: {ZLH_BUILTIN_SLOW: banana}\n",
    "badop.yaml": "ops: [addd]\nswitch: ZLH_BUILTIN_SLOW=0,1\n",
}
OPS_FILES = {
    "dtypo.txt": "add::float99\n",
    "twice.txt": "add::float32\nadd::float16\n",
}
FAKE_FG = FAKE_FLAGGEMS
SCREEN_HEAD = "op\top_file\tdtypes\telapsed_a\telapsed_b\tverdict\n"
SCREENS = {
    "noop.tsv": "verdict\telapsed_a\nIR_CHANGED\t1\n",
    "headonly.tsv": "verdict\telapsed_a\n",
    "nul.tsv": SCREEN_HEAD + "ad\x00d\t\tfloat32\t1\t2\tIR_CHANGED\n",
    "dup.tsv": SCREEN_HEAD + "add\t\tfloat32\t1\t2\tIR_CHANGED\n" * 2,
    "empty.tsv": "",
    "cut.tsv": SCREEN_HEAD + "add\t\tfloat32\t1\t2\tIR_CHANGED\nsoftmax\t\tfl\n",
}
REPORTS = {
    "list": "[]",
    "opsstr": '{"schema_version": 1, "ops": "add"}',
    "garbage": "{not json",
    "noops": '{"schema_version": 1, "ops": []}',
    "rowsbad": '{"schema_version": 1, "ops": [{"op": "add", "rows": "x"}]}',
}


def _damaged(root: Path, name: str, base: Path, run_json=None, results=None) -> Path:
    target = root / "bad" / name
    target.mkdir(parents=True)
    (target / "run.json").write_text(run_json if run_json is not None
                                      else (base / "run.json").read_text())
    if results is not None:
        (target / "results.jsonl").write_text(results)
    return target


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_inputs")
    for folder, files in (("sh", SHAPE_FILES), ("rc", RECIPES), ("pt", SCREENS),
                          ("of", OPS_FILES)):
        (root / folder).mkdir()
        for name, text in files.items():
            (root / folder / name).write_text(text)
    (root / "sh" / "binary.yaml").write_bytes(b"\xff\xfe add")
    (root / "pt" / "binary.tsv").write_bytes(b"\xff\xfe op\tverdict\n")
    for name, text in REPORTS.items():
        (root / "rep" / name).mkdir(parents=True)
        (root / "rep" / name / "report.json").write_text(text)
    (root / "rep" / "none").mkdir()
    (root / "afile").write_text("not a directory\n")
    (root / "plain").mkdir()
    (root / "badpy").write_text("#!/bin/sh\nexit 1\n")
    (root / "badpy").chmod(0o755)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    rec = fake_run(root, "fx/recA")
    runs = {
        "recA": rec,
        "repB": fake_run(root, "fx/repB", mode="replay", replay_from=rec),
        "soft": fake_run(root, "fx/soft", op="softmax"),
        "f16": fake_run(root, "fx/f16", mode="replay", replay_from=rec, dtype="float16"),
        "cuda": fake_run(root, "fx/cuda", backend="cuda"),
        "abandoned": fake_run(root, "fx/abandoned", mode="replay", replay_from=rec,
                              status="running", pid=dead.pid),
        "alive": fake_run(root, "fx/alive", mode="replay", replay_from=rec, status="running",
                          pid=os.getpid()),
        "interrupted": fake_run(root, "fx/interrupted", mode="replay", replay_from=rec,
                                status="interrupted"),
        "crashed": fake_run(root, "fx/crashed", mode="replay", replay_from=rec,
                            status="crashed"),
        "failed": fake_run(root, "fx/failed", mode="replay", replay_from=rec, status="failed"),
        "recdead": fake_run(root, "fx/recdead", status="running", pid=dead.pid),
        "seed7": fake_run(root, "fx/seed7", mode="replay", replay_from=rec,
                          caliber={"seed": 7}),
        "event": fake_run(root, "fx/event", mode="replay", replay_from=rec,
                          caliber={"timer": "event"}),
        "nores": fake_run(root, "fx/nores", mode="replay", replay_from=rec, rows=False),
        "softrep": fake_run(root, "fx/softrep", op="softmax", mode="replay", replay_from=rec),
    }
    for key, path in list(runs.items()):            # stable names for the table below
        link = root / "r" / key
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(path)
    good = (rec / "results.jsonl").read_text()
    _damaged(root, "list", rec, run_json="[]")
    _damaged(root, "trunc", rec, results=good[: len(good) // 2])
    _damaged(root, "garbage", rec, results=good + "garbage\n")
    row = json.loads(good)
    del row["dtype"]
    _damaged(root, "rowmiss", rec, results=json.dumps(row) + "\n")
    _damaged(root, "rowlist", rec, results="[1, 2]\n")
    cal = json.loads((rec / "run.json").read_text())
    cal["caliber"] = "x"
    _damaged(root, "calstr", rec, run_json=json.dumps(cal))
    _damaged(root, "dup", rec, results=good + good)      # one case written twice
    return root


def R(*argv, code, first, env=None, id=None):
    return pytest.param(list(argv), code, first, env or {}, id=id or " ".join(argv)[:70])


BENCH = ["bench", "add", *SH, *FAST]
SIDES = ["--env-b", "ZLH_BUILTIN_SLOW=1", *SH, *FAST]
ROWS = [
    # ---- zlh bench: option values ---------------------------------------------------------
    R(*BENCH, "--seed", "-1", code=2, first="Invalid value for '--seed'"),
    R(*BENCH, "--seed", "4294967296", code=2, first="Invalid value for '--seed'"),
    R(*BENCH, "--seed", "1e23", code=2, first="'1e23' is not a valid integer"),
    R(*BENCH, "--warmup-ms", "nan", code=2, first="nan is not a finite number"),
    R(*BENCH, "--max-time-ms", "inf", code=2, first="inf is not a finite number"),
    R(*BENCH, "--target-rel-err", "nan", code=2, first="'--target-rel-err': nan"),
    R("bench", "add", "--max-time-ms", "20", code=2,
      first="--max-time-ms 20 is below --min-time-ms 50; give a --min-time-ms at most 20"),
    R("bench", "add", "--min-time-ms", "30", "--max-time-ms", "10", code=2,
      first="--max-time-ms 10 is below --min-time-ms 30; give a --min-time-ms at most 10"),
    R(*BENCH, "--min-time-ms", "-1", code=2, first="'--min-time-ms'"),
    R(*BENCH, "--min-samples", "0", code=2, first="'--min-samples'"),
    R(*BENCH, "--repeat", "0", code=2, first="'--repeat'"),
    R(*BENCH, "--repeat", "1e3", code=2, first="'--repeat'"),
    R(*BENCH, "--device", "-1", code=2, first="'--device'"),
    R(*BENCH, "--device", "3", code=3, first="PREFLIGHT_FAILED check=device"),
    R(*BENCH, "--dtypes", "", code=2, first="'--dtypes': an empty list"),
    R(*BENCH, "--dtypes", " , ", code=2, first="'--dtypes': an empty list"),
    R(*BENCH, "--backend", "", code=2, first="'--backend': an empty value"),
    R("bench", "add", *FAST, "--shapes", "", code=2, first="'--shapes': an empty value"),
    R(*BENCH, "--out", "", code=2, first="'--out': an empty value"),
    R(*BENCH, "--out", "afile", code=2, first="--out afile: exists and is not a directory"),
    R(*BENCH, "--out", "/dev/null", code=2, first="--out /dev/null: exists and is not a dir"),
    R(*BENCH, "--out", "afile/sub", code=2, first="afile is not a directory"),
    R(*BENCH, "--replay", "", code=2, first="'--replay': an empty value"),
    R(*BENCH, "--adapter", "foo", code=2, first="Invalid value for '--adapter'"),
    R(*BENCH, "--level", "huge", code=2, first="Invalid value for '--level'"),
    R(*BENCH, "--timer", "graph", code=2, first="use --timer host or auto"),
    R(*BENCH, "--timer", "event", code=2, first="no device events; use --timer host or auto"),
    R(*BENCH, "--l2", "flush", code=2, first="backend cpu lacks; leave --l2 at warm"),
    R(*BENCH, "--no-such-option", code=2, first="No such option '--no-such-option'"),
    R("bench", *FAST, code=2, first="no op given; name at least one op"),
    R("bench", "addd", *SH, *FAST, code=2, first="unknown op 'addd'"),
    R(*BENCH, "--dtypes", "float64", code=2, first="dtype float64 not supported"),
    R(*BENCH, "--dtypes", "bfloat16", code=2, first="dtype bfloat16 not supported"),
    R(*BENCH, "--backend", "banana", code=2, first="unknown backend 'banana'"),
    R(*BENCH, "--backend", "cuda", code=3, first="PREFLIGHT_FAILED check=backend"),
    R(*BENCH, "--adapter", "flaggems", code=3, first="PREFLIGHT_FAILED check=flaggems_dir"),
    R(*BENCH, "--flaggems-dir", "plain", code=3, first="PREFLIGHT_FAILED check=flaggems_dir"),
    R(*BENCH, code=2, first="ZLH_BUILTIN_SLOW='banana' is not a switch value",
      env={"ZLH_BUILTIN_SLOW": "banana"}, id="ZLH_BUILTIN_SLOW=banana bench"),
    R(*BENCH, code=2, first="ZLH_BUILTIN_SLOW='2'", env={"ZLH_BUILTIN_SLOW": "2"},
      id="ZLH_BUILTIN_SLOW=2 bench"),
    # ---- zlh bench: shape files -----------------------------------------------------------
    *[R("bench", op, "--shapes", f"sh/{name}", *FAST, code=2, first=first)
      for op, name, first in (
          ("add", "notyaml.yaml", "is not valid YAML at line 2"),
          ("add", "empty.yaml", "top level must be a mapping"),
          ("add", "list.yaml", "top level must be a mapping"),
          ("add", "neg.yaml", "invalid shape -4 (negative size)"),
          ("add", "str.yaml", "is not a list of non-negative integers"),
          ("add", "bool.yaml", "is not a list of non-negative integers"),
          ("add", "float.yaml", "is not a list of non-negative integers"),
          ("add", "nulls.yaml", "is not a list of non-negative integers"),
          ("add", "emptylist.yaml", "needs a non-empty list of shapes"),
          ("add", "soft.yaml", "shape file has no entry for op 'add'"),
          ("mm", "mm2.yaml", "mm shape [16, 16] needs 3 sizes (M, N, K)"),
          ("softmax", "soft1.yaml", "softmax shape [64] needs 2 sizes (M, N)"),
          ("add", "intkey.yaml", "top-level key 1 is not an op or class name"),
          ("add", "desc.yaml", "shape_desc must be a string"),
          ("add", "typo.yaml", "has no `shapes` list (keys: shape)"),
          ("add", "binary.yaml", "cannot be read"),
          ("add", "missing.yaml", "shape file not found"))],
    R("bench", "add", "--shapes", "sh", *FAST, code=2, first="shape file sh is a directory, not a file"),
    # ---- zlh bench --replay -----------------------------------------------------------------
    R(*BENCH, "--replay", "nonexistent", code=2, first="no such run directory"),
    R(*BENCH, "--replay", "r/cuda", "--backend", "cpu", code=2,
      first="recorded on backend cuda, this run is on backend cpu"),
    R(*BENCH, "--replay", "r/repB", code=2, first="replay from that record run instead"),
    R(*BENCH, "--replay", "r/soft", code=2, first="recorded op 'softmax', not 'add'"),
    R(*BENCH, "--replay", "plain", code=2, first="not a record run"),
    # ---- zlh ab RUN_A RUN_B -----------------------------------------------------------------
    R("ab", "r/recA", code=2, first="give two run directories"),
    R("ab", "r/recA", "r/repB", "r/soft", code=2, first="give two run directories"),
    R("ab", "r/repB", "r/repB", code=2, first="are the same run directory"),
    R("ab", "r/recA", "nonexistent", code=2, first="nonexistent is not a run directory"),
    R("ab", "r/recA", "afile", code=2, first="afile is not a run directory (not a directory)"),
    R("ab", "r/recA", "bad/list", code=2, first="is not a run description"),
    R("ab", "r/recA", "bad/trunc", code=2, first="line 1 is not a result row"),
    R("ab", "r/recA", "bad/garbage", code=2, first="line 2 is not a result row"),
    R("ab", "r/recA", "bad/rowmiss", code=2, first="missing field 'dtype'"),
    R("ab", "r/recA", "bad/rowlist", code=2, first="a JSON list, not an object"),
    R("ab", "r/recA", "bad/calstr", code=4, first="!!! [caliber] add: side B has no identity"),
    R("ab", "r/recA", "bad/dup", code=2, first="line 2 repeats the case of line 1"),
    R("ab", "--replay", "r/recA", "--shapes", "sh/add128.yaml", code=4,
      first="--shapes: side B would measure"),
    R("ab", "--replay", "r/recA", "--settle-ms", "5", code=2,
      first="--settle-ms does not apply with --replay RUN_A"),
    R("ab", "--replay", "r/recA", "--round-process", "persistent", code=2,
      first="--round-process does not apply with --replay RUN_A"),
    R("ab", "add", "--switch", "X=a,b", "--round-process", "persistent", "--settle-ms", "1e308",
      code=2, first="Invalid value for '--settle-ms': 1e+308 is not in the range"),
    R("ab", "r/recA", "r/event", code=4, first="!!! [caliber] add: timer differs: A=host"),
    R("ab", "r/recA", "r/seed7", code=4, first="!!! [caliber] add: seed differs: A=0, B=7"),
    R("ab", "r/recA", "r/recA2", code=2, first="r/recA2 is not a run directory"),
    R("ab", "r/recA", "r/softrep", code=4, first="!!! [caliber] add: op differs"),
    R("ab", "r/recA", "r/abandoned", code=4, first="(status abandoned, its process is gone)"),
    R("ab", "r/recA", "r/alive", code=4, first="side B did not complete (status running"),
    R("ab", "r/recA", "r/interrupted", code=4, first="(status interrupted"),
    R("ab", "r/recA", "r/crashed", code=4, first="(status crashed"),
    R("ab", "r/recA", "r/failed", code=4, first="(status failed"),
    R("ab", "r/recA", "r/f16", code=1, first="!!! add: no case paired between A and B"),
    R("ab", "r/recA", "r/nores", code=1, first="side B has no result row"),
    R("ab", "r/soft", "r/f16", "--allow-caliber-mismatch", code=1,
      first="!!! [caliber] softmax: op differs: A=softmax, B=add"),
    R("ab", "r/recA", "r/repB", "--rounds", "3", code=2,
      first="--rounds only applies when zlh ab runs the sides"),
    R("ab", "r/recA", "r/repB", "--dtypes", "float16", "--timeout", "5", code=2,
      first="--timeout, --dtypes only apply when zlh ab runs the sides"),
    R("ab", "r/recA", "r/repB", "--scrub", "(", code=2, first="bad scrub pattern '('"),
    R("ab", "r/recA", "r/repB", "--root", "afile", code=2, first="--root afile: exists"),
    # ---- zlh ab OP --switch/--env/--python ---------------------------------------------------
    R("ab", "addd", "--switch", "ZLH_BUILTIN_SLOW=0,1", *SH, *FAST, code=2,
      first="unknown op 'addd'"),
    R("ab", "a" * 300, "--switch", "ZLH_BUILTIN_SLOW=0,1", *SH, *FAST, code=2,
      id="ab 300-character op", first=f"unknown op '{'a' * 78}… for adapter builtin"),
    R("ab", "add", "--switch", "ZLH_BUILTIN_SLOW", code=2, first="--switch expects NAME="),
    R("ab", "add", "--switch", "=0,1", code=2, first="--switch expects NAME="),
    R("ab", "add", "--switch", "X=0,1", "--env-a", "Y=1", code=2, first="use either --switch"),
    R("ab", "--switch", "X=0,1", code=2, first="name at least one op"),
    R("ab", "add", "--env-a", "ZLH_BUILTIN_SLOW", code=2, first="--env-a expects NAME=VALUE"),
    R("ab", "add", "--env-b", "ZLH_BUILTIN_SLOW=banana", *SH, *FAST, code=2,
      first="ZLH_BUILTIN_SLOW='banana' is not a switch value"),
    R("ab", "add", *SIDES, "--dtypes", "float64", code=2, first="dtype float64 not supported"),
    R("ab", "add", *SIDES, "--backend", "banana", code=2, first="unknown backend 'banana'"),
    R("ab", "add", *SIDES, "--backend", "cuda", code=3, first="PREFLIGHT_FAILED check=backend"),
    R("ab", "add", "--env-b", "X=1", "--shapes", "sh/neg.yaml", code=2,
      first="invalid shape -4"),
    R("ab", "add", "--env-b", "X=1", "--shapes", "sh/mm2.yaml", code=2,
      first="shape file has no entry for op 'add'"),
    R("ab", "add", *SIDES, "--seed", "-3", code=2, first="Invalid value for '--seed'"),
    R("ab", "add", *SIDES, "--timeout", "nan", code=2, first="nan is not a finite number"),
    R("ab", "add", *SIDES, "--timeout", "0", code=2, first="Invalid value for '--timeout'"),
    R("ab", "add", *SIDES, "--rounds", "0", code=2, first="Invalid value for '--rounds'"),
    R("ab", "add", *SIDES, "--scrub", "(", code=2, first="bad scrub pattern '('"),
    R("ab", "add", *SIDES, "--root", "afile", code=2, first="--root afile: exists and is not"),
    R("ab", "add", *SIDES, "--root", "", code=2, first="'--root': an empty value"),
    R("ab", "add", *SH, "--python-a", "/nonexistent/python", code=2,
      first="--python-a: interpreter /nonexistent/python not found"),
    R("ab", "add", *SH, "--python-a", "plain", code=2,
      first="--python-a: interpreter plain is not an executable file"),
    R("ab", "add", *SH, "--python-b", "sh/add.yaml", code=2,
      first="--python-b: interpreter sh/add.yaml is not an executable file"),
    R("ab", "add", *SH, "--python-a", "badpy", code=3,
      first="PREFLIGHT_FAILED check=interpreter --python-a badpy (python: /"),
    R("ab", "r/recA", "r/repB", "--env-b", "X=1", code=2,
      first="r/recA is a run directory, not an op"),
    # ---- recipes -------------------------------------------------------------------------------
    *[R("ab", "--recipe", f"rc/{name}", code=2, first=first) for name, first in (
        ("opsstr.yaml", "ops must be a non-empty list of op names"),
        ("roundsstr.yaml", "rounds must be a whole number from 1 to 1000 or auto, got 'two'"),
        ("rounds0.yaml", "rounds must be a whole number from 1 to 1000 or auto, got 0"),
        ("roundsfloat.yaml", "rounds must be a whole number from 1 to 1000 or auto, got 1.5"),
        ("envoff.yaml", "env_a.ZLH_BUILTIN_SLOW is False, not a string (YAML reads"),
        ("envnull.yaml", "env_b.ZLH_BUILTIN_SLOW is None, not a string (an empty value"),
        ("envlist.yaml", "env_b must be a mapping NAME: value"),
        ("scrubstr.yaml", "scrub must be a list of regular expressions"),
        ("scrubbad.yaml", "scrub: bad scrub pattern '('"),
        ("bastr.yaml", "bench_args must be a list of arguments"),
        ("babogus.yaml", "bench_args: No such option '--bogus-flag'"),
        ("notyaml.yaml", "is not valid YAML at line 2"),
        ("list.yaml", "top level must be a mapping"),
        ("unknown.yaml", "unknown keys roundz"),
        ("switchint.yaml", "switch must be a string, got 5"),
        ("pybad.yaml", "--python-a: interpreter /nonexistent/python not found"),
        ("slowbanana.yaml", "ZLH_BUILTIN_SLOW='banana'"),
        ("badop.yaml", "unknown op 'addd'"),
        ("missing.yaml", "cannot be read: No such file or directory"))],
    R("ab", "--recipe", "", code=2, first="'--recipe': an empty value"),
    R("ab", "--recipe", "rc", code=2, first="cannot be read: Is a directory"),
    # ---- zlh ab --replay ------------------------------------------------------------------------
    R("ab", "--replay", "nonexistent", code=2, first="nonexistent is not a run directory"),
    R("ab", "--replay", "bad/list", code=2, first="is not a run description"),
    R("ab", "--replay", "r/recA", "add", code=2, first="--replay RUN_A takes no ops"),
    R("ab", "--replay", "r/cuda", code=2, first="recorded on backend cuda, which has no usable"),
    R("ab", "--replay", "r/recA", "--backend", "cuda", code=2,
      first="recorded on backend cpu, this run is on backend cuda"),
    R("ab", "--replay", "r/repB", code=2, first="replay from that record run instead"),
    R("ab", "--replay", "r/recdead", code=4, first="(status abandoned, its process is gone)"),
    R("ab", "--replay", "r/recA", "--root", "afile", code=2, first="--root afile: exists"),
    R("ab", "--replay", "r/recA", "--seed", "-1", code=2, first="Invalid value for '--seed'"),
    R("ab", "--replay", "r/recA", "--dtypes", "float64", code=2,
      first="dtype float64 not supported"),
    # ---- zlh report / show / fingerprint / ops / backends ---------------------------------------
    R("report", "rep/none", code=2, first="rep/none: no report.json"),
    R("report", "rep/list", code=2, first="is not a zlh A/B report"),
    R("report", "rep/opsstr", code=2, first="is not a zlh A/B report"),
    R("report", "rep/garbage", code=2, first="report.json cannot be read"),
    R("report", "rep/rowsbad", code=2, first="ops[0]: field rows: expected a list of rows, got 'x'"),
    R("report", "rep/noops", code=1, first="the report holds no op"),
    R("report", "rep/noops", "--html", code=1, first="the report holds no op"),
    R("report", "afile", code=2, first="Directory 'afile' is a file"),
    R("show", "nonexistent", code=2, first="nonexistent is not a run directory"),
    R("show", "bad/list", code=2, first="is not a run description"),
    R("show", "bad/garbage", code=2, first="line 2 is not a result row"),
    R("show", "bad/rowmiss", code=2, first="missing field 'dtype'"),
    R("show", "afile", code=2, first="Directory 'afile' is a file"),
    R("fingerprint", "nonexistent", code=2, first="is not a run directory (no such directory)"),
    R("fingerprint", "plain", code=2, first="plain is not a run directory (no run.json"),
    R("fingerprint", "r/recA", "--scrub", "(", code=2, first="bad scrub pattern '('"),
    R("fingerprint", "afile", code=2, first="Directory 'afile' is a file"),
    R("ops", "softmx", code=2, first="no op matches 'softmx'; did you mean softmax?"),
    R("ops", "", "--adapter", "builtin", code=2, id="ops empty pattern",
      first="PATTERNS holds an empty pattern, which every op matches"),
    R("ops", "add", " ", "--adapter", "builtin", code=2, id="ops blank pattern",
      first="PATTERNS holds an empty pattern, which every op matches"),
    R("ops", "--vllm", "plain", code=2, first="--vllm lists a FlagGems-vllm checkout"),
    R("ops", "--adapter", "flaggems", code=3, first="PREFLIGHT_FAILED check=flaggems_dir"),
    R("ops", "--flaggems-dir", "nonexistent", code=3, first="PREFLIGHT_FAILED check=flaggems"),
    R("backends", "extra", code=2, first="Got unexpected extra argument (extra)"),
    # ---- zlh batch / screen / partition / campaign -----------------------------------------------
    R("batch", "--ops", "addd", code=2, first="unknown op 'addd'"),
    R("batch", "--ops", "add", "--out", "afile", code=2, first="--out afile: exists and is not"),
    R("batch", "--ops", "add", "--out", "/dev/null", code=2, first="--out /dev/null: exists"),
    R("batch", "--ops-file", "nonexistent", code=2, first="ops file nonexistent cannot be read"),
    R("batch", "--ops", "add", "--devices", "x", code=2, first="--devices expects indices"),
    R("batch", "--ops", "add", "--devices", "\u0663", code=2, first="--devices expects indices"),
    R("batch", "--ops-file", "of/dtypo.txt", code=2,
      first="of/dtypo.txt:1: unknown dtype float99 (torch dtype names"),
    R("batch", "--ops-file", "of/twice.txt", code=2,
      first="op add is named twice with different dtypes"),
    R("batch", "--ops", "add", "--dtypes", "float99", code=2,
      first="--dtypes: unknown dtype float99"),
    R("screen", "--ops", "add", "--switch", "X=0,1", "--dtypes", "float99", code=2,
      first="--dtypes: unknown dtype float99"),
    R("batch", "--resume", "nonexistent", code=2, first="nonexistent is not a batch root"),
    R("batch", "--resume", "nonexistent", "--devices", "0,1", code=2,
      first="--resume ROOT works from what ROOT holds; leave out --devices"),
    R("batch", "--resume", "nonexistent", "--dtypes", "float16", "--op-timeout", "9", code=2,
      first="leave out --op-timeout, --dtypes (it would be ignored)"),
    R("screen", "--resume", "nonexistent", "--retries", "0", code=2,
      first="--resume ROOT works from what ROOT holds; leave out --retries"),
    R("screen", "--rescore", "nonexistent", "--ops", "add", code=2,
      first="--rescore ROOT works from what ROOT holds; leave out --ops"),
    R("campaign", "--resume", "nonexistent", "--rounds", "2", code=2,
      first="--resume ROOT works from what ROOT holds; leave out --rounds"),
    R("batch", "--ops", "add", "--seed", "-1", code=2, first="Invalid value for '--seed'"),
    R("screen", "--ops", "addd", "--switch", "X=0,1", code=2, first="unknown op 'addd'"),
    R("screen", "--ops", "add", "--switch", "X", code=2, first="--switch expects NAME="),
    R("screen", "--ops", "add", "--switch", "X=0,1", "--root", "afile", code=2,
      first="--root afile: exists and is not a directory"),
    R("screen", "--recipe", "rc/opsstr.yaml", code=2, first="ops must be a non-empty list"),
    R("partition", "nonexistent.tsv", "--devices", "0", code=2, first="no such screen table"),
    R("campaign", "--screen", "nonexistent", "--devices", "0", code=2,
      first="nonexistent is not a screen root"),
    R("campaign", "--devices", "0", code=2, first="give --screen ROOT and --devices"),
    R("partition", "pt/binary.tsv", "--devices", "0", code=2,
      first="pt/binary.tsv: screen table cannot be read"),
    R("partition", "pt/noop.tsv", "--devices", "0", code=2,
      first="pt/noop.tsv is not a screen table (no op column)"),
    R("partition", "pt/headonly.tsv", "--devices", "0", code=2,
      first="pt/headonly.tsv is not a screen table (no op column)"),
    R("partition", "pt/nul.tsv", "--devices", "0", code=2,
      first="pt/nul.tsv: line 2: the op name holds a control character"),
    R("partition", "pt/dup.tsv", "--devices", "0,1", code=2,
      first="pt/dup.tsv: op 'add' appears twice (lines 2 and 3); one row per op"),
    R("partition", "pt/empty.tsv", "--devices", "0", code=2, first="no op with verdict"),
    R("partition", "pt/cut.tsv", "--devices", "0", code=2,
      first="pt/cut.tsv: line 3 has 3 fields, the header 6 (a cut or edited table)"),
    R("campaign", "--screen", "pt", "--devices", "0", code=2, first="pt is not a screen root"),
    # ---- zlh product prepare | run | reaccount ----------------------------------------------------
    R("product", "prepare", "rc/list.yaml", "--selection", "canary", code=2,
      first="manifest rc/list.yaml: not JSON"),
    R("product", "prepare", "nonexistent.json", "--selection", "canary", code=2,
      first="manifest nonexistent.json: cannot be read (No such file or directory)"),
    R("product", "prepare", "afile", "--selection", "canary", "--out", "", code=2,
      first="'--out': an empty value"),
    R("product", "run", "plain", code=2, first="plain is not a frozen campaign plan"),
    R("product", "run", "afile", code=2, first="Directory 'afile' is a file"),
    R("product", "run", "plain", "--out", "", code=2, first="'--out': an empty value"),
    R("product", "reaccount", "plain", "--out", "re", code=2,
      first="no such campaign receipt (a sealed run root?)"),
    R("product", "reaccount", "rep/list", "--out", "re", code=2,
      first="no such campaign receipt"),
    R("product", "reaccount", "plain", "--out", "", code=2, first="'--out': an empty value"),
    R("product", "reaccount", "plain", "--out", "re", "--measured-launch-floor", "-1",
      code=2, first="Invalid value for '--measured-launch-floor'"),
    # ---- zlh calibrate / shapes, telemetry and plant options --------------------------------------
    R("calibrate", "addd", *SH, code=2, first="unknown op 'addd'"),
    R("calibrate", "add", "--rounds", "1", code=2, first="Invalid value for '--rounds'"),
    R("calibrate", "add", "--plant-pct", "nan", code=2, first="Invalid value for '--plant-pct': nan is not a finite"),
    R("calibrate", "add", "--plant-pct", "-1", code=2, first="Invalid value for '--plant-pct'"),
    R("calibrate", "add", *SH, "--root", "afile", code=2, first="--root afile: exists"),
    R("ab", "add", *SIDES, "--noise-floor", "nonexistent", code=2,
      first="--noise-floor nonexistent: no such file"),
    R("ab", "add", *SIDES, "--noise-floor", "afile", code=2, first="cannot be read"),
    R("shapes", "derive", "--out", "x.yaml", code=2, first="has no shapes of its own"),
    R("shapes", "check", "nonexistent.yaml", code=2, first="shape file not found"),
    R("shapes", "check", "sh", code=2, first="shape file sh is a directory, not a file"),
    R("shapes", "derive", "--flaggems-dir", str(FAKE_FG), "--out", "sh", code=2,
      first="--out sh: exists and is a directory"),
    R("shapes", "derive", "--flaggems-dir", str(FAKE_FG), "--out", "sh/add.yaml/x.yaml",
      code=2, first="sh/add.yaml: exists and is not a directory"),
    R("shapes", "derive", "--flaggems-dir", str(FAKE_FG), "--out", "", code=2,
      first="--out: an empty path is not a file"),
    R("product", "prepare", "", "--selection", "canary", code=2,
      first="manifest: an empty path; name the manifest file"),
    R("shapes", "model", "nonexistent", "--tokens", "1", "--out", "x.yaml", code=2,
      first="model config nonexistent cannot be read"),
    R(*BENCH, "--plant-pct", "1", code=2, first="--plant-pct needs --replay RUN_A"),
    R(*BENCH, "--telemetry-interval", "nan", code=2, first="Invalid value for '--telemetry-interval': nan"),
    R(*BENCH, "--telemetry-interval", "1e308", code=2,
      first="Invalid value for '--telemetry-interval': 1e+308 is not in the range 0<=x<=3600"),
    R("calibrate", "add", "--plant-pct", "1e308", code=2,
      first="Invalid value for '--plant-pct': 1e+308 is not in the range 0<x<=1000"),
    R(*BENCH, "--plant-pct", "5000", "--replay", "r/recA", code=2,
      first="Invalid value for '--plant-pct'"),
    R("calibrate", "add", *SH, "--root", "", code=2, first="'--root': an empty value"),
    R("ab", "add", *SIDES, "--noise-floor", "", code=2, first="'--noise-floor': an empty value"),
    R(*BENCH, "--retry-throttled", "-1", code=2, first="Invalid value for '--retry-throttled'"),
    R(*BENCH, "--ir-stage", "banana", code=2, first="Invalid value for '--ir-stage'"),
    R("benchh", "add", code=2, first="No such command 'benchh'. Did you mean 'bench'?"),
]
if Path("/proc").is_dir():
    ROWS.append(R(*BENCH, "--out", "/proc/zlh", code=2,
                  first="--out /proc/zlh: cannot create a directory under /proc"))
    ROWS.append(R("fingerprint", "/proc/self", code=2, first="is not a run directory"))


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def check_bad_input(workspace, monkeypatch, argv, code, first, env, only_line=False) -> None:
    """Run `argv` in `workspace`: exit `code`, no traceback, stderr's first line (its only
    line with `only_line`) `zlh: …` (or a `!!!` gate line) holding `first`, and nothing left
    behind in the workspace."""
    monkeypatch.chdir(workspace)
    for name in ("FLAGGEMS_DIR", "FLAGGEMS_VLLM_DIR", "ZLH_BUILTIN_SLOW", "ZLH_PARENT_PID"):
        monkeypatch.delenv(name, raising=False)
    before = snapshot(workspace)
    result = CliRunner().invoke(main, argv, env=env)
    assert result.exc_info is None or result.exc_info[0] is SystemExit, \
        "".join(__import__("traceback").format_exception(*result.exc_info))
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.exit_code == code, result.output
    assert lines and lines[0].startswith(("zlh: ",) if only_line else ("zlh: ", "!!! ")), \
        result.output
    assert len(lines) == 1 or not only_line, result.output
    assert first in lines[0], lines[0]
    assert "!!!" not in result.stdout
    assert snapshot(workspace) == before, "left behind: " + ", ".join(
        sorted(snapshot(workspace) - before))


@pytest.mark.parametrize("argv, code, first, env", ROWS)
def test_bad_input(workspace, monkeypatch, argv, code, first, env):
    check_bad_input(workspace, monkeypatch, argv, code, first, env)


def test_the_table_is_at_least_sixty_rows_beyond_the_issue():
    assert len(ROWS) >= 120


PROCESS_ROWS = [
    (["bench", "add", *SH, *FAST, "--seed", "-1"], 2, "zlh: Invalid value for '--seed'"),
    (["ab", "addd", "--switch", "ZLH_BUILTIN_SLOW=0,1", *SH, *FAST], 2, "zlh: unknown op"),
    (["ab", "r/recA", "r/event"], 4, "!!! [caliber] add: timer differs"),
    (["show", "bad/garbage"], 2, "line 2 is not a result row"),
    (["fingerprint", "nonexistent"], 2, "is not a run directory"),
]


@pytest.mark.parametrize("argv, code, first", PROCESS_ROWS, ids=[" ".join(r[0])[:40]
                                                                  for r in PROCESS_ROWS])
@pytest.mark.e2e
def test_bad_input_in_a_real_process(workspace, argv, code, first):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("ZLH_BUILTIN_SLOW", None)
    before = snapshot(workspace)
    proc = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert lines and first in lines[0], proc.stderr
    assert "!!!" not in proc.stdout
    assert snapshot(workspace) == before
