"""zlh product prepare: every manifest violation (one line naming the field, exit 2), the
corpus cross-check, the frozen plan (staging, immutability, canonical files) and the rules a
canary receipt must meet before the full campaign is frozen."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.product import freeze as freeze_mod
from harness.product.receipts import canonical, sha256_file
from harness.product.validate import load_manifest, violations

from product_fakes import builtin_doc, flaggems_doc, mutated, write


def prepare(*args):
    return CliRunner().invoke(main, ["product", "prepare", *map(str, args)])


def _set(path, value):
    """A change setting doc[path...] (None deletes the key)."""
    def change(doc):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        if value is _DELETE:
            del doc[last]
        else:
            doc[last] = value
    return change


_DELETE = object()
P = "protocol"
VIOLATIONS = [
    (_set(["schema_version"], 2), "schema_version: must be 1"),
    (_set(["campaign_id"], "bad id!"), "campaign_id:"),
    (_set(["claim"], _DELETE), "claim: missing"),
    (_set(["surprise"], 1), "surprise: unknown field"),
    (_set(["sources", "compiler", "commit"], "abc123"), "sources.compiler.commit:"),
    (_set(["sources", "compiler", "commit"], "A" * 40), "sources.compiler.commit:"),
    (_set(["sources", "zlh"], _DELETE), "sources.zlh: missing"),
    (_set(["sources", "library"], {"commit": "2" * 40}), "sources.library: must be null"),
    (_set(["sources", "compiler", "path"], "relative/dir"), "sources.compiler.path:"),
    (_set(["sources", "compiler", "import_from"], _DELETE), "sources.compiler.import_from:"),
    (_set(["sources", "compiler", "binary"], "../libx.so"), "sources.compiler.binary:"),
    (_set(["device", "backend"], "tpu"), "device.backend: unknown backend"),
    (_set(["device", "physical_device"], 0), "device.physical_device:"),
    (_set(["device", "visible_device_count"], 2), "device.visible_device_count: must be 1"),
    (_set(["device", "idle_util_pct_max"], 120), "device.idle_util_pct_max:"),
    (_set([P, "adapter"], "user"), "protocol.adapter:"),
    (_set([P, "timeout"], 1), "protocol.timeout: unknown field"),
    (_set([P, "cells"], [{"name": "off", "role": "baseline", "env": {}}]), "protocol.cells:"),
    (_set([P, "cells", 0, "role"], "control"), "protocol.cells[0].role: the first cell"),
    (_set([P, "cells", 1, "role"], "candidate"), "needs exactly one candidate cell, has 2"),
    (_set([P, "cells", 1, "name"], "off"), "protocol.cells[1].name: 'off' repeats"),
    (_set([P, "cells", 1, "name"], "Bad Name"), "protocol.cells[1].name:"),
    (_set([P, "cells", 0, "env"], {"ZLH_BUILTIN_SLOW": 0}),
     "protocol.cells[0].env.ZLH_BUILTIN_SLOW: must be a string or null"),
    (_set([P, "cells", 2, "env"], {"ZLH_BUILTIN_SLOW": "0"}), "candidate's env equals"),
    (_set([P, "timed_cells"], ["off", "control"]), "protocol.timed_cells: must be the baseline"),
    (_set([P, "timed_cells"], ["off", "nope"]), "protocol.timed_cells: 'nope' is not a cell"),
    (_set([P, "canary_order"], ["add", "softmax"]), "'softmax' is not marked canary"),
    (_set([P, "canary_order"], ["zzz"]), "'zzz' is not a workload id"),
    (_set(["workloads", 1, "canary"], True), "canaries missing from the order: softmax"),
    (_set([P, "fresh_process_per_op_cell"], False), "protocol.fresh_process_per_op_cell:"),
    (_set([P, "one_physical_device"], _DELETE), "protocol.one_physical_device: must be true"),
    (_set([P, "serial_measurement"], "yes"), "protocol.serial_measurement: must be true"),
    (_set([P, "timer"], "fast"), "protocol.timer:"),
    (_set([P, "dtypes"], []), "protocol.dtypes:"),
    (_set([P, "timeouts_s"], {"light": 1, "medium": 2}), "protocol.timeouts_s.heavy: missing"),
    (_set([P, "timeouts_s", "light"], 0), "protocol.timeouts_s.light: must be > 0"),
    (_set([P, "code_change"], "size"), "protocol.code_change:"),
    (_set([P, "measured_launch_floor"], -1), "protocol.measured_launch_floor:"),
    (_set([P, "scrub"], ["("]), "protocol.scrub[0]: bad regular expression"),
    (_set([P, "scrub"], ["a{99999999999}"]),
     "protocol.scrub[0]: bad regular expression: the repetition number is too large"),
    (_set([P, "scrub"], ["(" * 5000 + ")" * 5000]),
     "protocol.scrub[0]: bad regular expression: maximum recursion depth exceeded"),
    (_set([P, "bench"], {"out": "x"}), "protocol.bench.out: not settable here"),
    (_set([P, "bench"], {"min_samples": 0}), "protocol.bench: option min_samples"),
    (_set([P, "shapes"], "shapes.yaml"), "protocol.shapes: must be an absolute path"),
    (_set([P, "thresholds"], {"regression_pct": 1}), "protocol.thresholds.regression_pct:"),
    (_set([P, "thresholds"], {"good_pct": 0}), "protocol.thresholds.good_pct:"),
    (_set([P, "canary_gate", "classes"], {"softmax": ["B"]}),
     "protocol.canary_gate.classes.softmax: not a canary"),
    (_set([P, "canary_gate", "classes"], {"add": ["Z"]}), "protocol.canary_gate.classes.add:"),
    (_set([P, "canary_gate", "max_k"], -1), "protocol.canary_gate.max_k:"),
    (_set(["workloads"], []), "workloads: must be a non-empty list"),
    (_set(["workloads", 0, "id"], _DELETE), "workloads[0].id: missing"),
    (_set(["workloads", 0, "cost"], "huge"), "workloads[0].cost:"),
    (_set(["workloads", 0, "canary"], "yes"), "workloads[0].canary:"),
    (_set(["workloads", 0, "colour"], "red"), "workloads[0].colour: unknown field"),
    (_set(["workloads", 0, "dtypes"], "float32"), "workloads[0].dtypes:"),
    (_set(["workloads", 1, "id"], "add"), "workloads[1].id: 'add' repeats"),
    (_set(["workloads", 1, "op"], "add"), "workloads[1]: (op, op_file)"),
    (_set(["workloads", 0, "correctness"], _DELETE), "workloads[0].correctness: missing"),
    (_set(["workloads", 0, "correctness"], {"file": "t.py", "k": "x"}),
     "workloads[0].correctness.reason: narrowing"),
    (_set(["workloads", 0, "correctness"], {"k": "x", "node_ids": ["t.py::a"], "reason": "r"}),
     "k and node_ids are exclusive"),
    (_set(["workloads", 0, "correctness"], {"file": "/abs/t.py"}),
     "workloads[0].correctness.file: must be a path inside"),
    (_set(["workloads", 0, "correctness"], {"file": "t.py", "node_ids": ["t.py::a"],
                                            "reason": "r"}), "give file or node_ids, not both"),
    (_set(["workloads", 0, "correctness"], {}), "give file (optionally with k) or node_ids"),
    # values of the wrong type where names are compared are violations, not a crash
    (_set([P, "cells", 0, "role"], ["baseline"]), "protocol.cells[0].role: must be a non-empty"),
    (_set([P, "cells", 1, "name"], {"n": 1}), "protocol.cells[1].name: must be a non-empty"),
    (_set(["workloads", 1, "id"], ["x"]), "workloads[1].id: must be a non-empty string"),
    (_set(["workloads", 1, "op"], ["x"]), "workloads[1].op: must be a non-empty string"),
    (_set(["workloads", 1, "op_file"], ["x"]), "workloads[1].op_file: must be a non-empty"),
    (_set([P, "timeouts_s", "light"], 1e9), "protocol.timeouts_s.light: must be <= 604800"),
    (_set([P, "cells", 0, "env"], {"ZLH_BUILTIN_SLOW": "0\0"}), "holds a NUL character"),
    (_set(["device", "physical_device"], "0,1"), "device.physical_device: must name one device"),
]


@pytest.mark.parametrize("change,expected", VIOLATIONS,
                         ids=[e.split(":")[0][:40] for _, e in VIOLATIONS])
def test_each_manifest_violation_is_one_line_naming_its_field(tmp_path, change, expected):
    doc = mutated(builtin_doc(tmp_path), change)
    problems = violations(doc)
    assert any(expected in p for p in problems), problems
    result = prepare(write(tmp_path / "m.json", doc), "--selection", "canary", "--out",
                     tmp_path / "out")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines and all(line.startswith("zlh: manifest ") for line in lines), result.output
    assert any(expected in line for line in lines)
    assert not (tmp_path / "out").exists()


def test_a_valid_manifest_has_no_violation_and_several_are_listed_together(tmp_path):
    assert violations(builtin_doc(tmp_path)) == []
    doc = mutated(builtin_doc(tmp_path), lambda d: (d.update(schema_version=3),
                                                    d["protocol"].update(timer="x")))
    result = prepare(write(tmp_path / "m.json", doc), "--selection", "canary")
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 2


def test_a_manifest_that_is_not_json_is_one_line(tmp_path):
    (tmp_path / "m.json").write_text("{not json")
    result = prepare(tmp_path / "m.json", "--selection", "canary")
    assert result.exit_code == 2 and result.output.startswith("zlh: manifest ")
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_manifest_number_must_be_finite(tmp_path, literal):
    doc = builtin_doc(tmp_path)
    doc["protocol"]["thresholds"] = {"good_pct": "HERE"}
    (tmp_path / "m.json").write_text(json.dumps(doc).replace('"HERE"', literal))
    result = prepare(tmp_path / "m.json", "--selection", "canary", "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zlh: manifest "), result.output
    assert "field protocol.thresholds.good_pct: expected a finite number" in lines[0]
    assert not (tmp_path / "out").exists()


def test_library_import_path_must_be_inside_its_checkout(tmp_path):
    doc = flaggems_doc(tmp_path)
    doc["sources"]["library"]["import_from"] = "/somewhere/else"
    assert any("sources.library.import_from: must be inside" in p for p in violations(doc))


CORPUS = [
    (lambda d: d["workloads"][0].update(op="nosuchop"), "workloads[0] (add): not in the corpus"),
    (lambda d: d["workloads"][0].update(op_file="elementwise"),
     "workloads[0] (add): not in the corpus: unknown op 'add:elementwise'"),
    (lambda d: d["workloads"][2].update(dtypes=["bfloat16"]), "workloads[2] (mm).dtypes:"),
    (lambda d: d["protocol"].update(dtypes=["int8"]), "protocol.dtypes (for add):"),
    # what each cell's zlh bench would refuse is refused before anything is frozen
    (lambda d: d["protocol"].update(shapes="/nonexistent/shapes.yaml"),
     "protocol.shapes: shape file not found: /nonexistent/shapes.yaml"),
    (lambda d: Path(d["protocol"]["shapes"]).write_text("add: [[4]]\nmm: [[8, 8]]\n"),
     "workloads[2] (mm): shape file: mm shape [8, 8] needs 3 sizes (M, N, K)"),
    (lambda d: Path(d["protocol"]["shapes"]).write_text("add: [[-4]]\n"),
     "protocol.shapes: "),
    (lambda d: d["protocol"]["cells"][2]["env"].update(ZLH_BUILTIN_SLOW="banana"),
     "protocol.cells[2].env: ZLH_BUILTIN_SLOW='banana' is not a switch value"),
    (lambda d: d["protocol"].update(timer="graph"),
     "protocol.timer: backend cpu does not support graph capture"),
    (lambda d: d["protocol"]["bench"].update(l2="flush"), "protocol.timer: --l2 flush needs"),
]


@pytest.mark.parametrize("change,expected", CORPUS, ids=["missing", "op_file", "dtype",
                                                          "protocol_dtype", "shapes_missing",
                                                          "shape_rank", "shape_negative",
                                                          "cell_switch", "timer", "l2"])
def test_every_workload_is_checked_against_the_corpus(tmp_path, change, expected):
    result = prepare(write(tmp_path / "m.json", mutated(builtin_doc(tmp_path), change)),
                     "--selection", "canary", "--dry-run")
    assert result.exit_code == 2
    assert expected in result.output, result.output


def test_skip_marked_and_missing_targets_need_an_override_reason(tmp_path):
    doc = flaggems_doc(tmp_path)
    doc["workloads"].append({"id": "skipped", "op": "always_skipped", "op_file": "skipped",
                             "family": "x", "cost": "light", "canary": False,
                             "correctness": None})
    result = prepare(write(tmp_path / "m.json", doc), "--selection", "all", "--dry-run")
    assert result.exit_code == 2 and "marks it skipped" in result.output
    doc["workloads"][-1]["inventory_override_reason"] = "runs here despite the mark"
    doc["workloads"].append({"id": "renamed", "op": "split_upstream", "op_file": "gone",
                             "family": "x", "cost": "light", "canary": False,
                             "correctness": None})
    result = prepare(write(tmp_path / "m.json", doc), "--selection", "all", "--dry-run")
    assert result.exit_code == 2 and "(renamed): not in the corpus" in result.output
    doc["workloads"][-1]["inventory_override_reason"] = "upstream split the file"
    result = prepare(write(tmp_path / "m.json", doc), "--selection", "all", "--dry-run")
    assert result.exit_code == 0, result.output


def test_accuracy_test_files_must_exist_in_the_library(tmp_path):
    doc = flaggems_doc(tmp_path)
    doc["workloads"][0]["correctness"]["file"] = "tests/test_missing.py"
    result = prepare(write(tmp_path / "m.json", doc), "--selection", "canary", "--dry-run")
    assert result.exit_code == 2 and "tests/test_missing.py not found under" in result.output


# ---- the frozen plan ------------------------------------------------------------------------
def test_freeze_writes_the_plan_whole_and_never_twice(tmp_path):
    manifest = write(tmp_path / "m.json", builtin_doc(tmp_path))
    result = prepare(manifest, "--selection", "canary", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    frozen = tmp_path / "out" / "cpu-slow-v1--canary"
    assert f"next: zlh product run {frozen}" in result.output
    assert sorted(p.name for p in frozen.iterdir()) == [
        "budget.json", "manifest.json", "manifest.sha256", "ops.txt", "shapes.yaml",
        "task-matrix.json"]
    assert (frozen / "manifest.json").read_bytes() == manifest.read_bytes()
    sha = sha256_file(manifest)
    assert (frozen / "manifest.sha256").read_text() == f"{sha}  manifest.json\n"
    for name in ("task-matrix.json", "budget.json"):
        doc = json.loads((frozen / name).read_text())
        assert doc["manifest_sha256"] == sha and doc["schema_version"] == 1
        assert (frozen / name).read_text() == canonical(doc)
    matrix = json.loads((frozen / "task-matrix.json").read_text())
    assert [t["task_id"] for t in matrix["tasks"]] == ["add"]
    assert matrix["tasks"][0]["timeout_s"] == 120 and matrix["shapes_sha256"] == \
        sha256_file(frozen / "shapes.yaml")
    assert (frozen / "ops.txt").read_text() == "add::float32\n"
    before = {p.name: p.read_bytes() for p in frozen.iterdir()}
    again = prepare(manifest, "--selection", "canary", "--out", tmp_path / "out")
    assert again.exit_code == 2 and "never rewritten" in again.output
    assert {p.name: p.read_bytes() for p in frozen.iterdir()} == before
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["cpu-slow-v1--canary"]


def test_a_failed_freeze_leaves_neither_target_nor_staging(tmp_path, monkeypatch):
    def boom(matrix):
        raise OSError("disk full")
    monkeypatch.setattr(freeze_mod, "ops_text", boom)
    manifest = write(tmp_path / "m.json", builtin_doc(tmp_path))
    doc = load_manifest(manifest)
    with pytest.raises(OSError):
        freeze_mod.freeze_plan(doc, "canary", tmp_path / "out", *freeze_mod.build_plan(
            doc, "canary", {"add": "add"}))
    assert list((tmp_path / "out").iterdir()) == []


def test_dry_run_prints_plan_and_budget_and_writes_nothing(tmp_path):
    result = prepare(write(tmp_path / "m.json", builtin_doc(tmp_path)), "--selection", "all",
                     "--dry-run", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "4 task(s)" in result.output and "budget: at most 20 processes, bound 2700 s" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("old", [("prepare", "m.json", "--selection", "canary"),
                                 ("run", "frozen"), ("-v", "reaccount", "root", "--out", "re"),
                                 ("prepare", "--help")])
def test_the_old_campaign_spelling_points_at_zlh_product(tmp_path, monkeypatch, old):
    """`zlh campaign prepare|run|reaccount` was the product campaign's spelling; now each is
    one usage line naming `zlh product` (no alias: `zlh campaign` is the rounds over GPUs)."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["campaign", *old])
    name = next(word for word in old if not word.startswith("-"))
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"zlh: `zlh campaign {name}` is now `zlh product {name}` (pre-registered product "
        f"campaigns; `zlh campaign` runs rounds over GPUs only)"]
    assert list(tmp_path.iterdir()) == []


def test_zlh_product_says_what_a_product_campaign_is():
    result = CliRunner().invoke(main, ["product", "--help"])
    flat = " ".join(result.output.split())
    assert result.exit_code == 0
    assert "Pre-registered product campaigns" in flat and "Not `zlh campaign`" in flat
    assert all(f" {name} " in flat for name in ("prepare", "run", "reaccount"))


# ---- canary receipt rules -------------------------------------------------------------------
def good_canary(tmp_path, manifest: Path) -> dict:
    return {"schema_version": 1, "kind": "campaign", "campaign_id": "cpu-slow-v1",
            "selection": "canary", "status": "TERMINAL",
            "manifest_sha256": sha256_file(manifest),
            "canary_gate": {"pass": True, "failures": []}}


CANARY_RULES = [
    (None, "--selection all needs --canary-receipt"),
    (lambda r: r.update(campaign_id="other"), "campaign_id is 'other'"),
    (lambda r: r.update(selection="all"), "selection is 'all'"),
    (lambda r: r.update(status="RUNNING"), "status is 'RUNNING'"),
    (lambda r: r.update(manifest_sha256="0" * 64), "manifest_sha256 is"),
    (lambda r: r.update(kind="task"), "kind is 'task'"),
    (lambda r: r.update(canary_gate={"pass": False, "failures": ["add is X"]}),
     "the canary gate did not pass (add is X)"),
    (lambda r: r.pop("canary_gate"), "the canary gate did not pass"),
    ("garbage", "cannot be read"),
]


@pytest.mark.parametrize("change,expected", CANARY_RULES,
                         ids=["missing", "campaign", "selection", "status", "manifest", "kind",
                              "gate", "no_gate", "garbage"])
def test_the_full_campaign_needs_a_passing_canary_receipt_of_this_manifest(tmp_path, change,
                                                                           expected):
    manifest = write(tmp_path / "m.json", builtin_doc(tmp_path))
    args = [manifest, "--selection", "all", "--out", tmp_path / "out"]
    if change is not None:
        path = tmp_path / "canary.json"
        if change == "garbage":
            path.write_text("[[")
        else:
            receipt = good_canary(tmp_path, manifest)
            change(receipt)
            path.write_text(json.dumps(receipt))
        args += ["--canary-receipt", path]
    result = prepare(*args)
    assert result.exit_code == 2 and expected in result.output, result.output
    assert not (tmp_path / "out" / "cpu-slow-v1--all").exists()


def test_a_good_canary_receipt_is_hashed_into_the_full_plan(tmp_path):
    manifest = write(tmp_path / "m.json", builtin_doc(tmp_path))
    path = tmp_path / "canary.json"
    path.write_text(json.dumps(good_canary(tmp_path, manifest)))
    result = prepare(manifest, "--selection", "all", "--out", tmp_path / "out",
                     "--canary-receipt", path)
    assert result.exit_code == 0, result.output
    matrix = json.loads((tmp_path / "out/cpu-slow-v1--all/task-matrix.json").read_text())
    assert matrix["canary_receipt_sha256"] == sha256_file(path)
    assert [t["task_id"] for t in matrix["tasks"]] == ["add", "softmax", "mm", "raise"]
    canary_only = prepare(manifest, "--selection", "canary", "--canary-receipt", path)
    assert canary_only.exit_code == 2 and "for --selection all only" in canary_only.output


def test_a_canary_receipt_of_an_edited_manifest_does_not_authorise(tmp_path):
    manifest = write(tmp_path / "m.json", builtin_doc(tmp_path))
    path = tmp_path / "canary.json"
    path.write_text(json.dumps(good_canary(tmp_path, manifest)))
    write(manifest, mutated(builtin_doc(tmp_path), lambda d: d.update(claim="another claim")))
    result = prepare(manifest, "--selection", "all", "--canary-receipt", path)
    assert result.exit_code == 2 and "manifest_sha256 is" in result.output
