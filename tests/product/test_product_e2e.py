"""A product campaign end to end on the CPU with real `zlh bench` processes: the builtin
adapter, three workloads (two measured, one fault), cells driven by ZLH_BUILTIN_SLOW (off=0,
control unset, candidate=1), canary then all, every receipt written, re-accounted at floor 0,
resumed.

The interpreter shows no IR, so the manifest says the code change is not observed: every clean
task gets both rounds and its class comes from timing (G, C or R, whichever this machine
measures); the fault-injection op is excluded because its baseline cell fails. One measured
task and the fault task: the receipts' rules are the same for every task, and a measured task
costs six processes."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.cli import main

from product_fakes import builtin_doc, write

pytestmark = pytest.mark.e2e        # every test here starts zlh processes

TASKS = ("add", "raise")            # the manifest's softmax and mm left out
CELLS = ("off", "control", "candidate")


def cli(*args):
    return CliRunner().invoke(main, ["product", *map(str, args)])


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("campaign")
    doc = builtin_doc(tmp)
    doc["workloads"] = [w for w in doc["workloads"] if w["id"] in TASKS]
    manifest = write(tmp / "m.json", doc)
    out = tmp / "frozen"
    runs = {}
    for selection in ("canary", "all"):
        extra = ["--canary-receipt", runs["canary"][1] / "campaign-receipt.json"] \
            if selection == "all" else []
        prepared = cli("prepare", manifest, "--selection", selection, "--out", out, *extra)
        assert prepared.exit_code == 0, prepared.output
        frozen = out / f"cpu-slow-v1--{selection}"
        result = cli("run", frozen)
        runs[selection] = (result, frozen / "run")
    return tmp, runs


def test_canary_then_all_with_every_receipt(campaign):
    _, runs = campaign
    canary, root = runs["canary"][0], runs["all"][1]
    assert canary.exit_code == 0, canary.output
    assert "canary gate: PASS" in canary.output
    result = runs["all"][0]
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("CAMPAIGN_TASK ")]
    assert [ln.split()[1] for ln in lines] == [f"task={t}" for t in TASKS]
    receipt = json.loads((root / "campaign-receipt.json").read_text())
    classes = receipt["classes"]
    assert receipt["status"] == "TERMINAL" and sum(receipt["counts"].values()) == len(TASKS)
    assert classes["raise"] == "X"
    assert classes["add"] in ("G", "C", "R"), classes
    contract = json.loads((root / "contract-receipt.json").read_text())
    assert [c["status"] for c in contract["checks"]] == ["ok"] * 5 + ["skipped"]
    status = (root / "status.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in status[1:]] == list(TASKS)
    for task in TASKS:
        t = json.loads((root / "tasks" / task / "task-receipt.json").read_text())
        assert t["class"] == classes[task] and t["schema_version"] == 1
        for cell in CELLS:
            cell_receipt = json.loads((root / f"tasks/{task}/a/{cell}/cell-receipt.json")
                                      .read_text())
            assert cell_receipt["schema_version"] == 1
        assert (root / f"tasks/{task}/correctness/candidate/correctness-receipt.json").is_file()
        rounds_b = [(root / f"tasks/{task}/b/{c}/cell-receipt.json").is_file()
                    for c in ("off", "candidate")]
        assert all(rounds_b) == (task != "raise") and any(rounds_b) == (task != "raise")


def test_cells_saw_their_env_and_replayed_the_baseline(campaign):
    root = campaign[1]["all"][1]
    seen = {}
    for cell in CELLS:
        receipt = json.loads((root / f"tasks/add/a/{cell}/cell-receipt.json").read_text())
        seen[cell] = receipt["effective_env"]["ZLH_BUILTIN_SLOW"]
        run = json.loads((root / receipt["run_dir"] / "run.json").read_text())
        assert run["autotune_mode"] == ("record" if cell == "off" else "replay")
        assert run["env"].get("ZLH_BUILTIN_SLOW") == seen[cell]
        assert receipt["rows_success"] == 1 and receipt["timer"] == "host"
    assert seen == {"off": "0", "control": None, "candidate": "1"}
    raise_ = json.loads((root / "tasks/raise/task-receipt.json").read_text())
    assert raise_["rule"] == "cell_failed" and "round a cell off is FAIL" in raise_["reason"]


def test_reaccount_at_floor_zero_reproduces_the_sealed_classes(campaign):
    tmp, runs = campaign
    root = runs["all"][1]
    result = cli("reaccount", root, "--out", tmp / "reaccount", "--measured-launch-floor", 0)
    assert result.exit_code == 0, result.output
    re = json.loads((tmp / "reaccount/reaccount-receipt.json").read_text())
    sealed = json.loads((root / "campaign-receipt.json").read_text())
    assert re["changed"] == [] and re["new_counts"] == sealed["counts"]
    assert [t["task_id"] for t in re["tasks"]] == list(TASKS)


def test_reaccount_refuses_a_cell_run_changed_since_the_seal(campaign, tmp_path):
    """The IR scope is re-derived from each cell's run directory: a file its cell receipt
    sealed that is gone or edited is refused, not read as a run without IR."""
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(campaign[1]["all"][1], copy)
    (index,) = list((copy / "tasks/add/a/off").glob("*/ttgir/index.tsv"))[:1]
    index.write_text(index.read_text() + "edited\n")
    result = cli("reaccount", copy, "--out", tmp_path / "re")
    assert result.exit_code == 2 and "changed since the run was sealed" in result.output
    index.unlink()
    result = cli("reaccount", copy, "--out", tmp_path / "re")
    assert result.exit_code == 2 and "now missing" in result.output


def test_resume_runs_only_the_unfinished_task(campaign):
    root = campaign[1]["all"][1]
    (root / "tasks/raise/task-receipt.json").unlink()
    (root / "campaign-receipt.json").unlink()       # killed before it was sealed
    result = cli("run", root.parent, "--resume")
    assert result.exit_code == 0, result.output
    assert result.output.count("(kept from before the resume)") == len(TASKS) - 1
    assert "CAMPAIGN_TASK task=raise class=X" in result.output
    assert [p.name.split("-")[0] for p in (root / ".abandoned").iterdir()] == ["raise"]


def test_resume_runs_again_a_task_whose_receipt_was_edited(campaign):
    """A kept receipt must be one zlh wrote for that task, its class what its evidence
    gives: an edited class, or a receipt stripped to its class, makes the task run again, and
    only that task. Both edits are made to the fault task's receipt: running it again is one
    failing process, not the several of a measured task."""
    from harness.product.manifest import CLASSES
    root = campaign[1]["all"][1]
    path = root / "tasks/raise/task-receipt.json"
    receipt = json.loads(path.read_text())
    original = receipt["class"]
    forged = next(c for c in CLASSES if c != original)
    for edited, said in (({**receipt, "class": forged},
                          f"raise runs again: {path} says {forged}, its evidence gives "
                          f"{original}"),
                         ({"class": original}, "task_id")):
        path.write_text(json.dumps(edited))
        (root / "campaign-receipt.json").unlink()       # killed before it was sealed
        result = cli("run", root.parent, "--resume")
        assert result.exit_code in (0, 1), result.output
        assert "raise runs again:" in result.output and said in result.output, result.output
        lines = [ln for ln in result.output.splitlines() if ln.startswith("CAMPAIGN_TASK")]
        kept = {ln.split()[1] for ln in lines if ln.endswith("(kept from before the resume)")}
        assert kept == {"task=add"}                                   # raise runs anew
        assert json.loads(path.read_text())["task_id"] == "raise"
    assert len(list(root.glob(".abandoned/raise-*"))) >= 2


def test_the_report_of_a_product_run_says_its_gate_compiler_and_caliber(campaign):
    _, runs = campaign
    shown = CliRunner().invoke(main, ["report", str(runs["canary"][1])])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "canary gate PASS" in shown.output
    assert next(ln for ln in lines if ln.startswith("side baseline:")).split("—")[0].strip() \
        != "side baseline: -"                       # the cell runs' compiler
    assert not next(ln for ln in lines if ln.startswith("caliber:")).endswith(" -")
