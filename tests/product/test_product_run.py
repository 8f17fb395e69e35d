"""zlh product run / reaccount with synthetic cells (a stand-in for each cell's `zlh bench`
process writes its run directory): the task flow and its classes, receipts and their hashes,
the canary gate's exit status, resume, re-accounting with another launch floor, the library's
accuracy tests through pytest, and the contract checks (with the real probe)."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import backends
from backends.base import TelemetrySample
from harness.cli import main
from harness.product import cells as cells_mod
from harness.product import runner as runner_mod
from harness.product.receipts import sha256_file

from product_fakes import (FakeCells, Spec, builtin_doc, fake_doc, flaggems_doc, no_contract,
                           write)


def cli(*args):
    return CliRunner().invoke(main, ["product", *map(str, args)])


@pytest.fixture
def fake(monkeypatch):
    """Synthetic cells and no contract (the contract has tests of its own below)."""
    def install(specs):
        cells = FakeCells(specs)
        monkeypatch.setattr(cells_mod, "run_fresh", cells)
        monkeypatch.setattr(runner_mod, "check_contract", no_contract)
        return cells
    return install


HOT = [("hot", 2, 100)]
FASTER = {"64": 0.9, "128": 1.8}                 # +11 % for the candidate
SLOWER = {"64": 1.1, "128": 2.2}                 # -9 %
SPECS = {
    ("mm", "cand"): Spec(latency=FASTER, kernels=[("hot", 1, 100)], code="v2"),
    ("softmax", "cand"): Spec(),                                    # same code: B
    ("add", "cand"): Spec(kernels=[("hot", 1, 100)], code="v2", output=1.5),   # wrong: K
    ("fault_raise", "off"): Spec(status="crash"),                   # X: nothing to replay
    ("fault_abort", "ctl"): Spec(kernels=[("hot", 3, 100)], code="v3"),        # X: control
    ("fault_hang", "cand"): Spec(latency=SLOWER, kernels=[("hot", 1, 100)], code="v2"),
    ("fault_illegal_address", "cand"): Spec(kernels=[("hot", 1, 100)], code="v2",
                                            fallbacks=1),
}
EXPECTED = {"mm": ("G", "stable_gain"), "softmax": ("B", "no_code_change"),
            "add": ("K", "candidate_correctness_fail"), "raise": ("X", "cell_failed"),
            "abort": ("X", "control_code_differs"), "hang": ("R", "stable_regression"),
            "illegal": ("X", "replay_fallback")}


def seven_tasks(tmp_path) -> dict:
    doc = fake_doc(tmp_path)
    p = doc["protocol"]
    p["canary_order"], p["canary_gate"] = ["mm"], {"classes": {"mm": ["G"]}}
    ops = {"mm": "mm", "softmax": "softmax", "add": "add", "raise": "fault_raise",
           "abort": "fault_abort", "hang": "fault_hang", "illegal": "fault_illegal_address"}
    doc["workloads"] = [{"id": tid, "op": op, "family": "f", "cost": "light",
                         "canary": tid == "mm", "correctness": None}
                        for tid, op in ops.items()]
    return doc


def canary_then_all(tmp_path, doc, run_all: bool = True) -> tuple[Path, Path]:
    """The canary run and the whole plan prepared, then run (unless `run_all` is False)."""
    manifest = write(tmp_path / "m.json", doc)
    out = tmp_path / "frozen"
    assert cli("prepare", manifest, "--selection", "canary", "--out", out).exit_code == 0
    canary = out / f"{doc['campaign_id']}--canary"
    result = cli("run", canary)
    assert result.exit_code == 0, result.output
    receipt = canary / "run" / "campaign-receipt.json"
    result = cli("prepare", manifest, "--selection", "all", "--out", out, "--canary-receipt",
                 receipt)
    assert result.exit_code == 0, result.output
    full = out / f"{doc['campaign_id']}--all"
    if run_all:
        result = cli("run", full)
        assert result.exit_code == 0, result.output
    return canary / "run", full / "run"


def test_every_class_path_through_real_tasks_and_receipts(tmp_path, fake):
    cells = fake(SPECS)
    _, root = canary_then_all(tmp_path, seven_tasks(tmp_path))
    campaign = json.loads((root / "campaign-receipt.json").read_text())
    assert campaign["status"] == "TERMINAL" and campaign["canary_gate"] is None
    for tid, (cls, rule) in EXPECTED.items():
        task = json.loads((root / "tasks" / tid / "task-receipt.json").read_text())
        assert (task["class"], task["rule"]) == (cls, rule), (tid, task["reason"])
    assert campaign["counts"] == {"G": 1, "C": 0, "B": 1, "R": 1, "K": 1, "X": 3}
    rows = (root / "status.csv").read_text().splitlines()
    assert rows[0] == "task_id,op,family,class,reason" and len(rows) == 8
    assert rows[1] == 'mm,mm,f,G,"convert_layout 2->1; round a +11.11%, round b +11.11%"'
    # round a in manifest order, round b reversed, both replaying round a's baseline record
    mm = [c for c in cells.calls if c[0] == "mm"]
    assert mm[-5:] == [("mm", "off", "a"), ("mm", "ctl", "a"), ("mm", "cand", "a"),
                       ("mm", "cand", "b"), ("mm", "off", "b")]
    record = json.loads((root / "tasks/mm/a/off/cell-receipt.json").read_text())["run_dir"]
    for cell in ("a/mask0", "a/candidate", "b/candidate", "b/off"):
        receipt = json.loads((root / f"tasks/mm/{cell}/cell-receipt.json").read_text())
        assert receipt["replay_from"] == record and receipt["status"] == "PASS"
    seeds = {cell: re.search(r"--placement-seed (\d+)", (root / f"tasks/mm/{cell}/cell.log")
                             .read_text()).group(1)
             for cell in ("a/off", "a/mask0", "a/candidate", "b/candidate", "b/off")}
    assert len({seeds["a/off"], seeds["a/mask0"], seeds["a/candidate"]}) == 1   # one a round
    assert seeds["b/candidate"] == seeds["b/off"] != seeds["a/off"]
    assert not (root / "tasks/softmax/b").exists()              # no code change: no round b
    raise_ = json.loads((root / "tasks/raise/a/candidate/cell-receipt.json").read_text())
    assert raise_["status"] == "NOT_RUN" and "left nothing to replay" in raise_["reason"]
    k = json.loads((root / "tasks/add/correctness/candidate/correctness-receipt.json")
                   .read_text())
    assert k["status"] == "FAIL" and k["output_gate"]["mismatches"]
    assert (root / "tasks/add/correctness/off/correctness-receipt.json").is_file()


def test_receipts_hash_what_produced_them(tmp_path, fake):
    fake(SPECS)
    _, root = canary_then_all(tmp_path, seven_tasks(tmp_path))
    campaign = json.loads((root / "campaign-receipt.json").read_text())
    for tid, sha in campaign["produced_by"]["tasks"].items():
        path = root / "tasks" / tid / "task-receipt.json"
        assert sha256_file(path) == sha
        task = json.loads(path.read_text())
        for rel, sha in task["produced_by"].items():
            assert sha256_file(root / rel) == sha, rel
    frozen = Path(campaign["frozen_dir"])
    assert campaign["produced_by"]["frozen"]["manifest.json"] == campaign["manifest_sha256"] \
        == sha256_file(frozen / "manifest.json")
    assert campaign["produced_by"]["contract"] == {
        "contract-receipt.json": sha256_file(root / "contract-receipt.json")}
    assert "harness/product/runner.py" in campaign["produced_by"]["zlh"]["files"]
    cell = json.loads((root / "tasks/mm/a/off/cell-receipt.json").read_text())
    run_json = f"{cell['run_dir']}/run.json"
    assert cell["produced_by"][run_json] == sha256_file(root / run_json)
    assert cell["schema_version"] == 1 and cell["effective_env"]["FAKE_MODE"] == "off"


def test_a_failed_canary_gate_exits_1(tmp_path, fake):
    fake(SPECS)
    doc = seven_tasks(tmp_path)
    doc["protocol"]["canary_gate"] = {"classes": {"mm": ["B"]}}
    manifest = write(tmp_path / "m.json", doc)
    assert cli("prepare", manifest, "--selection", "canary", "--out", tmp_path).exit_code == 0
    result = cli("run", tmp_path / "fake-cells-v1--canary")
    assert result.exit_code == 1
    assert "canary gate: FAIL: mm is G, the gate wants B" in result.output
    assert "CAMPAIGN_TASK task=mm class=G reason=convert_layout 2->1" in result.output


def test_resume_keeps_terminal_tasks_and_refuses_an_existing_run(tmp_path, fake):
    cells = fake(SPECS)
    _, root = canary_then_all(tmp_path, seven_tasks(tmp_path))
    again = cli("run", root.parent)
    assert again.exit_code == 2 and "--resume" in again.output
    fresh = cli("run", root.parent, "--resume", "--out", tmp_path / "nothing-here")
    assert fresh.exit_code == 2 and "holds no campaign run" in fresh.output
    (tmp_path / "made-for-it").mkdir()                             # an empty folder: a new run
    cells.calls.clear()
    assert cli("run", root.parent, "--out", tmp_path / "made-for-it").exit_code == 0
    assert (tmp_path / "made-for-it" / "campaign-receipt.json").is_file()
    sealed = cli("run", root.parent, "--resume")                  # a run that ended
    assert sealed.exit_code == 2 and "is a sealed run" in sealed.output
    kept = (root / "tasks/mm/task-receipt.json").read_bytes()
    (root / "tasks/softmax/task-receipt.json").unlink()           # killed mid-task: no
    (root / "campaign-receipt.json").unlink()                     # campaign receipt either
    cells.calls.clear()
    result = cli("run", root.parent, "--resume")
    assert result.exit_code == 0, result.output
    assert {c[0] for c in cells.calls} == {"softmax"}
    assert result.output.count("(kept from before the resume)") == 6
    assert (root / "tasks/mm/task-receipt.json").read_bytes() == kept
    aside = list((root / ".abandoned").iterdir())
    assert len(aside) == 1 and aside[0].name.startswith("softmax-")
    assert (aside[0] / "a/off/cell-receipt.json").is_file()
    assert len(list(root.glob("contract-receipt.resume-*.json"))) == 1
    campaign = json.loads((root / "campaign-receipt.json").read_text())
    assert campaign["classes"]["softmax"] == "B" and len(campaign["produced_by"]["contract"]) == 2


def test_a_cell_whose_run_could_not_write_stops_the_campaign_for_a_resume(tmp_path, fake):
    """A cell's run that met a full disk is no evidence: no receipt judges its rows (it read
    PASS over the cases measured before the disk filled); the run stops, a resume runs the
    task again."""
    cells = fake({**SPECS, ("softmax", "cand"): Spec(status="disk_full")})
    _, root = canary_then_all(tmp_path, seven_tasks(tmp_path), run_all=False)
    result = cli("run", root.parent)
    assert result.exit_code == 1 and "softmax a/candidate: disk full" in result.output
    assert "--resume" in result.output.splitlines()[-1]
    log = (root / "tasks/softmax/a/candidate/cell.log")
    assert log.is_file() and not (log.parent / "cell-receipt.json").exists()
    assert not (root / "tasks/softmax/task-receipt.json").exists()
    cells.specs[("softmax", "cand")] = Spec()            # room again
    result = cli("run", root.parent, "--resume")
    assert result.exit_code == 0, result.output
    task = json.loads((root / "tasks/softmax/task-receipt.json").read_text())
    assert task["class"] == "B"


def test_reaccount_floor_zero_reproduces_and_a_higher_floor_demotes(tmp_path, fake):
    fake({("mm", "off"): Spec(kernels=[("hot", 2, 100), ("once", 4, 1)]),
          ("mm", "ctl"): Spec(kernels=[("hot", 2, 100), ("once", 4, 1)]),
          ("mm", "cand"): Spec(latency=FASTER, kernels=[("hot", 2, 100), ("once", 0, 1)],
                               code="v2"),
          ("softmax", "off"): Spec(kernels=[("hot", 2, 100), ("once", 0, 1)]),
          ("softmax", "ctl"): Spec(kernels=[("hot", 2, 100), ("once", 0, 1)]),
          ("softmax", "cand"): Spec(kernels=[("hot", 1, 100), ("once", 5, 1)], code="v2")})
    doc = fake_doc(tmp_path)
    doc["protocol"]["canary_order"] = ["mm"]
    doc["protocol"]["canary_gate"] = {"classes": {"mm": ["G"]}}
    doc["workloads"] = [{"id": op, "op": op, "family": "f", "cost": "light",
                         "canary": op == "mm", "correctness": None}
                        for op in ("mm", "softmax")]
    _, root = canary_then_all(tmp_path, doc)
    sealed = json.loads((root / "campaign-receipt.json").read_text())
    assert sealed["classes"] == {"mm": "G", "softmax": "B"}
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    same = cli("reaccount", root, "--out", tmp_path / "re0", "--measured-launch-floor", 0)
    assert same.exit_code == 0, same.output
    re0 = json.loads((tmp_path / "re0/reaccount-receipt.json").read_text())
    assert re0["changed"] == [] and {t["task_id"]: t["new_class"] for t in re0["tasks"]} == \
        sealed["classes"]
    higher = cli("reaccount", root, "--out", tmp_path / "re1", "--measured-launch-floor", 1)
    assert higher.exit_code == 0, higher.output
    re1 = json.loads((tmp_path / "re1/reaccount-receipt.json").read_text())
    new = {t["task_id"]: (t["new_class"], t["new_rule"]) for t in re1["tasks"]}
    assert new == {"mm": ("B", "no_code_change"), "softmax": ("X", "round_b_missing")}
    assert "mm G -> B" in higher.output
    csv = (tmp_path / "re1/reaccount-matrix.csv").read_text().splitlines()
    assert csv[0].startswith("task_id,op,family,sealed_class,new_class,changed")
    assert csv[1].startswith("mm,mm,f,G,B,yes,6,2,2,2,")
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    inside = cli("reaccount", root, "--out", root / "re")
    assert inside.exit_code == 2 and "inside the sealed run" in inside.output
    receipt = root / "tasks/mm/a/candidate/cell-receipt.json"
    receipt.write_text(receipt.read_text().replace('"PASS"', '"FAIL"', 1))
    tampered = cli("reaccount", root, "--out", tmp_path / "re2")
    assert tampered.exit_code == 2 and "changed since the run was sealed" in tampered.output


@pytest.mark.parametrize("broken,expected", [
    ({"mm": "cand"}, ("K", "candidate_correctness_fail")),
    ({"mm": "off,cand"}, ("X", "correctness_fails_everywhere")),
])
@pytest.mark.e2e
def test_library_accuracy_tests_run_under_each_cell(tmp_path, fake, broken, expected):
    fake({("mm", "cand"): Spec(latency=FASTER, kernels=[("hot", 1, 100)], code="v2")})
    doc = flaggems_doc(tmp_path)
    for cell in doc["protocol"]["cells"]:
        if cell["env"]["FAKE_MODE"] in broken["mm"].split(","):
            cell["env"]["FAKE_ACCURACY"] = "mm"
    doc["protocol"]["canary_gate"] = {"classes": {"mm": ["G", "C", "K", "X"]}, "max_k": 1}
    manifest = write(tmp_path / "m.json", doc)
    assert cli("prepare", manifest, "--selection", "canary", "--out", tmp_path).exit_code == 0
    result = cli("run", tmp_path / "fake-lib-v1--canary")
    assert result.exit_code == 0, result.output
    root = tmp_path / "fake-lib-v1--canary/run"
    task = json.loads((root / "tasks/mm/task-receipt.json").read_text())
    assert (task["class"], task["rule"]) == expected, task["reason"]
    check = json.loads((root / "tasks/mm/correctness/candidate/correctness-receipt.json")
                       .read_text())
    tests = check["accuracy_tests"]
    assert tests["status"] == "FAIL" and tests["counts"]["failed"] == 1
    assert tests["command"][-2:] == ["-k", "mm"] and "tests/test_accuracy.py" in tests["command"]
    assert check["output_gate"]["status"] == "PASS"
    assert "results differ from the reference" in (root / tests["log"]).read_text()


@pytest.mark.e2e
def test_accuracy_tests_pass_with_node_ids(tmp_path, fake):
    fake({})
    doc = flaggems_doc(tmp_path)
    doc["protocol"]["canary_order"] = ["softmax"]
    doc["workloads"][0]["canary"], doc["workloads"][1]["canary"] = False, True
    doc["protocol"]["canary_gate"] = {"classes": {"softmax": ["B"]}}
    manifest = write(tmp_path / "m.json", doc)
    assert cli("prepare", manifest, "--selection", "canary", "--out", tmp_path).exit_code == 0
    assert cli("run", tmp_path / "fake-lib-v1--canary").exit_code == 0
    check = json.loads((tmp_path / "fake-lib-v1--canary/run/tasks/softmax/correctness/"
                        "candidate/correctness-receipt.json").read_text())
    assert check["status"] == "PASS" and check["accuracy_tests"]["counts"] == {"passed": 1}
    assert check["accuracy_tests"]["command"][-1] == \
        "tests/test_accuracy.py::test_accuracy[softmax]"


# ---- the contract ---------------------------------------------------------------------------
def frozen_of(tmp_path, doc, out: str = "f") -> Path:
    manifest = write(tmp_path / f"{out}.json", doc)
    result = cli("prepare", manifest, "--selection", "canary", "--out", tmp_path / out)
    assert result.exit_code == 0, result.output
    return tmp_path / out / f"{doc['campaign_id']}--canary"


def refused(frozen: Path, check: str):
    result = cli("run", frozen)
    assert result.exit_code == 3, result.output
    assert f"PREFLIGHT_FAILED check={check}" in result.output
    assert not (frozen / "run").exists()           # nothing ran, nothing was written
    return result.output


def _edit(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.e2e
def test_contract_passes_and_records_what_it_saw(tmp_path, monkeypatch):
    from harness.product.contract import check_contract
    from harness.product.freeze import load_frozen
    frozen = frozen_of(tmp_path, flaggems_doc(tmp_path))
    body = check_contract(load_frozen(frozen))
    assert [c["check"] for c in body["checks"]] == ["frozen_hash", "source_commit", "targets",
                                                    "import_path", "visible_devices",
                                                    "device_idle"]
    assert body["checks"][-1]["status"] == "skipped"
    imports = body["observed"]["imports"]
    assert imports["library"]["file"].startswith(str(tmp_path / "FlagGems" / "src"))
    assert body["observed"]["sources"]["library"]["commit"] == "2" * 40
    assert body["observed"]["device"]["count"] == 1


@pytest.mark.parametrize("damage,check", [
    (lambda f, t: _edit(f / "task-matrix.json", '"manifest_sha256": "', '"manifest_sha256": "0'),
     "frozen_hash"),
    (lambda f, t: (f / "manifest.sha256").write_text("0" * 64 + "  manifest.json\n"),
     "frozen_hash"),
    (lambda f, t: (f / "shapes.yaml").write_text("add: [[1]]\n"), "frozen_hash"),
    (lambda f, t: (f / "manifest.json").write_text("{not json"), "frozen_hash"),
    (lambda f, t: _edit_json(f / "manifest.json", lambda m: m.update(claim="another")),
     "frozen_hash"),
    (lambda f, t: (t / "compiler-src/COMMIT").write_text("3" * 40), "source_commit"),
    (lambda f, t: shutil.rmtree(t / "compiler-src"), "source_commit"),
])
def test_contract_refuses_before_anything_runs(tmp_path, damage, check):
    frozen = frozen_of(tmp_path, builtin_doc(tmp_path))
    damage(frozen, tmp_path)
    refused(frozen, check)


def _edit_json(path: Path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("name,change,expected", [
    ("task-matrix.json", lambda m: m["tasks"][0].update(timeout_s=1),
     "task-matrix.json: tasks[0].timeout_s is 1, the manifest gives 120"),
    ("task-matrix.json", lambda m: m["tasks"][0].update(timeout_s="x"), "tasks[0].timeout_s"),
    ("task-matrix.json", lambda m: m["tasks"][0].update(task_id="zzz"),
     "tasks[0].task_id is 'zzz', the manifest gives 'add'"),
    ("task-matrix.json", lambda m: m.update(tasks=[]), "tasks has 0 entries, the manifest gives 1"),
    ("task-matrix.json", lambda m: m.update(tasks=[{}]), "tasks[0].canary is '<missing>'"),
    ("task-matrix.json", lambda m: m.update(tasks=["add"]), "tasks[0] is 'add'"),
    ("task-matrix.json", lambda m: m.update(selection=["x"]), "selection ['x'] is not one of"),
    ("task-matrix.json", lambda m: m["cells"].pop(), "cells has 2 entries, the manifest gives 3"),
    ("budget.json", lambda b: b.update(bound_s=1), "budget.json: bound_s is 1"),
], ids=["timeout", "timeout_str", "task_id", "no_tasks", "empty_task", "task_str", "selection",
        "cells", "budget"])
def test_an_edited_plan_is_refused_before_anything_runs(tmp_path, name, change, expected):
    frozen = frozen_of(tmp_path, builtin_doc(tmp_path))
    _edit_json(frozen / name, change)
    output = refused(frozen, "frozen_hash")
    assert expected in output and len(output.strip().splitlines()) == 1, output


def test_an_edited_op_name_is_refused(tmp_path):
    frozen = frozen_of(tmp_path, builtin_doc(tmp_path))
    _edit_json(frozen / "task-matrix.json", lambda m: m["tasks"][0].update(op_name="softmax"))
    assert "task add: add resolves to add, the task matrix names softmax" in \
        refused(frozen, "targets")


def _sealed_canary(tmp_path, fake) -> Path:
    fake({})
    doc = fake_doc(tmp_path)
    doc["protocol"]["canary_order"] = ["add"]
    doc["protocol"]["canary_gate"] = {"classes": {"add": ["B"]}}
    frozen = frozen_of(tmp_path, doc)
    result = cli("run", frozen)
    assert result.exit_code == 0, result.output
    return frozen / "run"


@pytest.mark.parametrize("change,expected", [
    (lambda r: r.update(produced_by=[]), "produced_by.tasks must be an object"),
    (lambda r: r["produced_by"].update(tasks=["add"]), "produced_by.tasks must be an object"),
    (lambda r: r["claim_scope"].update(tasks=[1]), "claim_scope.tasks must be a list"),
    (lambda r: r.update(measured_launch_floor="x"), "measured_launch_floor must be a whole"),
    (lambda r: r.update(ir="x"), "ir must be an object with stage and scrub"),
    (lambda r: r["produced_by"]["tasks"].pop("add"), "no sha256 sealed for it"),
], ids=["produced_by", "task_shas", "scope_tasks", "floor", "ir", "unsealed_task"])
def test_reaccount_refuses_a_campaign_receipt_of_another_shape(tmp_path, fake, change,
                                                                expected):
    root = _sealed_canary(tmp_path, fake)
    _edit_json(root / "campaign-receipt.json", change)
    result = cli("reaccount", root, "--out", tmp_path / "re")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("zlh: ") and expected in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "re").exists()


@pytest.mark.parametrize("change,expected", [
    (lambda t: t.update(rules="x"), "rules must be an object"),
    (lambda t: t["rules"].update(cells=[]), "rules.cells must be a non-empty list"),
    (lambda t: t["rules"].update(good_pct="5"), "rules.good_pct must be a finite number"),
    (lambda t: t.update(receipts=["a/off"]), "receipts must be an object of strings"),
    (lambda t: t.update(rounds=[]), "rounds must be an object"),
    (lambda t: t.pop("task_id"), "task_id must be present"),
], ids=["rules", "no_cells", "good_pct", "receipts", "rounds", "task_id"])
def test_reaccount_refuses_a_resealed_task_receipt_of_another_shape(tmp_path, fake, change,
                                                                    expected):
    """A task receipt edited and sealed again (its sha256 updated in the campaign receipt)
    is still refused by the field it lacks, not met as a KeyError or TypeError."""
    root = _sealed_canary(tmp_path, fake)
    task = root / "tasks" / "add" / "task-receipt.json"
    _edit_json(task, change)
    digest = hashlib.sha256(task.read_bytes()).hexdigest()
    _edit_json(root / "campaign-receipt.json",
               lambda r: r["produced_by"]["tasks"].update(add=digest))
    result = cli("reaccount", root, "--out", tmp_path / "re")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("zlh: ") and expected in result.output, result.output
    assert "task-receipt.json" in result.output
    assert not (tmp_path / "re").exists()


def test_product_commands_refuse_an_output_directory_they_cannot_use(tmp_path, fake):
    root = _sealed_canary(tmp_path, fake)
    (tmp_path / "afile").write_text("x")
    for args in (("reaccount", root, "--out", tmp_path / "afile"),
                 ("reaccount", root, "--out", tmp_path / "afile/sub"),
                 ("run", root.parent, "--out", tmp_path / "afile"),
                 ("prepare", tmp_path / "f.json", "--selection", "canary", "--out",
                  tmp_path / "afile")):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("zlh: --out ") and "afile" in result.output
    for args in (("reaccount", root, "--out", ""), ("run", root.parent, "--out", "")):
        result = cli(*args)
        assert result.exit_code == 2 and "'--out': an empty value" in result.output


def test_contract_checks_targets_in_the_frozen_library(tmp_path):
    frozen = frozen_of(tmp_path, flaggems_doc(tmp_path))
    (tmp_path / "FlagGems/tests/test_accuracy.py").unlink()
    assert "tests/test_accuracy.py not found" in refused(frozen, "targets")
    (tmp_path / "FlagGems/benchmark/test_mm.py").unlink()
    refused(frozen, "targets")


@pytest.mark.e2e
def test_contract_checks_where_packages_are_imported_from(tmp_path):
    doc = builtin_doc(tmp_path)
    doc["sources"]["compiler"]["import_from"] = str(tmp_path / "another-build")
    output = refused(frozen_of(tmp_path, doc), "import_path")
    assert "imports triton from" in output and "another-build" in output
    doc = builtin_doc(tmp_path)
    doc["sources"]["compiler"]["binary"] = "_C/no-such-lib.so"
    assert "no-such-lib.so (sources.compiler.binary) is missing" in refused(
        frozen_of(tmp_path, doc, "g"), "import_path")


@pytest.mark.e2e
def test_contract_checks_the_visible_device(tmp_path):
    doc = builtin_doc(tmp_path)
    doc["device"]["name_contains"] = "H200"
    assert "wants a name containing 'H200'" in refused(frozen_of(tmp_path, doc),
                                                       "visible_devices")


@pytest.mark.parametrize("util,ok", [(97.0, False), (2.0, True)])
@pytest.mark.e2e
def test_contract_checks_the_device_is_idle(tmp_path, monkeypatch, util, ok):
    from harness.product.contract import check_contract
    from harness.product.freeze import load_frozen
    cpu = backends.get_backend("cpu")
    monkeypatch.setattr(cpu, "telemetry_command", ("fake-smi",))
    readings = []
    monkeypatch.setattr(cpu, "read_telemetry", lambda timeout_s=10.0: readings.append(1) or [
        TelemetrySample(0, 1980.0, 2619.0, 40.0, 120.0, util)])
    monkeypatch.setattr("harness.product.contract.IDLE_INTERVAL_S", 0.0)
    frozen = load_frozen(frozen_of(tmp_path, builtin_doc(tmp_path)))
    if ok:
        body = check_contract(frozen)
        assert body["checks"][-1] == {"check": "device_idle", "status": "ok",
                                      "detail": "utilisation 2%"}
        assert body["observed"]["telemetry"]["util_pct"] == 2.0
    else:
        with pytest.raises(Exception) as info:
            check_contract(frozen)
        assert "check=device_idle" in str(info.value) and "busy: utilisation 97%" in \
            str(info.value)
        assert len(readings) == 3                  # busy in every reading
