"""`zlh product reaccount RUN_ROOT --out DIR`: a sealed campaign run classified again from its
receipts with another measured launch floor, without a device and without writing inside it.

Every receipt is first checked against the sha256 its parent sealed (a changed receipt is
refused). Then each cell's IR scope is recomputed from its run directory with the new floor,
and the task's stored evidence (correctness, statuses, round deltas) goes through the same
classifier. The floor the run was sealed with reproduces the sealed classes. A new floor can
only take a code-change claim away: a task that now shows a change but was never given round
b comes out X (round b missing), never guessed. A resumed run (runner.py) keeps a finished task
only when this re-derivation, at the run's own floor, gives the class its receipt sealed.

    DIR/reaccount-receipt.json   counts before and after, changed tasks, one entry per task
    DIR/reaccount-matrix.csv     task_id, op, family, sealed_class, new_class, changed,
                                 convert counts of baseline and candidate before and after
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ..common.errors import UsageError
from ..common.fields import Fields
from ..common.files import atomic_write_text, check_output_dir
from .cells import ir_scope
from .classes import CellFacts, Evidence, Rules, classify
from .manifest import CLASSES
from .receipts import CAMPAIGN_RECEIPT, read_json, sha256_file, write_receipt, zlh_files

MATRIX_COLUMNS = ("task_id", "op", "family", "sealed_class", "new_class", "changed",
                  "sealed_convert_baseline", "sealed_convert_candidate", "new_convert_baseline",
                  "new_convert_candidate", "new_reason")


REACCOUNT_FILES = ("reaccount-receipt.json", "reaccount-matrix.csv")


def reaccount_run(run_root: str | Path, out: str | Path, floor: int | None = None,
                  force: bool = False) -> dict:
    """Re-account a sealed run into `out`; an earlier re-account there is replaced only with
    `force`."""
    run_root, out = Path(run_root).resolve(), Path(out).resolve()
    sealed = read_json(run_root / CAMPAIGN_RECEIPT, "campaign receipt (a sealed run root?)")
    if sealed.get("kind") != "campaign" or sealed.get("status") != "TERMINAL":
        raise UsageError(f"{run_root}: not a sealed campaign run (no terminal campaign receipt)")
    if out == run_root or run_root in out.parents:
        raise UsageError(f"--out {out} is inside the sealed run {run_root}; write elsewhere")
    check_output_dir(out, "--out")
    found = [name for name in REACCOUNT_FILES if (out / name).exists() or
             (out / name).is_symlink()]
    if found and not force:
        raise UsageError(f"--out {out} already holds a re-account ({', '.join(found)}); add "
                         f"--force to replace it, or give another --out")
    task_ids, shas, ir = _sealed_fields(sealed, run_root / CAMPAIGN_RECEIPT)
    floor = sealed["measured_launch_floor"] if floor is None else floor
    rows = []
    for task_id in task_ids or sorted(shas):
        path = run_root / "tasks" / task_id / "task-receipt.json"
        task = task_fields(_verified(path, shas.get(task_id)), path)
        rows.append(rederive(run_root, task, floor, ir["scrub"], ir["stage"]))
    result = {
        "kind": "reaccount", "campaign_id": sealed.get("campaign_id"),
        "selection": sealed.get("selection"), "run_root": str(run_root),
        "produced_by": {"sealed_campaign_receipt": sha256_file(run_root / CAMPAIGN_RECEIPT),
                        "zlh_tree_sha256": zlh_files()["tree_sha256"]},
        "sealed_measured_launch_floor": sealed.get("measured_launch_floor"),
        "measured_launch_floor": floor, "task_count": len(rows),
        "sealed_counts": _counts(r["sealed_class"] for r in rows),
        "new_counts": _counts(r["new_class"] for r in rows),
        "changed": [r["task_id"] for r in rows if r["changed"]],
        "note": "derived from the sealed receipts and run directories: no new measurement, "
                "and no sealed receipt is replaced",
        "tasks": rows}
    check_output_dir(out, "--out", create=True)
    write_receipt(out / "reaccount-receipt.json", result)
    atomic_write_text(out / "reaccount-matrix.csv", matrix_csv(rows))
    return result


class _Sealed(Fields):
    """The fields of a sealed campaign receipt; one of another shape is refused with the field
    it lacks, as a receipt zlh did not seal."""
    EXPECTED = {"produced_by.tasks": "an object of task id -> sha256",
                "claim_scope.tasks": "a list of task ids",
                "measured_launch_floor": "a whole number >= 0",
                "ir": "an object with stage and scrub"}

    def error(self, name: str, what: str, value) -> UsageError:
        what = self.EXPECTED.get(name, "present" if self.missing(value) else what)
        return UsageError(f"{self.where}: {name} must be {what} (not a receipt zlh sealed)")


def _sealed_fields(sealed: dict, path: Path) -> tuple[list[str], dict, dict]:
    """(task ids, {task id: sealed sha256}, {scrub, stage}) of a campaign receipt."""
    f = _Sealed(sealed, str(path))
    shas = f.str_map("produced_by.tasks")
    tasks = f.strs("claim_scope.tasks")
    f.int("measured_launch_floor", low=0)
    f.object("ir")
    return tasks, shas, {"stage": f.str("ir.stage"), "scrub": f.strs("ir.scrub")}


def _verified(path: Path, sha: str | None) -> dict:
    if not path.is_file():
        raise UsageError(f"{path}: sealed receipt missing")
    if sha is None:
        raise UsageError(f"{path}: no sha256 sealed for it (its parent receipt does not name "
                         f"it)")
    if sha256_file(path) != sha:
        raise UsageError(f"{path}: changed since the run was sealed (sha256 differs)")
    return read_json(path)


def _evidence_intact(root: Path, receipt: dict, where: Path) -> None:
    """Every file a cell receipt sealed (its run's run.json, results.jsonl, ttgir/index.tsv,
    its log) still there with the sha256 it sealed: the IR scope is re-derived from them, so
    a file gone or changed is refused (exit 2), not read as no IR."""
    sealed = receipt.get("produced_by")
    if not isinstance(sealed, dict):
        return
    for rel, sha in sealed.items():
        path = root / rel
        if not path.is_file():
            raise UsageError(f"{path}: sealed by {where} and now missing; the re-account "
                             f"reads it")
        if isinstance(sha, str) and sha256_file(path) != sha:
            raise UsageError(f"{path}: changed since the run was sealed (sha256 differs from "
                             f"{where})")


def task_fields(task: dict, path: Path) -> dict:
    """A task receipt whose fields the re-account reads are of the types zlh seals."""
    f = _Sealed(task, str(path))
    f.str("task_id", empty=False)
    for name in ("op_name", "family", "class", "reason"):
        f.str(name)
    f.object("rules")
    f.strs("rules.cells")
    if not task["rules"]["cells"]:
        raise f.error("rules.cells", "a non-empty list of cell names", [])
    for name in ("rules.candidate", "rules.code_change"):
        f.str(name)
    f.strs("rules.controls")
    f.number("rules.good_pct")
    f.number("rules.regression_pct")
    f.str_map("receipts", {})
    f.str_map("produced_by", {})
    for name in ("rounds", "correctness", "correctness_reasons"):
        f.object(name, {})
    return task


def rederive(root: Path, task: dict, floor: int, scrub, stage: str) -> dict:
    rules = Rules.from_dict(task["rules"])
    sealed = task.get("produced_by") or {}
    facts: dict[str, dict] = {"a": {}, "b": {}}
    convert: dict[str, dict] = {"sealed": {}, "new": {}}
    for key, rel in (task.get("receipts") or {}).items():
        rnd, _, cell = key.partition("/")
        receipt = _verified(root / rel, sealed.get(rel))
        if rnd not in facts:
            continue
        run_dir = root / receipt["run_dir"] if receipt.get("run_dir") else None
        _evidence_intact(root, receipt, root / rel)        # the files ir_scope reads
        scope = ir_scope(run_dir, floor, scrub, stage) if run_dir else receipt.get("ir_scope")
        facts[rnd][cell] = CellFacts.from_receipt({**receipt, "ir_scope": scope})
        if rnd == "a":
            convert["sealed"][cell] = (receipt.get("ir_scope") or {}).get("convert_count")
            convert["new"][cell] = (scope or {}).get("convert_count")
    rounds = task.get("rounds") or {}
    evidence = Evidence(dict(task.get("correctness") or {}), facts["a"], facts["b"],
                        (rounds.get("a") or {}).get("delta_median_pct"),
                        (rounds.get("b") or {}).get("delta_median_pct"),
                        dict(task.get("correctness_reasons") or {}))
    decision = classify(evidence, rules)
    base, cand = rules.baseline, rules.candidate
    return {"task_id": task["task_id"], "op": task.get("op_name"), "family": task.get("family"),
            "sealed_class": task.get("class"), "new_class": decision.cls,
            "changed": decision.cls != task.get("class"), "sealed_reason": task.get("reason"),
            "new_rule": decision.code, "new_reason": decision.reason,
            "sealed_convert": convert["sealed"], "new_convert": convert["new"],
            "baseline": base, "candidate": cand}


def _counts(values) -> dict:
    values = list(values)
    return {c: values.count(c) for c in CLASSES}


def matrix_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(MATRIX_COLUMNS)
    for r in rows:
        b, c = r["baseline"], r["candidate"]
        writer.writerow([r["task_id"], r["op"], r["family"], r["sealed_class"], r["new_class"],
                         "yes" if r["changed"] else "no", r["sealed_convert"].get(b),
                         r["sealed_convert"].get(c), r["new_convert"].get(b),
                         r["new_convert"].get(c), r["new_reason"]])
    return buffer.getvalue()
