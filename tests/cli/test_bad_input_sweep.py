"""A sweep of bad inputs as a new user meets them, across every command and the Python API.

Purpose: one table, written fresh (no row repeats the other bad-input tables), of a command
line or an API call, the state it meets on disk (damaged files, wrong types, empty values,
unicode, huge numbers, paths that are files, folders, links or missing, finished or partial
roots, options that contradict, environment variables with odd values) and the outcome it
must have. Each row ends in exactly one of five classes:

- clean: the exit code SPEC section 5 gives (2 usage, 3 preflight, 4 caliber refusal, 1
  failed cases, 5 poisoned, 6 fail-on; 0 where the odd input is harmless), the first stderr
  line `zlh: …` (or a `!!!` refusal line) naming the problem, nothing on stdout pretending
  to be a refusal;
- traceback: an exception other than SystemExit escaped, or "Traceback" was printed (API
  rows: an exception that is not a harness.ZlhError);
- wrong exit: another exit code (API rows: another ZlhError class);
- misleading: the line does not name the problem, or something was left behind (a run
  directory, a lock, a temp file) by a command that refused;
- data lost: a file that was on disk before is gone or changed.

`test_sweep` asserts "clean" per row, and its failure message starts with the class, so
`pytest -rf tests/cli/test_bad_input_sweep.py` gives the count of each. The outcomes are in
EXPECT, keyed by row id (the command line less the shared budget and shape file). Rows run
in-process through click's CliRunner (fast); `test_sweep_in_real_processes` runs a few as real
processes. The workspace copies the session's finished batch, screen and campaign roots;
`.zlh-lock` contents are not compared (they name the last holder, which means nothing once
the lock is let go).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

import harness
from harness.cli import main

from conftest import FAKE_FLAGGEMS, FAST, FAST_API
from fake_runs import fake_run
from product_fakes import builtin_doc, write

SH = ["--shapes", "sh/add.yaml"]
BENCH = ["bench", "add", *SH, *FAST]
AB_OP = ["ab", "add", *SH, *FAST]
SIDES = [*AB_OP, "--env-b", "ZLH_BUILTIN_SLOW=1"]
SCREEN = ["screen", "--ops", "add", *SH, *FAST]
API = dict(FAST_API, adapter="builtin", backend="cpu", shapes="sh/add.yaml")

FILES = {
    "sh/add.yaml": "add: [[64]]\n",
    "sh/tabs.yaml": "add:\n\t- [64]\n",
    "sh/unicode.yaml": "\u00e4dd: [[64]]\n",
    "sh/zero.yaml": "add: [[0]]\n",
    "sh/scalar.yaml": "add: 64\n",
    "sh/nested.yaml": "add: [[[64]]]\n",
    "sh/mapshape.yaml": "add: [{m: 64}]\n",
    "sh/crlf.yaml": "add: [[64]]\r\n",
    "sh/onlycomment.yaml": "# nothing here\n",
    "sh/descnum.yaml": "add: {shapes: [[4]], shape_desc: 5}\n",
    "sh/emptyshape.yaml": "add: [[]]\n",
    "of/comments.txt": "# only a comment\n\n",
    "of/unicode.txt": "\u00e4dd\n",
    "of/spaces.txt": "add softmax\n",
    "of/add.txt": "add\n",
    "rc/both.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nenv_a: {X: '1'}\n",
    "rc/emptyops.yaml": "ops: []\nswitch: ZLH_BUILTIN_SLOW=0,1\n",
    "rc/unicodeop.yaml": "ops: [\u00e4dd]\nswitch: ZLH_BUILTIN_SLOW=0,1\n",
    "rc/roundstrue.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1\nrounds: true\n",
    "rc/eqname.yaml": "ops: [add]\nenv_b: {'A=B': '1'}\n",
    "rc/pyrel.yaml": "ops: [add]\npython_a: ./nope/python\npython_b: ./nope/python\n",
    "rc/nothing.yaml": "ops: [add]\n",
    "rc/opsint.yaml": "ops: [5]\nswitch: ZLH_BUILTIN_SLOW=0,1\n",
    "rc/empty.yaml": "",
    "rc/switch3.yaml": "ops: [add]\nswitch: ZLH_BUILTIN_SLOW=0,1,2\n",
    "mf/empty.json": "{}",
    "mf/list.json": "[1, 2]",
    "mf/v99.json": '{"schema_version": 99}',
    "mf/str.json": '"manifest"',
    "mf/nul.json": '{"schema_version": 1, "campaign_id": "a\\u0000b"}',
    "nf/list.json": "[]",
    "nf/v1empty.json": '{"schema_version": 1}',
    "nf/garbage.json": "{",
    "model/empty.json": "{}",
    "model/heads.json": '{"num_attention_heads": "x", "hidden_size": 64}',
    "model/list.json": "[]",
    "usermod_raise.py": "raise RuntimeError('broken on import')\n",
    "usermod_ok.py": "CASES = 5\nNAMES = ['x']\n",
    "rep/v99/report.json": '{"schema_version": 99, "ops": []}',
    "rep/opsint/report.json": '{"schema_version": 1, "ops": [5]}',
    "rep/empty/report.json": "",
    "rep/nul/report.json": "\x00\x00",
    "afile": "a plain file\n",
}


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _edit_json(path: Path, edit: Callable[[dict], Any]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def _copy_run(root: Path, src: Path, name: str) -> Path:
    dst = root / "dmg" / name
    dst.parent.mkdir(exist_ok=True)
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, corpus_roots, corpus_campaign):
    root = tmp_path_factory.mktemp("sweep")
    for rel, text in FILES.items():
        _write(root, rel, text)
    (root / "adir").mkdir()
    write(root / "mf" / "good.json", builtin_doc(root))
    (root / "bin.txt").write_bytes(b"\xff\xfe\x00add\n")
    (root / "dangling").symlink_to(root / "no" / "such" / "thing")
    (root / "exe").write_text("#!/bin/sh\nexit 0\n")
    (root / "exe").chmod(0o755)
    rec = fake_run(root, "fx/rec")
    rep = fake_run(root, "fx/rep", mode="replay", replay_from=rec)
    (root / "r").mkdir()
    for name, path in (("rec", rec), ("rep", rep), ("soft", fake_run(root, "fx/soft",
                                                                       op="softmax"))):
        (root / "r" / name).symlink_to(path)         # stable names for the table
    # damaged copies of the record run
    d = _copy_run(root, rep, "empty_results")
    (d / "results.jsonl").write_text("")
    d = _copy_run(root, rep, "no_results")
    (d / "results.jsonl").unlink()
    d = _copy_run(root, rep, "v99")
    _edit_json(d / "run.json", lambda j: j.__setitem__("schema_version", 99))
    d = _copy_run(root, rep, "opempty")
    _edit_json(d / "run.json", lambda j: j.__setitem__("op", ""))
    d = _copy_run(root, rep, "bom")
    (d / "run.json").write_bytes(b"\xef\xbb\xbf" + (rep / "run.json").read_bytes())
    d = _copy_run(root, rec, "norecords")
    (d / "autotune" / "records.json").unlink()
    d = _copy_run(root, rec, "recordslist")
    (d / "autotune" / "records.json").write_text("[]")
    d = _copy_run(root, rec, "metagarbage")
    (d / "autotune" / "meta.json").write_text("{nope")
    d = _copy_run(root, rec, "noautotune")
    shutil.rmtree(d / "autotune")
    d = _copy_run(root, rec, "ttgirfile")
    (d / "ttgir").write_text("not a folder\n")
    d = _copy_run(root, rep, "runjsonempty")
    (d / "run.json").write_text("")
    d = _copy_run(root, rep, "runjsonobj")
    (d / "run.json").write_text("{}")
    d = _copy_run(root, rep, "rowsunicode")
    row = json.loads((rep / "results.jsonl").read_text())
    row["op"] = "\u00e4dd"
    (d / "results.jsonl").write_text(json.dumps(row) + "\n")
    d = _copy_run(root, rep, "rowsnan")
    row = json.loads((rep / "results.jsonl").read_text())
    row["speedup"] = float("nan")
    (d / "results.jsonl").write_text(json.dumps(row) + "\n")
    d = _copy_run(root, rep, "linkresults")
    (d / "results.jsonl").unlink()
    (d / "results.jsonl").symlink_to(root / "no" / "such" / "rows")
    # finished corpus roots (copies: the rows below must leave them as they are)
    for name in ("batch", "screen"):
        shutil.copytree(corpus_roots / name, root / name, symlinks=True)
    shutil.copytree(corpus_campaign, root / "campaign", symlinks=True)
    shutil.copy(root / "screen" / "screen.tsv", root / "screen.tsv")
    table = (root / "screen.tsv").read_text().splitlines()
    head = table[0].split("\t")
    body = table[1].split("\t")

    def variant(name: str, column: str, value: str) -> None:
        cells = list(body)
        cells[head.index(column)] = value
        (root / "pt").mkdir(exist_ok=True)
        (root / "pt" / name).write_text("\t".join(head) + "\n" + "\t".join(cells) + "\n")

    variant("nan.tsv", "elapsed_a", "nan")
    variant("neg.tsv", "elapsed_a", "-3")
    variant("lower.tsv", "verdict", "ir_changed")
    variant("inf.tsv", "elapsed_b", "inf")
    (root / "pt" / "crlf.tsv").write_text("\r\n".join(table) + "\r\n")
    # an A/B root, finished, from the two fake runs
    assert CliRunner().invoke(main, ["ab", str(rec), str(rep), "--root",
                                     str(root / "abroot")]).exit_code == 0
    return root


# ---- the table ---------------------------------------------------------------------------------
@dataclass
class Row:
    """One case: a command line (argv, env) or an API call; its outcome is EXPECT[id]."""
    id: str
    argv: list[str] | None = None
    call: Callable[[Path], Any] | None = None
    env: dict = field(default_factory=dict)
    error: type = harness.ZlhError

    @property
    def code(self) -> int:
        return EXPECT[self.id][0]

    @property
    def first(self) -> str | None:
        """A fragment of the first stderr line (API: of the error); None: no error line."""
        return EXPECT[self.id][1]


ROWS: list[Row] = []
_BUDGET = " ".join(FAST)


def C(*argv, env=None, id=None):
    """A command line; its id leaves out the shared budget and shape file."""
    text = " ".join(repr(a) if not a or a != a.strip() or "\n" in a else a for a in argv)
    text = text.replace(" " + _BUDGET, "").replace(" --shapes sh/add.yaml", "")
    text = text.replace(str(FAKE_FLAGGEMS), "FAKE_FLAGGEMS")      # ids alike in every checkout
    ROWS.append(Row(id=id or text, argv=list(argv), env=env or {}))


def A(id, call, error=harness.UsageError):
    ROWS.append(Row(id="api " + id, call=call, error=error))


# zlh bench: op names and dtypes
C("bench", "", *SH, *FAST)
C("bench", "add,", *SH, *FAST)
C("bench", "ADD", *SH, *FAST)
C("bench", "\u00e4dd", *SH, *FAST)
C("bench", "add\n", *SH, *FAST)
C("bench", "add", "add", *SH, *FAST)
C(*BENCH, "--dtypes", "float32,float32")
C(*BENCH, "--dtypes", "Float32")
C(*BENCH, "--dtypes", "float32;float16")
C(*BENCH, "--dtypes", "torch.float32")
C(*BENCH, "--dtypes", "\u0192loat32")
# zlh bench: user cases
C(*BENCH, "--cases", "")
C("bench", *SH, *FAST, "--cases", "nosuchmodule_zlh:CASES")
C("bench", *SH, *FAST, "--cases", "nocolon")
C("bench", *SH, *FAST, "--cases", "usermod_raise:CASES")
C("bench", *SH, *FAST, "--cases", "usermod_ok:CASES")
C("bench", *SH, *FAST, "--cases", "usermod_ok:NAMES")
C("bench", *SH, *FAST, "--cases", "usermod_ok:MISSING")
C("bench", *SH, *FAST, "--cases", "usermod_ok:CASES", "--adapter", "flaggems")
C("bench", *SH, *FAST, "--cases", ":CASES")
# zlh bench: option values and combinations
C(*BENCH, "--ir-stage", "ptx")
C(*BENCH, "--no-ir", "--ir-stage", "llir")
C(*BENCH, "--telemetry-interval", "-1")
C(*BENCH, "--telemetry-interval", "nan")
C(*BENCH, "--retry-throttled", "-1")
C(*BENCH, "--parallel-sweep", "0")
C(*BENCH, "--parallel-sweep", "2")
C(*BENCH, "--sweep-devices", "x", "--parallel-sweep", "2")
C(*BENCH, "--sweep-devices", "0,0", "--parallel-sweep", "2")
C(*BENCH, "--sweep-devices", "0")
C(*BENCH, "--parallel-sweep", "2", "--replay", "r/rec")
C(*BENCH, "--color", "purple")
C(*BENCH, "--format", "html")
C(*BENCH, "--plant-pct", "0")
C(*BENCH, "--plant-pct", "-5")
C(*BENCH, "--target-rel-err", "-0.1")
C(*BENCH, "--target-rel-err", "2")
C(*BENCH, "--warmup-ms", "-1")
C(*BENCH, "--min-samples", "1000000000")
C(*BENCH, "--min-samples", "-3")
C(*BENCH, "--device", "99999999999999999999")
C(*BENCH, "--repeat", "-1")
C(*BENCH, "--seed", "\u0663")
C(*BENCH, "--level", "comprehensive")
C(*BENCH, "--flaggems-dir", "afile")
C(*BENCH, "--adapter", "flaggems", "--flaggems-dir", "afile")
C(*BENCH, "--adapter", "flaggems", env={"FLAGGEMS_DIR": "afile"},
  id="FLAGGEMS_DIR=afile bench --adapter flaggems")
C(*BENCH, "--adapter", "flaggems", env={"FLAGGEMS_DIR": ""},
  id="FLAGGEMS_DIR='' bench --adapter flaggems")
C(*BENCH, "--adapter", "")
C(*BENCH, "--backend", "CPU")
C(*BENCH, "--backend", "cpu ")
# zlh bench: shape files
for name in ("tabs", "unicode", "scalar", "nested", "mapshape", "onlycomment", "descnum",
             "emptyshape"):
    C("bench", "add", "--shapes", f"sh/{name}.yaml", *FAST)
C("bench", "add", "--shapes", "dangling", *FAST)
C("bench", "add", "--shapes", "/dev/null", *FAST)
C("bench", "add", "--shapes", "bin.txt", *FAST)
# zlh bench: --out and --replay paths
C(*BENCH, "--out", "dangling")
C(*BENCH, "--out", "r/rec/run.json")
C(*BENCH, "--replay", "batch")
C(*BENCH, "--replay", "abroot")
C(*BENCH, "--replay", "screen")
C(*BENCH, "--replay", "r/soft")
C(*BENCH, "--replay", "dmg/norecords")
C(*BENCH, "--replay", "dmg/recordslist")
C(*BENCH, "--replay", "dmg/metagarbage")
C(*BENCH, "--replay", "dmg/noautotune")
C(*BENCH, "--replay", "dangling")
C(*BENCH, "--replay", "afile")
C(*BENCH, "--replay", "dmg/runjsonobj")
C("bench", "add", *SH, *FAST, env={"TRITON_INTERPRET": "banana"},
  id="TRITON_INTERPRET=banana bench")
# zlh ab RUN_A RUN_B
C("ab", "r/rec", "r/rep", "--fail-on", "slower")
C("ab", "r/rec", "r/rep", "--fail-on", "slower:abc")
C("ab", "r/rec", "r/rep", "--fail-on", "slower:-5")
C("ab", "r/rec", "r/rep", "--fail-on", "geomean:nan")
C("ab", "r/rec", "r/rep", "--fail-on", "bogus")
C("ab", "r/rec", "r/rep", "--fail-on", "")
C("ab", "r/rec", "r/rep", "--fail-on", "slower:1e400")
C("ab", "r/rec", "dangling")
C("ab", "r/rec", "dmg/empty_results")
C("ab", "r/rec", "dmg/no_results")
C("ab", "r/rec", "dmg/v99")
C("ab", "r/rec", "dmg/opempty")
C("ab", "r/rec", "dmg/bom")
C("ab", "r/rec", "dmg/runjsonempty")
C("ab", "r/rec", "dmg/runjsonobj")
C("ab", "r/rec", "dmg/rowsunicode")
C("ab", "r/rec", "dmg/rowsnan")
C("ab", "r/rec", "dmg/linkresults")
C("ab", "r/rec", "r/rep", "--root", "abroot")
C("ab", "r/rec", "r/rep", "--root", "batch")
C("ab", "r/rec", "r/rep", "--noise-floor", "nf/list.json")
C("ab", "r/rec", "r/rep", "--noise-floor", "nf/v1empty.json")
C("ab", "r/rec", "r/rep", "--noise-floor", "nf/garbage.json")
C("ab", "r/rec", "r/rep", "--switch", "ZLH_BUILTIN_SLOW=0,1")
C("ab", "r/rec", "r/rep", "--python-a", "exe")
C("ab", "r/rec", "r/rep", "--recipe", "rc/nothing.yaml")
C("ab", "r/rec", "r/rep", "--ops-file", "of/add.txt", "--recipe", "rc/nothing.yaml")
C("ab", "r/rec", "r/rep", "--replay", "r/rec")
C("ab", "r/rec", "batch")
C("ab", "screen", "r/rep")
# zlh ab OP
C(*AB_OP, "--switch", "ZLH_BUILTIN_SLOW=0,1,2")
C(*AB_OP, "--switch", "ZLH_BUILTIN_SLOW=0")
C(*AB_OP, "--switch", "1X=0,1")
C(*AB_OP, "--switch", "X Y=0,1")
C(*AB_OP, "--env-a", "=1")
C(*AB_OP, "--env-b", "X=1", "--env-b", "X=2")
C(*AB_OP, "--python-a", "adir")
C(*AB_OP, "--python-a", "dangling")
C(*AB_OP)
C("ab", *SH, *FAST, "--env-b", "X=1", "--ops-file", "of/comments.txt")
C("ab", *SH, *FAST, "--env-b", "X=1", "--ops-file", "of/unicode.txt")
C("ab", *SH, *FAST, "--env-b", "X=1", "--ops-file", "bin.txt")
C(*SIDES, "--fail-on", "slower:x")
C(*SIDES, "--noise-floor", "dangling")
C(*SIDES, "--root", "r/rec/run.json")
C(*SIDES, "--root", "screen")
C(*SIDES, "--device", "7")
# recipes
for name in ("both", "emptyops", "unicodeop", "roundstrue", "eqname", "pyrel", "nothing",
             "opsint", "empty", "switch3"):
    C("ab", "--recipe", f"rc/{name}.yaml", *SH, *FAST)
C("ab", "--recipe", "dangling")
C("ab", "--recipe", "/dev/null")
# zlh ab --replay
C("ab", "--replay", "batch")
C("ab", "--replay", "screen")
C("ab", "--replay", "abroot")
C("ab", "--replay", "dmg/noautotune")
C("ab", "--replay", "r/rec", "--rounds", "2")
C("ab", "--replay", "r/rec", "--switch", "ZLH_BUILTIN_SLOW=0,1")
C("ab", "--replay", "r/rec", "--python-b", "adir")
C("ab", "--replay", "r/rec", "--root", "abroot")
# zlh batch
C("batch", *FAST)
C("batch", "--all", "--ops", "add", *FAST)
C("batch", "--ops", " ", *FAST)
C("batch", "--ops", "add", "--ops-file", "of/add.txt", *FAST)
C("batch", "--ops-file", "of/comments.txt", *FAST)
C("batch", "--ops-file", "bin.txt", *FAST)
C("batch", "--ops-file", "adir", *FAST)
C("batch", "--ops-file", "of/spaces.txt", *FAST)
C("batch", "--all", "--dismiss", "nonexistent.txt", *FAST)
C("batch", "--ops", "add", "--retries", "-1")
C("batch", "--ops", "add", "--op-timeout", "0")
C("batch", "--ops", "add", *SH, *FAST, "--out", "adir",
  id="batch --out an empty folder")
C("batch", "--ops", "add", *SH, *FAST, "--out", "fx")
C("batch", "--ops", "add", *SH, *FAST, "--out", "batch")
C("batch", "--resume", "screen")
C("batch", "--resume", "campaign")
C("batch", "--resume", "r/rec")
C("batch", "--resume", "batch", "--ops", "add")
C("batch", "--resume", "afile")
C("batch", "--replay", "nonexistent", "--ops", "add")
C("batch", "--replay", "r/rec", "--ops", "add")
C("batch", "--replay", "batch", "--resume", "batch")
C("batch", "--ops", "add", "--vllm", "afile")
C("batch", "--ops", "add", "--allow-env-change", *SH, *FAST)
C("batch", "--ops", "add", "--backend", "cuda", *SH, *FAST)
# zlh screen
C(*SCREEN)
C(*SCREEN, "--switch", "X=0,1", "--env-a", "Y=1")
C(*SCREEN, "--switch", "X=0,1", "--retries", "-1")
C(*SCREEN, "--switch", "X=0,1", "--python-a", "nonexistent/python")
C(*SCREEN, "--switch", "X=0,1", "--scrub", "[")
C(*SCREEN, "--switch", "X=0,1", "--allow-env-change")
C(*SCREEN, "--switch", "X=0,1", "--root", "screen")
C(*SCREEN, "--switch", "X=0,1", "--root", "batch")
C("screen", "--rescore", "batch")
C("screen", "--rescore", "campaign")
C("screen", "--rescore", "afile")
C("screen", "--resume", "batch")
C("screen", "--resume", "screen", "--rescore", "screen")
C("screen", "--rescore", "screen", "--switch", "X=0,1")
C("screen", "--resume", "abroot")
# zlh campaign
C("campaign", "--screen", "batch", "--devices", "0")
C("campaign", "--screen", "screen", "--devices", "0", "--verdict", "BOGUS")
C("campaign", "--screen", "screen", "--devices", "0", "--rounds", "0")
C("campaign", "--screen", "screen", "--devices", "0", "--only", "")
C("campaign", "--screen", "screen", "--devices", "0", "--extra-ops", "")
C("campaign", "--screen", "screen", "--devices", "0,0")
C("campaign", "--screen", "screen", "--devices", "0", "--timeout", "-1")
C("campaign", "--screen", "screen", "--devices", "0", "--verdict", "NO_TRITON", "--root", "campaign")
C("campaign", "--screen", "screen", "--devices", "0", "--verdict", "NO_TRITON", "--root", "afile")
C("campaign", "--resume", "batch")
C("campaign", "--resume", "screen")
C("campaign", "--resume", "campaign", "--screen", "screen")
C("campaign", "--resume", "campaign", "--dry-run")
C("campaign", "--screen", "screen.tsv", "--devices", "0")
# zlh partition
C("partition", "screen.tsv", "--devices", "0,0", "--verdict", "NO_TRITON")
C("partition", "screen.tsv", "--devices", "0", "--verdict", "NO_TRITON", "--rounds", "0")
C("partition", "screen.tsv", "--devices", "0", "--verdict", "NO_TRITON", "--format", "json")
C("partition", "adir", "--devices", "0")
C("partition", "dangling", "--devices", "0")
C("partition", "pt/nan.tsv", "--devices", "0", "--verdict", "NO_TRITON")
C("partition", "pt/neg.tsv", "--devices", "0", "--verdict", "NO_TRITON")
C("partition", "pt/inf.tsv", "--devices", "0", "--verdict", "NO_TRITON")
C("partition", "pt/lower.tsv", "--devices", "0", "--verdict", "NO_TRITON")
C("partition", "pt/crlf.tsv", "--devices", "0", "--verdict", "NO_TRITON")
C("partition", "screen", "--devices", "0")
C("partition", "screen.tsv")
# zlh calibrate
C("calibrate")
C("calibrate", "add", *SH, "--plant-pct", "0")
C("calibrate", "add", *SH, "--timeout", "0")
C("calibrate", "add", *SH, *FAST, "--root", "abroot")
C("calibrate", "add", *SH, *FAST, "--root", "r/rec")
C("calibrate", "add", *SH, "--replay", "r/rec")
C("calibrate", "add", *SH, *FAST, "--dtypes", "float64")
C("calibrate", "add", *SH, *FAST, "--backend", "cuda")
# zlh product
for name in ("empty", "list", "v99", "str", "nul"):
    C("product", "prepare", f"mf/{name}.json", "--selection", "canary", "--dry-run")
C("product", "prepare", "mf/good.json", "--selection", "all", "--dry-run")
C("product", "prepare", "mf/good.json", "--selection", "canary", "--canary-receipt",
  "afile", "--dry-run")
C("product", "prepare", "mf/good.json", "--selection", "canary", "--out", "afile")
C("product", "prepare", "adir", "--selection", "canary")
C("product", "prepare", "dangling", "--selection", "canary")
C("product", "run", "nonexistent")
C("product", "run", "r/rec")
C("product", "run", "batch", "--resume")
C("product", "reaccount", "r/rec", "--out", "re")
C("product", "reaccount", "batch", "--out", "batch/re")
C("product", "reaccount", "adir", "--out", "re", "--measured-launch-floor", "1e30")
C("product", "bogus")
# zlh report / show / fingerprint
C("report", "rep/v99")
C("report", "rep/opsint")
C("report", "rep/empty")
C("report", "rep/nul")
C("report", "abroot", "--format", "json")
C("report", "dangling")
C("show", "dmg/empty_results")
C("show", "dmg/no_results")
C("show", "dmg/runjsonobj")
C("show", "dmg/runjsonempty")
C("show", "dmg/v99")
C("show", "dmg/bom")
C("show", "dmg/rowsnan")
C("show", "dmg/linkresults")
C("show", "dangling")
C("show", "r/rec", "--json", "--format", "markdown")
C("show", "r/rec", env={"COLUMNS": "-5"}, id="COLUMNS=-5 show")
C("show", "r/rec", env={"COLUMNS": "abc"}, id="COLUMNS=abc show")
C("show", "r/rec", env={"NO_COLOR": "1", "FORCE_COLOR": "1"},
  id="NO_COLOR and FORCE_COLOR show")
C("fingerprint", "dmg/ttgirfile")
C("fingerprint", "r/rec", "--scrub", "")
C("fingerprint", "abroot")
C("fingerprint", "batch")
C("fingerprint", "dangling")
# zlh ops / backends
C("ops", "--adapter", "nosuch")
C("ops", "--csv", "--json", "--adapter", "builtin")
C("ops", "--verify-collect", "--adapter", "builtin")
C("ops", "[", "--adapter", "builtin")
C("ops", "--vllm", "afile")
C("ops", "--all-builtin", "--adapter", "flaggems")
C("ops", "\u00e4dd", "--adapter", "builtin")
C("ops", "--adapter", "flaggems", env={"FLAGGEMS_DIR": "dangling"},
  id="FLAGGEMS_DIR=dangling ops --adapter flaggems")
C("backends", "--json")
# zlh shapes
C("shapes", "derive", "--flaggems-dir", "afile", "--out", "d.yaml")
C("shapes", "derive", "--flaggems-dir", str(FAKE_FLAGGEMS), "--out", "sh/add.yaml")
C("shapes", "check", "sh/onlycomment.yaml")
C("shapes", "check", "sh/unicode.yaml")
C("shapes", "check", "dangling")
C("shapes", "model", "model/empty.json", "--tokens", "1", "--out", "m.yaml")
C("shapes", "model", "model/heads.json", "--tokens", "1", "--out", "m.yaml")
C("shapes", "model", "model/list.json", "--tokens", "1", "--out", "m.yaml")
C("shapes", "model", "model/heads.json", "--tokens", "0", "--out", "m.yaml")
C("shapes", "model", "model/heads.json", "--tokens", "abc", "--out", "m.yaml")
C("shapes", "model", "model/heads.json", "--tokens", "1", "--out", "sh/add.yaml")
C("shapes", "bogus")

# Python API
A("bench '' op", lambda ws: harness.bench("", **API))
A("bench op 5", lambda ws: harness.bench(5, **API))
A("bench shapes=5", lambda ws: harness.bench("add", **dict(API, shapes=5)))
A("bench dtypes str", lambda ws: harness.bench("add", dtypes="float99", **API))
A("bench dtypes list bad", lambda ws: harness.bench("add", dtypes=["float99"], **API))
A("bench out=5", lambda ws: harness.bench("add", out=5, **API))
A("bench out afile", lambda ws: harness.bench("add", out="afile", **API))
A("bench min_samples=0", lambda ws: harness.bench("add", **dict(API, min_samples=0)))
A("bench unknown keyword", lambda ws: harness.bench("add", bogus=1, **API))
A("bench replay missing", lambda ws: harness.bench("add", replay="nonexistent", **API))
A("bench replay abroot", lambda ws: harness.bench("add", replay="abroot", **API))
A("bench timer graph", lambda ws: harness.bench("add", timer="graph", **API))
A("bench seed -1", lambda ws: harness.bench("add", seed=-1, **API))
A("bench seed True", lambda ws: harness.bench("add", seed=True, **API))
A("bench device str", lambda ws: harness.bench("add", device="0", **API))
A("bench backend banana", lambda ws: harness.bench("add", **dict(API, backend="banana")))
A("bench adapter 5", lambda ws: harness.bench("add", **dict(API, adapter=5)))
A("bench_many empty", lambda ws: harness.bench_many([], **API))
A("measure 5", lambda ws: harness.measure(5, backend="cpu"))
A("measure min_samples -1", lambda ws: harness.measure(lambda: 1, backend="cpu",
                                                       min_samples=-1))
A("measure timer bogus", lambda ws: harness.measure(lambda: 1, backend="cpu", timer="bogus"))
A("measure backend banana", lambda ws: harness.measure(lambda: 1, backend="banana"))
A("measure max_time nan", lambda ws: harness.measure(lambda: 1, backend="cpu",
                                                     max_time_ms=math.nan))
A("measure repeat 0", lambda ws: harness.measure(lambda: 1, backend="cpu", repeat=0))
A("measure name 5", lambda ws: harness.measure(lambda: 1, backend="cpu", name=5))
A("measure fn raises", lambda ws: harness.measure(lambda: 1 / 0, backend="cpu", **FAST_API),
  error=harness.ZlhError)
A("compare missing", lambda ws: harness.compare("nonexistent", "r/rep"))
A("compare 5 6", lambda ws: harness.compare(5, 6))
A("compare same", lambda ws: harness.compare("r/rep", "r/rep"))
A("compare softmax", lambda ws: harness.compare("r/rec", "r/soft"), error=harness.CaliberError)
A("compare alpha 0", lambda ws: harness.compare("r/rec", "r/rep", alpha=0))
A("compare batch root", lambda ws: harness.compare("r/rec", "batch"))
A("compare newer run.json", lambda ws: harness.compare("r/rec", "dmg/v99"))
A("compare root abroot", lambda ws: harness.compare("r/rec", "r/rep", root="abroot"))
A("compare echo 5", lambda ws: harness.compare("r/rec", "r/rep", echo=5))
A("StoppingRule min_samples 0", lambda ws: harness.StoppingRule(min_samples=0))
A("Budget warmup -1", lambda ws: harness.Budget(warmup_ms=-1))
A("Case fn 5", lambda ws: harness.Case(fn=5, baseline=abs, inputs=lambda: (1,),
                                       dtype="float32", shape=[1]))
A("Case dtype bogus", lambda ws: harness.Case(fn=abs, baseline=abs, inputs=lambda: (1,),
                                              dtype="float99", shape=[1]))


EXPECT: dict[str, tuple[int, str | None]] = {}    # filled below, after the runner


# The outcome of every row: (exit code, a fragment of the first stderr line; None: no
# error line). API rows: code 2 stands for the row's exception class.
EXPECT.update({
    "bench ''":
        (2, "unknown op '' for adapter builtin (known: add, mm, softmax)"),
    'bench add,':
        (2, "unknown op 'add,' for adapter builtin; did you mean add?"),
    'bench ADD':
        (2, "unknown op 'ADD' for adapter builtin (known: add, mm, softmax)"),
    'bench ädd':
        (2, "unknown op 'ädd' for adapter builtin; did you mean add?"),
    "bench 'add\\n'":
        (2, "unknown op 'add\\n' for adapter builtin; did you mean add?"),
    'bench add add':
        (0, None),
    'bench add --dtypes float32,float32':
        (0, None),
    'bench add --dtypes Float32':
        (2, "dtype Float32 not supported by op 'add' on backend cpu;"),
    'bench add --dtypes float32;float16':
        (2, "dtype float32;float16 not supported by op 'add' on backend"),
    'bench add --dtypes torch.float32':
        (2, "dtype torch.float32 not supported by op 'add' on backend cpu;"),
    'bench add --dtypes ƒloat32':
        (2, "dtype ƒloat32 not supported by op 'add' on backend cpu;"),
    "bench add --cases ''":
        (2, "Invalid value for '--cases': an empty value; leave the option"),
    'bench --cases nosuchmodule_zlh:CASES':
        (2, '--cases nosuchmodule_zlh:CASES: no module named'),
    'bench --cases nocolon':
        (2, '--cases expects MODULE:ATTR (e.g. mypkg.bench:cases), got'),
    'bench --cases usermod_raise:CASES':
        (3, 'PREFLIGHT_FAILED check=import_cases --cases'),
    'bench --cases usermod_ok:CASES':
        (3, 'PREFLIGHT_FAILED check=cases --cases usermod_ok:CASES names a'),
    'bench --cases usermod_ok:NAMES':
        (2, '--cases usermod_ok:NAMES: item 0 (str) is not a harness.Case'),
    'bench --cases usermod_ok:MISSING':
        (2, '--cases usermod_ok:MISSING: module usermod_ok has no'),
    'bench --cases usermod_ok:CASES --adapter flaggems':
        (2, '--cases names user cases; it cannot be combined with'),
    'bench --cases :CASES':
        (2, '--cases expects MODULE:ATTR (e.g. mypkg.bench:cases), got'),
    'bench add --ir-stage ptx':
        (0, None),
    'bench add --no-ir --ir-stage llir':
        (2, '--ir-stage llir names the IR to capture and --no-ir captures'),
    'bench add --telemetry-interval -1':
        (2, "Invalid value for '--telemetry-interval': -1.0 is not in the"),
    'bench add --telemetry-interval nan':
        (2, "Invalid value for '--telemetry-interval': nan is not a finite"),
    'bench add --retry-throttled -1':
        (2, "Invalid value for '--retry-throttled': -1 is not in the range"),
    'bench add --parallel-sweep 0':
        (2, "Invalid value for '--parallel-sweep': 0 is not in the range"),
    'bench add --parallel-sweep 2':
        (0, None),
    'bench add --sweep-devices x --parallel-sweep 2':
        (2, "--sweep-devices expects indices such as 0,1,2, got 'x'"),
    'bench add --sweep-devices 0,0 --parallel-sweep 2':
        (2, '--sweep-devices expects distinct non-negative indices, got'),
    'bench add --sweep-devices 0':
        (2, '--sweep-devices needs --parallel-sweep N (it names the'),
    'bench add --parallel-sweep 2 --replay r/rec':
        (2, '--parallel-sweep sweeps the autotune configs of a record run;'),
    'bench add --color purple':
        (2, "Invalid value for '--color': 'purple' is not one of 'auto',"),
    'bench add --format html':
        (2, "Invalid value for '--format': 'html' is not one of 'text',"),
    'bench add --plant-pct 0':
        (0, None),
    'bench add --plant-pct -5':
        (2, "Invalid value for '--plant-pct': -5.0 is not in the range"),
    'bench add --target-rel-err -0.1':
        (2, "Invalid value for '--target-rel-err': -0.1 is not in the"),
    'bench add --target-rel-err 2':
        (0, None),
    'bench add --warmup-ms -1':
        (2, "Invalid value for '--warmup-ms': -1.0 is not in the range"),
    'bench add --min-samples 1000000000':
        (0, None),
    'bench add --min-samples -3':
        (2, "Invalid value for '--min-samples': -3 is not in the range"),
    'bench add --device 99999999999999999999':
        (3, 'PREFLIGHT_FAILED check=device --device 99999999999999999999:'),
    'bench add --repeat -1':
        (2, "Invalid value for '--repeat': -1 is not in the range"),
    'bench add --seed ٣':
        (0, None),
    'bench add --level comprehensive':
        (0, None),
    'bench add --flaggems-dir afile':
        (3, 'PREFLIGHT_FAILED check=flaggems_dir FlagGems checkout'),
    'bench add --adapter flaggems --flaggems-dir afile':
        (3, 'PREFLIGHT_FAILED check=flaggems_dir FlagGems checkout'),
    'FLAGGEMS_DIR=afile bench --adapter flaggems':
        (3, 'PREFLIGHT_FAILED check=flaggems_dir FlagGems checkout'),
    "FLAGGEMS_DIR='' bench --adapter flaggems":
        (3, 'PREFLIGHT_FAILED check=flaggems_dir no FlagGems checkout'),
    "bench add --adapter ''":
        (2, "Invalid value for '--adapter': unknown adapter '' (known:"),
    'bench add --backend CPU':
        (0, None),
    "bench add --backend 'cpu '":
        (0, None),
    'bench add --shapes sh/tabs.yaml':
        (2, 'shape file sh/tabs.yaml is not valid YAML at line 2: found'),
    'bench add --shapes sh/unicode.yaml':
        (2, "shape file has no entry for op 'add' (top-level keys: ädd)"),
    'bench add --shapes sh/scalar.yaml':
        (2, "sh/scalar.yaml: 'add' needs a non-empty list of shapes"),
    'bench add --shapes sh/nested.yaml':
        (2, 'shape file: add shape [[64]] is not a list of non-negative'),
    'bench add --shapes sh/mapshape.yaml':
        (2, "sh/mapshape.yaml: 'add' has an invalid shape {'m': 64}"),
    'bench add --shapes sh/onlycomment.yaml':
        (2, 'sh/onlycomment.yaml: top level must be a mapping of op or'),
    'bench add --shapes sh/descnum.yaml':
        (2, "sh/descnum.yaml: 'add' shape_desc must be a string, got 5"),
    'bench add --shapes sh/emptyshape.yaml':
        (2, "sh/emptyshape.yaml: 'add' has an invalid shape [] (expected a"),
    'bench add --shapes dangling':
        (2, 'shape file not found: dangling'),
    'bench add --shapes /dev/null':
        (2, 'shape file /dev/null is not a regular file'),
    'bench add --shapes bin.txt':
        (2, "shape file bin.txt cannot be read: 'utf-8' codec can't decode"),
    'bench add --out dangling':
        (2, '--out dangling: a symbolic link that leads nowhere (a loop or'),
    'bench add --out r/rec/run.json':
        (2, '--out r/rec/run.json: exists and is not a directory'),
    'bench add --replay batch':
        (2, '--replay batch: not a record run (no autotune/meta.json)'),
    'bench add --replay abroot':
        (2, '--replay abroot: not a record run (no autotune/meta.json)'),
    'bench add --replay screen':
        (2, '--replay screen: not a record run (no autotune/meta.json)'),
    'bench add --replay r/soft':
        (2, "--replay r/soft: recorded op 'softmax', not 'add'"),
    'bench add --replay dmg/norecords':
        (2, '--replay dmg/norecords: record run has no'),
    'bench add --replay dmg/recordslist':
        (2, '--replay dmg/recordslist: records.json is not a JSON object'),
    'bench add --replay dmg/metagarbage':
        (2, '--replay dmg/metagarbage: cannot read meta.json: Expecting'),
    'bench add --replay dmg/noautotune':
        (2, '--replay dmg/noautotune: not a record run (no'),
    'bench add --replay dangling':
        (2, '--replay dangling: no such run directory'),
    'bench add --replay afile':
        (2, '--replay afile: no such run directory'),
    'bench add --replay dmg/runjsonobj':
        (2, '--replay dmg/runjsonobj: that run replayed configs from'),
    'TRITON_INTERPRET=banana bench':
        (0, None),
    'ab r/rec r/rep --fail-on slower':
        (2, "Invalid value for '--fail-on': 'slower': expected slower:PCT,"),
    'ab r/rec r/rep --fail-on slower:abc':
        (2, "Invalid value for '--fail-on': 'slower:abc': expected"),
    'ab r/rec r/rep --fail-on slower:-5':
        (2, "Invalid value for '--fail-on': 'slower:-5': expected"),
    'ab r/rec r/rep --fail-on geomean:nan':
        (2, "Invalid value for '--fail-on': 'geomean:nan': expected"),
    'ab r/rec r/rep --fail-on bogus':
        (2, "Invalid value for '--fail-on': 'bogus': expected slower:PCT,"),
    "ab r/rec r/rep --fail-on ''":
        (2, "Invalid value for '--fail-on': '' names no gate: expected"),
    'ab r/rec r/rep --fail-on slower:1e400':
        (2, "Invalid value for '--fail-on': 'slower:1e400': expected"),
    'ab r/rec dangling':
        (2, 'dangling is not a run directory (no such directory)'),
    'ab r/rec dmg/empty_results':
        (1, '!!! add: no case paired between A and B (side B has no result'),
    'ab r/rec dmg/no_results':
        (1, '!!! add: no case paired between A and B (side B has no result'),
    'ab r/rec dmg/v99':
        (2, 'dmg/v99/run.json: schema_version 99 is newer than this zlh'),
    'ab r/rec dmg/opempty':
        (4, '!!! [caliber] add: op differs: A=add, B='),
    'ab r/rec dmg/bom':
        (2, 'dmg/bom/run.json cannot be read: Unexpected UTF-8 BOM (decode'),
    'ab r/rec dmg/runjsonempty':
        (2, 'dmg/runjsonempty/run.json cannot be read: Expecting value:'),
    'ab r/rec dmg/runjsonobj':
        (4, '!!! [caliber] add: side B has no identity'),
    'ab r/rec dmg/rowsunicode':
        (0, None),
    'ab r/rec dmg/rowsnan':
        (2, 'line 1 is not a result row (field speedup: expected a finite number, got NaN'),
    'ab r/rec dmg/linkresults':
        (1, '!!! add: no case paired between A and B (side B has no result'),
    'ab r/rec r/rep --root abroot':
        (2, '--root abroot already holds an A/B (report.json); a new one'),
    'ab r/rec r/rep --root batch':
        (2, '--root batch is the root of a zlh batch, screen or campaign'),
    'ab r/rec r/rep --noise-floor nf/list.json':
        (2, '--noise-floor nf/list.json is not a zlh calibration.json'),
    'ab r/rec r/rep --noise-floor nf/v1empty.json':
        (2, '--noise-floor nf/v1empty.json is not a zlh calibration.json'),
    'ab r/rec r/rep --noise-floor nf/garbage.json':
        (2, '--noise-floor nf/garbage.json cannot be read: Expecting'),
    'ab r/rec r/rep --switch ZLH_BUILTIN_SLOW=0,1':
        (2, 'r/rec is a run directory, not an op; to compare two existing'),
    'ab r/rec r/rep --python-a exe':
        (2, 'r/rec is a run directory, not an op; to compare two existing'),
    'ab r/rec r/rep --recipe rc/nothing.yaml':
        (2, '--recipe only applies when zlh ab runs the sides; two existing'),
    'ab r/rec r/rep --ops-file of/add.txt --recipe rc/nothing.yaml':
        (2, 'only apply when zlh ab runs the sides'),
    'ab r/rec r/rep --replay r/rec':
        (2, '--replay RUN_A takes no ops or side options'),
    'ab r/rec batch':
        (2, 'batch is not a run directory (no run.json)'),
    'ab screen r/rep':
        (2, 'screen is not a run directory (no run.json)'),
    'ab add --switch ZLH_BUILTIN_SLOW=0,1,2':
        (2, '--switch expects NAME=A_VALUE,B_VALUE, got'),
    'ab add --switch ZLH_BUILTIN_SLOW=0':
        (2, '--switch expects NAME=A_VALUE,B_VALUE, got'),
    'ab add --switch 1X=0,1':
        (2, "--switch: '1X' is not an environment variable name (letters,"),
    'ab add --switch X Y=0,1':
        (2, "--switch: 'X Y' is not an environment variable name (letters,"),
    'ab add --env-a =1':
        (2, "--env-a expects NAME=VALUE, got '=1'"),
    'ab add --env-b X=1 --env-b X=2':
        (2, '--env-b: X is given twice (X=1 and X=2); give it once'),
    'ab add --python-a adir':
        (2, '--python-a: interpreter adir is not an executable file'),
    'ab add --python-a dangling':
        (2, '--python-a: interpreter dangling not found'),
    'ab add':
        (2, 'give two run directories (zlh ab RUN_A RUN_B), --replay'),
    'ab --env-b X=1 --ops-file of/comments.txt':
        (2, 'of/comments.txt names no op'),
    'ab --env-b X=1 --ops-file of/unicode.txt':
        (2, "unknown op 'ädd' for adapter builtin; did you mean add?"),
    'ab --env-b X=1 --ops-file bin.txt':
        (2, "ops file bin.txt cannot be read: 'utf-8' codec can't decode"),
    'ab add --env-b ZLH_BUILTIN_SLOW=1 --fail-on slower:x':
        (2, "Invalid value for '--fail-on': 'slower:x': expected"),
    'ab add --env-b ZLH_BUILTIN_SLOW=1 --noise-floor dangling':
        (2, '--noise-floor dangling: no such file (run zlh calibrate first)'),
    'ab add --env-b ZLH_BUILTIN_SLOW=1 --root r/rec/run.json':
        (2, '--root r/rec/run.json: exists and is not a directory'),
    'ab add --env-b ZLH_BUILTIN_SLOW=1 --root screen':
        (2, '--root screen is the root of a zlh batch, screen or campaign'),
    'ab add --env-b ZLH_BUILTIN_SLOW=1 --device 7':
        (3, 'PREFLIGHT_FAILED check=device --device 7: backend cpu sees'),
    'ab --recipe rc/both.yaml':
        (2, 'use either --switch or --env-a/--env-b'),
    'ab --recipe rc/emptyops.yaml':
        (2, 'recipe rc/emptyops.yaml: ops must be a non-empty list of op'),
    'ab --recipe rc/unicodeop.yaml':
        (2, "unknown op 'ädd' for adapter builtin; did you mean add?"),
    'ab --recipe rc/roundstrue.yaml':
        (2, 'recipe rc/roundstrue.yaml: rounds must be a whole number from'),
    'ab --recipe rc/eqname.yaml':
        (2, "recipe rc/eqname.yaml: env_b: 'A=B' is not a variable name"),
    'ab --recipe rc/pyrel.yaml':
        (2, '--python-a: interpreter ./nope/python not found'),
    'ab --recipe rc/nothing.yaml':
        (2, 'give two run directories (zlh ab RUN_A RUN_B), --replay'),
    'ab --recipe rc/opsint.yaml':
        (2, 'recipe rc/opsint.yaml: ops must be a non-empty list of op'),
    'ab --recipe rc/empty.yaml':
        (2, 'recipe rc/empty.yaml: top level must be a mapping'),
    'ab --recipe rc/switch3.yaml':
        (2, '--switch expects NAME=A_VALUE,B_VALUE, got'),
    'ab --recipe dangling':
        (2, 'recipe dangling cannot be read: No such file or directory'),
    'ab --recipe /dev/null':
        (2, 'recipe /dev/null cannot be read: not a regular file (a pipe'),
    'ab --replay batch':
        (2, 'batch is not a run directory (no run.json)'),
    'ab --replay screen':
        (2, 'screen is not a run directory (no run.json)'),
    'ab --replay abroot':
        (2, 'abroot is not a run directory (no run.json; it is an A/B'),
    'ab --replay dmg/noautotune':
        (2, '--replay dmg/noautotune: not a record run (no'),
    'ab --replay r/rec --rounds 2':
        (2, '--rounds does not apply with --replay RUN_A: side A is a'),
    'ab --replay r/rec --switch ZLH_BUILTIN_SLOW=0,1':
        (2, '--replay RUN_A takes no ops or side options'),
    'ab --replay r/rec --python-b adir':
        (2, '--replay RUN_A takes no ops or side options'),
    'ab --replay r/rec --root abroot':
        (2, '--root abroot already holds an A/B (report.json); a new one'),
    'batch':
        (2, 'name the ops with exactly one of --all, --ops a,b,… or'),
    'batch --all --ops add':
        (2, 'name the ops with exactly one of --all, --ops a,b,… or'),
    "batch --ops ' '":
        (2, "Invalid value for '--ops': an empty list; leave the option"),
    'batch --ops add --ops-file of/add.txt':
        (2, 'name the ops with exactly one of --all, --ops a,b,… or'),
    'batch --ops-file of/comments.txt':
        (2, 'the selection is empty: no op left to run'),
    'batch --ops-file bin.txt':
        (2, "ops file bin.txt cannot be read: 'utf-8' codec can't decode"),
    'batch --ops-file adir':
        (2, 'ops file adir cannot be read: Is a directory'),
    'batch --ops-file of/spaces.txt':
        (2, "of/spaces.txt:1: op names have no spaces: 'add softmax'"),
    'batch --all --dismiss nonexistent.txt':
        (2, 'dismiss list nonexistent.txt cannot be read: No such file or'),
    'batch --ops add --retries -1':
        (2, "Invalid value for '--retries': -1 is not in the range"),
    'batch --ops add --op-timeout 0':
        (2, "Invalid value for '--op-timeout': 0.0 is not in the range"),
    'batch --out an empty folder':
        (0, None),
    'batch --ops add --out fx':
        (2, '--out fx exists and is not empty; use --resume fx to continue'),
    'batch --ops add --out batch':
        (2, '--out batch exists and is not empty; use --resume batch to'),
    'batch --resume screen':
        (2, 'screen is not a batch root (no batch.json)'),
    'batch --resume campaign':
        (2, 'campaign is not a batch root (no batch.json)'),
    'batch --resume r/rec':
        (2, 'r/rec is not a batch root (no batch.json)'),
    'batch --resume batch --ops add':
        (2, '--resume BATCH_DIR takes its ops from the batch; name none'),
    'batch --resume afile':
        (2, '--resume afile is a file, not a batch root'),
    'batch --replay nonexistent --ops add':
        (2, '--replay nonexistent: no such batch root (a finished `zlh'),
    'batch --replay r/rec --ops add':
        (2, 'r/rec is not a batch root (no batch.json)'),
    'batch --replay batch --resume batch':
        (2, '--resume ROOT works from what ROOT holds; leave out --replay'),
    'batch --ops add --vllm afile':
        (2, '--vllm adds a FlagGems-vllm checkout: it needs the flaggems'),
    'batch --ops add --allow-env-change':
        (2, '--allow-env-change applies to --resume only'),
    'batch --ops add --backend cuda':
        (3, 'PREFLIGHT_FAILED check=backend backend cuda has no usable'),
    'screen --ops add':
        (2, 'say what differs between the sides: --switch NAME=a,b,'),
    'screen --ops add --switch X=0,1 --env-a Y=1':
        (2, 'use either --switch or --env-a/--env-b'),
    'screen --ops add --switch X=0,1 --retries -1':
        (2, "Invalid value for '--retries': -1 is not in the range"),
    'screen --ops add --switch X=0,1 --python-a nonexistent/python':
        (2, '--python-a: interpreter nonexistent/python not found'),
    'screen --ops add --switch X=0,1 --scrub [':
        (2, "bad scrub pattern '[': unterminated character set at position"),
    'screen --ops add --switch X=0,1 --allow-env-change':
        (2, '--allow-env-change applies to --resume only'),
    'screen --ops add --switch X=0,1 --root screen':
        (2, '--root screen exists and is not empty; use --resume screen to'),
    'screen --ops add --switch X=0,1 --root batch':
        (2, '--root batch exists and is not empty; use --resume batch to'),
    'screen --rescore batch':
        (2, 'batch is not a screen root (no screen.json)'),
    'screen --rescore campaign':
        (2, 'campaign is not a screen root (no screen.json)'),
    'screen --rescore afile':
        (2, '--rescore afile is a file, not a screen root'),
    'screen --resume batch':
        (2, 'batch is not a screen root (no screen.json)'),
    'screen --resume screen --rescore screen':
        (2, '--rescore ROOT works from what ROOT holds; leave out --resume'),
    'screen --rescore screen --switch X=0,1':
        (2, '--rescore ROOT works from what ROOT holds; leave out --switch'),
    'screen --resume abroot':
        (2, 'abroot is not a screen root (no screen.json)'),
    'campaign --screen batch --devices 0':
        (2, 'batch is not a screen root (no screen.json)'),
    'campaign --screen screen --devices 0 --verdict BOGUS':
        (2, "Invalid value for '--verdict': 'BOGUS' is not one of"),
    'campaign --screen screen --devices 0 --rounds 0':
        (2, "Invalid value for '--rounds': 0 is not in the range"),
    "campaign --screen screen --devices 0 --only ''":
        (2, "Invalid value for '--only': an empty list; leave the option"),
    "campaign --screen screen --devices 0 --extra-ops ''":
        (2, "Invalid value for '--extra-ops': an empty list; leave the"),
    'campaign --screen screen --devices 0,0':
        (2, "--devices expects distinct non-negative indices, got '0,0'"),
    'campaign --screen screen --devices 0 --timeout -1':
        (2, "Invalid value for '--timeout': -1.0 is not in the range x>=1."),
    'campaign --screen screen --devices 0 --verdict NO_TRITON --root campaign':
        (2, '--root campaign exists and is not empty; use --resume'),
    'campaign --screen screen --devices 0 --verdict NO_TRITON --root afile':
        (2, '--root afile: exists and is not a directory'),
    'campaign --resume batch':
        (2, 'batch is not a campaign root (no campaign.json)'),
    'campaign --resume screen':
        (2, 'screen is not a campaign root (no campaign.json)'),
    'campaign --resume campaign --screen screen':
        (2, '--resume ROOT works from what ROOT holds; leave out --screen'),
    'campaign --resume campaign --dry-run':
        (0, None),
    'campaign --screen screen.tsv --devices 0':
        (2, '--screen screen.tsv is a file, not a screen root'),
    'partition screen.tsv --devices 0,0 --verdict NO_TRITON':
        (2, "--devices expects distinct non-negative indices, got '0,0'"),
    'partition screen.tsv --devices 0 --verdict NO_TRITON --rounds 0':
        (2, "Invalid value for '--rounds': 0 is not in the range"),
    'partition screen.tsv --devices 0 --verdict NO_TRITON --format json':
        (2, "Invalid value for '--format': 'json' is not one of 'text',"),
    'partition adir --devices 0':
        (2, "Invalid value for 'SCREEN_TSV': File 'adir' is a directory."),
    'partition dangling --devices 0':
        (2, "dangling: no such screen table (a screen root's screen.tsv)"),
    'partition pt/nan.tsv --devices 0 --verdict NO_TRITON':
        (0, None),
    'partition pt/neg.tsv --devices 0 --verdict NO_TRITON':
        (0, None),
    'partition pt/inf.tsv --devices 0 --verdict NO_TRITON':
        (0, None),
    'partition pt/lower.tsv --devices 0 --verdict NO_TRITON':
        (2, 'pt/lower.tsv: no op with verdict NO_TRITON'),
    'partition pt/crlf.tsv --devices 0 --verdict NO_TRITON':
        (0, None),
    'partition screen --devices 0':
        (2, "Invalid value for 'SCREEN_TSV': File 'screen' is a directory."),
    'partition screen.tsv':
        (2, "Missing option '--devices' / '--gpus'. (see `zlh partition --help`)"),
    'calibrate':
        (2, 'name at least one op to calibrate (or --cases MODULE:ATTR, whose op is ATTR)'),
    'calibrate add --plant-pct 0':
        (2, "Invalid value for '--plant-pct': 0.0 is not in the range"),
    'calibrate add --timeout 0':
        (2, "Invalid value for '--timeout': 0.0 is not in the range x>=1."),
    'calibrate add --root abroot':
        (2, '--root abroot already holds an A/B (report.json); a new one'),
    'calibrate add --root r/rec':
        (2, '--root r/rec is a run directory (it holds run.json), not a'),
    'calibrate add --replay r/rec':
        (2, "No such option '--replay'. Did you mean '--repeat'? (see `zlh"),
    'calibrate add --dtypes float64':
        (2, "dtype float64 not supported by op 'add' on backend cpu;"),
    'calibrate add --backend cuda':
        (3, 'PREFLIGHT_FAILED check=backend backend cuda has no usable'),
    'product prepare mf/empty.json --selection canary --dry-run':
        (2, 'manifest mf/empty.json: schema_version: must be 1, got None'),
    'product prepare mf/list.json --selection canary --dry-run':
        (2, 'manifest mf/list.json: the top level must be a JSON object'),
    'product prepare mf/v99.json --selection canary --dry-run':
        (2, 'manifest mf/v99.json: schema_version: must be 1, got 99'),
    'product prepare mf/str.json --selection canary --dry-run':
        (2, 'manifest mf/str.json: the top level must be a JSON object'),
    'product prepare mf/nul.json --selection canary --dry-run':
        (2, "manifest mf/nul.json: campaign_id: 'a\\x00b' does not match"),
    'product prepare mf/good.json --selection all --dry-run':
        (0, None),
    'product prepare mf/good.json --selection canary --canary-receipt afile --dry-run':
        (2, '--canary-receipt is for --selection all only'),
    'product prepare mf/good.json --selection canary --out afile':
        (2, 'out afile: exists and is not a directory'),
    'product prepare adir --selection canary':
        (2, "Invalid value for 'MANIFEST': File 'adir' is a directory."),
    'product prepare dangling --selection canary':
        (2, 'manifest dangling: cannot be read (No such file or directory)'),
    'product run nonexistent':
        (2, 'nonexistent is not a frozen campaign plan (missing'),
    'product run r/rec':
        (2, 'is not a frozen campaign plan (missing manifest.json'),
    'product run batch --resume':
        (2, 'batch is not a frozen campaign plan (missing manifest.json,'),
    'product reaccount r/rec --out re':
        (2, 'campaign-receipt.json: no such campaign receipt'),
    'product reaccount batch --out batch/re':
        (2, 'batch/campaign-receipt.json: no such campaign receipt (a'),
    'product reaccount adir --out re --measured-launch-floor 1e30':
        (2, "Invalid value for '--measured-launch-floor': '1e30' is not a"),
    'product bogus':
        (2, "No such command 'bogus'. (see `zlh product --help`)"),
    'report rep/v99':
        (2, 'rep/v99/report.json: schema_version 99 is newer than this zlh'),
    'report rep/opsint':
        (2, 'rep/opsint/report.json: ops[0]: expected an object, got 5'),
    'report rep/empty':
        (2, 'rep/empty/report.json cannot be read: Expecting value: line 1'),
    'report rep/nul':
        (2, 'rep/nul/report.json cannot be read: Expecting value: line 1'),
    'report abroot --format json':
        (2, "Invalid value for '--format': 'json' is not one of 'text',"),
    'report dangling':
        (2, 'dangling: a symbolic link that leads nowhere (a loop or a missing target) (give'),
    'show dmg/empty_results':
        (0, None),
    'show dmg/no_results':
        (0, None),
    'show dmg/runjsonobj':
        (0, None),
    'show dmg/runjsonempty':
        (2, 'dmg/runjsonempty/run.json cannot be read: Expecting value:'),
    'show dmg/v99':
        (2, 'dmg/v99/run.json: schema_version 99 is newer than this zlh'),
    'show dmg/bom':
        (2, 'dmg/bom/run.json cannot be read: Unexpected UTF-8 BOM (decode'),
    'show dmg/rowsnan':
        (2, 'line 1 is not a result row (field speedup: expected a finite number, got NaN'),
    'show dmg/linkresults':
        (0, None),
    'show dangling':
        (2, 'dangling is not a run directory (no such directory)'),
    'show r/rec --json --format markdown':
        (0, None),
    'COLUMNS=-5 show':
        (0, None),
    'COLUMNS=abc show':
        (0, None),
    'NO_COLOR and FORCE_COLOR show':
        (0, None),
    'fingerprint dmg/ttgirfile':
        (1, None),
    "fingerprint r/rec --scrub ''":
        (2, "bad scrub pattern '': it matches the empty string, so it"),
    'fingerprint abroot':
        (2, 'abroot is not a run directory (no run.json or ttgir/)'),
    'fingerprint batch':
        (2, 'batch is not a run directory (no run.json or ttgir/)'),
    'fingerprint dangling':
        (2, 'dangling is not a run directory (no such directory)'),
    'ops --adapter nosuch':
        (2, "Invalid value for '--adapter': unknown adapter 'nosuch'"),
    'ops --csv --json --adapter builtin':
        (2, 'give one of --csv and --json (two forms of one listing)'),
    'ops --verify-collect --adapter builtin':
        (2, "--verify-collect goes with --csv (it fills the CSV's collect"),
    'ops [ --adapter builtin':
        (2, "no op matches '[' (3 ops; `zlh ops` lists them)"),
    'ops --vllm afile':
        (2, '--vllm lists a FlagGems-vllm checkout: it needs the flaggems'),
    'ops --all-builtin --adapter flaggems':
        (3, 'PREFLIGHT_FAILED check=flaggems_dir no FlagGems checkout'),
    'ops ädd --adapter builtin':
        (2, "no op matches 'ädd'; did you mean add? (3 ops; `zlh ops`"),
    'FLAGGEMS_DIR=dangling ops --adapter flaggems':
        (3, 'PREFLIGHT_FAILED check=flaggems_dir FlagGems checkout'),
    'backends --json':
        (0, None),
    'shapes derive --flaggems-dir afile --out d.yaml':
        (3, 'PREFLIGHT_FAILED check=flaggems_dir FlagGems checkout'),
    'shapes derive --flaggems-dir FAKE_FLAGGEMS --out sh/add.yaml':
        (2, '--out sh/add.yaml exists; add --force to replace it'),
    'shapes check sh/onlycomment.yaml':
        (2, 'sh/onlycomment.yaml: top level must be a mapping of op or'),
    'shapes check sh/unicode.yaml':
        (2, 'zlh shapes check: no FlagGems checkout to match the keys'),
    'shapes check dangling':
        (2, 'shape file not found: dangling'),
    'shapes model model/empty.json --tokens 1 --out m.yaml':
        (2, 'model config has none of hidden_size'),
    'shapes model model/heads.json --tokens 1 --out m.yaml':
        (2, "model config num_attention_heads='x' is not a whole number >="),
    'shapes model model/list.json --tokens 1 --out m.yaml':
        (2, 'model config model/list.json must be a mapping and --tokens'),
    'shapes model model/heads.json --tokens 0 --out m.yaml':
        (2, 'model config model/heads.json must be a mapping and --tokens'),
    'shapes model model/heads.json --tokens abc --out m.yaml':
        (2, '--tokens takes integers, got abc'),
    'shapes model model/heads.json --tokens 1 --out sh/add.yaml':
        (2, '--out sh/add.yaml exists; add --force to replace it'),
    'shapes bogus':
        (2, "No such command 'bogus'. (see `zlh shapes --help`)"),
    "api bench '' op":
        (2, "unknown op '' for adapter builtin (known: add, mm, softmax)"),
    'api bench op 5':
        (2, 'op must be a name (a string), got 5'),
    'api bench shapes=5':
        (2, 'option shapes: expected str, got 5'),
    'api bench dtypes str':
        (2, "dtypes must be a list of dtype names (e.g. ['float16']), got"),
    'api bench dtypes list bad':
        (2, "dtype float99 not supported by op 'add' on backend cpu;"),
    'api bench out=5':
        (2, 'option out: expected str, got 5'),
    'api bench out afile':
        (2, 'out afile: exists and is not a directory'),
    'api bench min_samples=0':
        (2, 'option min_samples: 0 is below its minimum 1'),
    'api bench unknown keyword':
        (2, 'unknown bench option bogus; known: adapter, cases, backend,'),
    'api bench replay missing':
        (2, "replay='nonexistent': no such run directory"),
    'api bench replay abroot':
        (2, "replay='abroot': not a record run (no autotune/meta.json)"),
    'api bench timer graph':
        (2, 'backend cpu does not support graph capture; use timer host'),
    'api bench seed -1':
        (2, 'option seed: -1 is below its minimum 0'),
    'api bench seed True':
        (2, 'option seed: expected int, got True'),
    'api bench device str':
        (2, "option device: expected int, got '0'"),
    'api bench backend banana':
        (2, "unknown backend 'banana'; known: ascend, cpu, cuda, musa, rocm"),
    'api bench adapter 5':
        (2, 'option adapter: expected str, got 5'),
    'api bench_many empty':
        (2, 'no op given; name at least one op (see `zlh ops` or the'),
    'api measure 5':
        (2, 'fn must be a callable taking no arguments, got int 5'),
    'api measure min_samples -1':
        (2, 'option min_samples: -1 is below its minimum 1'),
    'api measure timer bogus':
        (2, "option timer: unknown value 'bogus'; known: auto, graph,"),
    'api measure backend banana':
        (2, "unknown backend 'banana'; known: ascend, cpu, cuda, musa, rocm"),
    'api measure max_time nan':
        (2, 'option max_time_ms: nan is not a finite number'),
    'api measure repeat 0':
        (2, 'option repeat: 0 is below its minimum 1'),
    'api measure name 5':
        (2, 'name must be a string, got 5'),
    'api measure fn raises':
        (2, 'callable raised ZeroDivisionError: division by zero at'),
    'api compare missing':
        (2, 'nonexistent is not a run directory (no such directory)'),
    'api compare 5 6':
        (2, 'run_a: expected a run directory or a RunResult, got int'),
    'api compare same':
        (2, 'r/rep and r/rep are the same run directory; compare two runs'),
    'api compare softmax':
        (2, 'add: runs not comparable: autotune_mode: both sides record —'),
    'api compare alpha 0':
        (2, 'alpha must be a number between 0 and 1, got 0'),
    'api compare batch root':
        (2, 'batch is not a run directory (no run.json)'),
    'api compare newer run.json':
        (2, 'dmg/v99/run.json: schema_version 99 is newer than this zlh'),
    'api compare root abroot':
        (2, 'root abroot already holds an A/B (report.json); give a new'),
    'api compare echo 5':
        (2, 'echo must be a function taking one line (e.g. print) or None,'),
    'api StoppingRule min_samples 0':
        (2, 'StoppingRule: min_samples must be an integer >= 1, got 0'),
    'api Budget warmup -1':
        (2, 'Budget: warmup_ms must be a finite number >= 0, got -1'),
    'api Case fn 5':
        (2, 'Case fn: expected a callable, got int 5'),
    'api Case dtype bogus':
        (2, 'Case dtype: expected a torch dtype or its name (e.g.'),
})


# ---- running a row -----------------------------------------------------------------------------
CLASSES = ("clean", "traceback", "wrong exit", "misleading", "data lost")


def snapshot(root: Path) -> dict[str, str]:
    """Every path under root with a digest of what it holds (link target, file bytes)."""
    out = {}
    for path in root.rglob("*"):
        rel = str(path.relative_to(root))
        if path.name == ".zlh-lock":      # names its last holder; means nothing unheld
            out[rel] = "lock"
        elif path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha1(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir" if path.is_dir() else "other"
    return out


def judge(row: Row, ws: Path) -> tuple[str, str]:
    """(class, what was seen) of one row run in the workspace `ws` (the current folder). A
    row falls in the worst class it reaches: traceback, data lost, wrong exit, misleading."""
    before = snapshot(ws)
    kind, seen = _outcome(row, ws)
    if kind == "traceback":
        return kind, seen
    after = snapshot(ws)
    lost = sorted(k for k in before if after.get(k) != before[k])
    if lost:
        return "data lost", seen + " | changed or gone: " + ", ".join(lost[:5])
    new = sorted(set(after) - set(before))
    if kind == "clean" and new and row.code != 0:
        return "misleading", seen + " | left behind: " + ", ".join(new[:5])
    return kind, seen


def _outcome(row: Row, ws: Path) -> tuple[str, str]:
    if row.argv is not None:
        result = CliRunner().invoke(main, row.argv, env=row.env)
        if result.exc_info is not None and result.exc_info[0] is not SystemExit:
            return "traceback", "".join(traceback.format_exception(*result.exc_info))[-2000:]
        if "Traceback" in result.output:
            return "traceback", result.output[-2000:]
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        seen = f"exit {result.exit_code}: {lines[0] if lines else '(no stderr)'}"
        if result.exit_code != row.code:
            return "wrong exit", seen
        if row.first is None:
            if any(ln.startswith(("zlh: ", "!!! ")) for ln in lines):
                return "misleading", seen
        elif not lines or not lines[0].startswith(("zlh: ", "!!! ")) \
                or row.first not in lines[0] or "!!!" in result.stdout:
            return "misleading", seen
        return "clean", seen
    try:
        row.call(ws)
    except harness.ZlhError as exc:
        seen = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, row.error):
            return "wrong exit", seen
        if row.first not in str(exc) or "\n" in str(exc).strip():
            return "misleading", seen
        return "clean", seen
    except Exception:                                           # noqa: BLE001 - the class
        return "traceback", traceback.format_exc()[-2000:]
    return "wrong exit", "no error raised"


@pytest.fixture
def in_workspace(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    monkeypatch.syspath_prepend(str(workspace))
    for name in ("FLAGGEMS_DIR", "FLAGGEMS_VLLM_DIR", "ZLH_BUILTIN_SLOW", "ZLH_PARENT_PID",
                 "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return workspace


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_sweep(in_workspace, row):
    kind, seen = judge(row, in_workspace)
    assert kind == "clean", f"{kind}: {seen}"


def test_the_sweep_has_at_least_150_rows_over_every_command():
    assert len(ROWS) >= 150
    assert len({r.id for r in ROWS}) == len(ROWS) and set(EXPECT) == {r.id for r in ROWS}
    commands = {r.argv[0] if r.argv[0] not in ("product", "shapes") else " ".join(r.argv[:2])
                for r in ROWS if r.argv}
    assert {"bench", "ab", "batch", "screen", "campaign", "partition", "calibrate", "report",
            "show", "fingerprint", "ops", "backends", "product prepare", "product run",
            "product reaccount", "shapes derive", "shapes check", "shapes model"} <= commands
    assert sum(r.call is not None for r in ROWS) >= 20


PROCESS_ROWS = [
    (["ab", "r/rec", "r/rep", "--fail-on", "bogus"], 2, "--fail-on"),
    (["batch", "--ops", "add", "--out", "batch", *SH, *FAST], 2, "use --resume batch"),
    (["ab", "r/rec", "r/rep", "--root", "batch"], 2, "is the root of a zlh batch"),
    (["ab", "add", "--switch", "1X=0,1", *SH, *FAST], 2, "not an environment variable name"),
]


@pytest.mark.e2e
@pytest.mark.parametrize("argv, code, first", PROCESS_ROWS,
                         ids=[" ".join(a)[:40] for a, _, _ in PROCESS_ROWS])
def test_sweep_in_real_processes(workspace, argv, code, first):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for name in ("ZLH_BUILTIN_SLOW", "FLAGGEMS_DIR"):
        env.pop(name, None)
    before = snapshot(workspace)
    proc = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == code, proc.stderr
    assert lines and lines[0].startswith("zlh: ") and first in lines[0], proc.stderr
    assert snapshot(workspace) == before
