"""Classes from constructed evidence (one row per rule, in the decided order), the IR scope of
a cell (launch floor, completeness), the canary gate, and what receipts hash."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.product.cells import ir_scope
from harness.product.classes import (RULE_CODES, CellFacts, Evidence, Rules, classify,
                                     evaluate_gate)
from harness.product.manifest import Gate
from harness.product.receipts import (HASHED_SUFFIXES, canonical, sha256_file, write_receipt,
                                      zlh_files)
from harness.version import __version__ as harness_version

from product_fakes import ROOT, Spec, make_run

CVT = Rules(("off", "mask0", "candidate"), "candidate", ("mask0",), "convert_layout")
FP = Rules(("off", "candidate"), "candidate", (), "fingerprint")
BLIND = Rules(("off", "candidate"), "candidate", (), "unobserved")


def ok(cvt=2, fp="f1", **kw) -> CellFacts:
    return CellFacts(kw.pop("status", "PASS"), scope_complete=kw.pop("complete", True),
                     convert_count=cvt, fingerprint=fp, **kw)


def ev(correctness=None, a=None, b=None, da=None, db=None, rules=CVT) -> Evidence:
    cells = rules.cells
    base_a = {c: ok() for c in cells}
    base_a[rules.candidate] = ok(cvt=1, fp="f2")        # changed by default
    return Evidence(correctness if correctness is not None else {rules.candidate: "PASS"},
                    {**base_a, **(a or {})}, b if b is not None else {}, da, db)


B_OK = {"off": ok(), "candidate": ok(cvt=1, fp="f2")}
FAIL_ALL = {"off": "FAIL", "mask0": "FAIL", "candidate": "FAIL"}
# One row per rule: (rules, evidence, class, rule code); the order is the decision order.
TABLE = [
    (CVT, ev({"candidate": "FAIL", "off": "PASS", "mask0": "PASS"}), "K",
     "candidate_correctness_fail"),
    (CVT, ev(FAIL_ALL), "X", "correctness_fails_everywhere"),
    (CVT, ev(a={"mask0": ok(status="CRASH")}), "X", "cell_failed"),
    (CVT, ev({"candidate": "SKIP"}), "X", "candidate_correctness_not_pass"),
    (CVT, ev(a={"candidate": ok(cvt=1, replay_fallbacks=2)}), "X", "replay_fallback"),
    (CVT, ev(a={"off": ok(complete=False, scope_problem="no index")}), "X",
     "scope_incomplete"),
    (CVT, ev(a={"mask0": ok(cvt=3)}), "X", "control_code_differs"),
    (CVT, ev(a={"candidate": ok(cvt=2)}, da=-4.0), "R", "no_code_change_regression"),
    (CVT, ev(a={"candidate": ok(cvt=2)}, da=+9.0), "B", "no_code_change"),
    (CVT, ev(da=6.0), "X", "round_b_missing"),
    (CVT, ev(b={"off": ok(), "candidate": ok(status="TIMEOUT")}, da=6, db=6), "X",
     "round_b_failed"),
    (CVT, ev(b={"off": ok(replay_fallbacks=1), "candidate": ok()}, da=6, db=6), "X",
     "round_b_replay_fallback"),
    (CVT, ev(b=B_OK, da=None, db=6.0), "X", "no_latency"),
    (CVT, ev(b=B_OK, da=5.0, db=7.5), "G", "stable_gain"),
    (CVT, ev(b=B_OK, da=-3.0, db=-8.0), "R", "stable_regression"),
    (CVT, ev(b=B_OK, da=6.0, db=4.9), "C", "changed_not_clearly_better"),
]


@pytest.mark.parametrize("rules,evidence,cls,code", TABLE, ids=[row[3] for row in TABLE])
def test_each_rule_decides_its_class(rules, evidence, cls, code):
    decision = classify(evidence, rules)
    assert (decision.cls, decision.code) == (cls, code), decision.reason
    assert decision.reason


def test_the_table_covers_every_rule():
    assert [row[3] for row in TABLE] == list(RULE_CODES)


def test_k_comes_before_every_x_and_names_cells_that_also_fail():
    evidence = ev({"candidate": "FAIL", "off": "FAIL", "mask0": "PASS"},
                  a={"off": ok(status="FAIL")})
    decision = classify(evidence, CVT)
    assert decision.cls == "K" and "also under off" in decision.reason


def test_fingerprint_mode_changed_code_gets_round_b_and_unchanged_is_b():
    changed = ev(rules=FP, b={"off": ok(), "candidate": ok(fp="f2")}, da=5.5, db=6.0)
    assert classify(changed, FP).cls == "G"
    same = ev(rules=FP, a={"candidate": ok(fp="f1")}, da=1.0)
    decision = classify(same, FP)
    assert (decision.cls, decision.reason) == ("B", "no code change (fingerprint unchanged)")


def test_unobserved_mode_ignores_ir_scope_and_never_decides_b():
    blind = ev(rules=BLIND, a={"off": ok(complete=False, cvt=None, fp=None),
                               "candidate": ok(complete=False, cvt=None, fp=None)},
               b={"off": ok(), "candidate": ok()}, da=-5.0, db=-4.0)
    assert classify(blind, BLIND).cls == "R"
    assert classify(ev(rules=BLIND, a={"candidate": ok(cvt=2, fp="f1")}), BLIND).code == \
        "round_b_missing"


def test_thresholds_come_from_the_rules():
    strict = Rules(CVT.cells, "candidate", ("mask0",), "convert_layout", good_pct=10.0,
                   regression_pct=-1.0)
    assert classify(ev(b=B_OK, da=6.0, db=7.0), strict).cls == "C"
    assert classify(ev(b=B_OK, da=-1.5, db=-2.0), strict).cls == "R"
    assert Rules.from_dict(strict.to_dict()) == strict


# ---- IR scope ---------------------------------------------------------------------------------
def test_scope_counts_measured_kernels_above_the_floor(tmp_path):
    run = make_run(tmp_path, "op", Spec(kernels=[("hot", 2, 100), ("once", 4, 1)],
                                        setup=[("fill", 3, 2)]), False)
    full = ir_scope(run, floor=0)
    assert full["complete"] and full["problems"] == []
    assert (full["convert_count"], full["convert_count_all"]) == (6, 9)
    assert full["measured_files"] == 4 and full["excluded"] == []
    scoped = ir_scope(run, floor=1)
    assert scoped["convert_count"] == 2 and scoped["convert_count_all"] == 9
    assert sorted(e["file"] for e in scoped["excluded"]) == ["128/once/w4.ttgir",
                                                             "64/once/w4.ttgir"]
    assert scoped["fingerprint"] != full["fingerprint"] and scoped["complete"]
    from harness.compile.ir.fingerprint import convert_layout_total, fingerprint
    assert full["fingerprint"] == fingerprint(run)
    assert full["convert_count"] == convert_layout_total(run)


@pytest.mark.parametrize("damage,problem", [
    (lambda run: (run / "ttgir/index.tsv").unlink(), "no ttgir/index.tsv"),
    (lambda run: (run / "ttgir/64/stray").mkdir() or
     (run / "ttgir/64/stray/w4.ttgir").write_text("ttg.convert_layout\n"),
     "1 dumped file(s) not in index.tsv"),
    (lambda run: _edit_json(run / "run.json", ir={"hooks_ok": False}), "IR hooks"),
    (lambda run: _edit_json(run / "run.json", caliber={"backend": "cpu"}), "interpreter"),
    (lambda run: _edit_json(run / "run.json", caliber={"ir_capture": False}), "capture was off"),
    (lambda run: _replace(run / "ttgir/index.tsv", "\tdumped\t64/k", "\tir missing\t64/k"),
     "IR missing for measured variant k (64)"),
])
def test_scope_is_incomplete_when_launches_cannot_be_attributed(tmp_path, damage, problem):
    run = make_run(tmp_path, "op", Spec(), False)
    damage(run)
    scope = ir_scope(run, floor=0)
    assert not scope["complete"] and any(problem in p for p in scope["problems"]), scope


def test_scope_of_no_run_is_incomplete():
    assert ir_scope(None)["problems"] == ["no run directory"]


def _edit_json(path: Path, **changes):
    doc = json.loads(path.read_text())
    for key, value in changes.items():
        doc[key] = {**(doc.get(key) or {}), **value}
    path.write_text(json.dumps(doc))


def _replace(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


# ---- the gate -------------------------------------------------------------------------------
def test_canary_gate():
    gate = Gate({"mm": ("G", "C"), "softmax": ("B",)}, max_k=0)
    assert evaluate_gate(gate, ["mm", "softmax"], {"mm": "C", "softmax": "B"})["pass"]
    failed = evaluate_gate(gate, ["mm", "softmax", "x"], {"mm": "X", "softmax": "B", "x": "K"})
    assert not failed["pass"]
    assert failed["failures"] == ["mm is X, the gate wants G or C",
                                  "1 task(s) K, the gate allows 0"]
    assert evaluate_gate(gate, ["mm", "softmax"], {"mm": "G"})["failures"] == [
        "no class for softmax"]


# ---- receipts -------------------------------------------------------------------------------
def test_receipts_are_canonical_and_their_hash_is_the_files(tmp_path):
    a = write_receipt(tmp_path / "a.json", {"b": 1, "a": [1.5, float("nan")], "kind": "x"})
    b = write_receipt(tmp_path / "b.json", {"kind": "x", "a": [1.5, float("nan")], "b": 1})
    assert a == b == sha256_file(tmp_path / "a.json")
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc == {"schema_version": 1, "zlh_version": harness_version, "a": [1.5, None],
                   "b": 1, "kind": "x"}
    assert (tmp_path / "a.json").read_bytes().endswith(b"}\n")
    assert canonical(doc) == (tmp_path / "a.json").read_text()


def test_zlh_files_hash_every_source_and_change_with_them(tmp_path):
    copy = tmp_path / "zlh"
    for package in ("harness", "adapters", "backends"):
        shutil.copytree(ROOT / package, copy / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    before = zlh_files(copy)
    assert before == zlh_files(ROOT) and "harness/product/classes.py" in before["files"]
    target = copy / "harness/product/classes.py"
    target.write_text(target.read_text() + "\n# edited\n")
    after = zlh_files(copy)
    assert after["tree_sha256"] != before["tree_sha256"]
    assert [f for f in after["files"] if after["files"][f] != before["files"][f]] == [
        "harness/product/classes.py"]


def test_gitattributes_pin_lf_for_every_hashed_file_kind():
    text = (ROOT / ".gitattributes").read_text()
    for suffix in HASHED_SUFFIXES:
        assert re.search(rf"^\*{re.escape(suffix)}\s+text eol=lf\s*$", text, re.M), suffix
