"""A task's class, decided from its evidence in a fixed order; the first rule that applies wins.

    K  correctness fails under the candidate (and not under every cell)
    X  excluded, with the reason: correctness fails under every cell; a round-a cell did not
       pass; the candidate's correctness is not PASS (skipped, timed out, could not run); a
       replay fell back; the IR scope is incomplete; a control cell's generated code differs
       from the baseline's
    B  no code change: the candidate did not change what it targets (fewer convert_layout in
       measured kernels, or another fingerprint, as the manifest says) — R instead when
       round a already shows a regression
    X  the code changed but round b is missing, failed, fell back, or a round has no latency
    G  both rounds at or above the good threshold (default +5 %)
    R  both rounds at or below the regression threshold (default -3 %)
    C  otherwise: changed, not clearly better

Deltas are (baseline / candidate - 1) x 100, the median over shapes: positive = the candidate
is faster. Each decision carries a rule code (stable, for tables and tests) and a reason.

The canary gate decides from the classes of a canary run whether it authorises the full
campaign: it passes when every canary task has a class, each canary the gate names landed in
one of the classes allowed for it, and at most `max_k` tasks are K (default 0).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .manifest import CONVERT_LAYOUT, UNOBSERVED, Gate, Protocol

PASS, FAIL = "PASS", "FAIL"


@dataclass(frozen=True)
class CellFacts:
    status: str
    reason: str = ""
    replay_fallbacks: int = 0
    scope_complete: bool = False
    scope_problem: str = ""
    convert_count: int | None = None
    fingerprint: str | None = None

    @classmethod
    def from_receipt(cls, receipt: dict) -> "CellFacts":
        scope = receipt.get("ir_scope") or {}
        return cls(status=receipt.get("status", "NOT_RUN"), reason=receipt.get("reason", ""),
                   replay_fallbacks=int(receipt.get("replay_fallbacks") or 0),
                   scope_complete=bool(scope.get("complete")),
                   scope_problem="; ".join(scope.get("problems") or ()),
                   convert_count=scope.get("convert_count"),
                   fingerprint=scope.get("fingerprint"))


@dataclass(frozen=True)
class Rules:
    cells: tuple[str, ...]            # round-a order, the baseline first
    candidate: str
    controls: tuple[str, ...]
    code_change: str
    good_pct: float = 5.0
    regression_pct: float = -3.0

    @property
    def baseline(self) -> str:
        return self.cells[0]

    @classmethod
    def from_protocol(cls, p: Protocol) -> "Rules":
        return cls(tuple(c.name for c in p.cells), p.candidate.name,
                   tuple(c.name for c in p.controls), p.code_change, p.good_pct,
                   p.regression_pct)

    def to_dict(self) -> dict:
        return {"cells": list(self.cells), "candidate": self.candidate,
                "controls": list(self.controls), "code_change": self.code_change,
                "good_pct": self.good_pct, "regression_pct": self.regression_pct}

    @classmethod
    def from_dict(cls, d: dict) -> "Rules":
        return cls(tuple(d["cells"]), d["candidate"], tuple(d["controls"]), d["code_change"],
                   float(d["good_pct"]), float(d["regression_pct"]))


@dataclass
class Evidence:
    correctness: dict[str, str]                     # cell -> PASS / FAIL / SKIP / ...
    round_a: dict[str, CellFacts]
    round_b: dict[str, CellFacts] = field(default_factory=dict)
    delta_a: float | None = None
    delta_b: float | None = None
    correctness_reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    cls: str
    code: str
    reason: str


def classify(ev: Evidence, rules: Rules) -> Decision:
    """The rules of the module docstring, one after the other, in their order."""
    verdict = _correctness(ev, rules) or _cells_ran(ev, rules) or \
        _candidate_checked(ev, rules) or _round_a(ev, rules)
    if verdict:
        return verdict
    changed, how = code_changed(ev, rules)
    if not changed:
        if ev.delta_a is not None and ev.delta_a <= rules.regression_pct:
            return Decision("R", "no_code_change_regression",
                            f"no code change ({how}) and round a {ev.delta_a:+.2f}%")
        return Decision("B", "no_code_change", f"no code change ({how})")
    verdict = _round_b(ev, rules)
    if verdict:
        return verdict
    a, b = ev.delta_a, ev.delta_b
    rounds = f"round a {a:+.2f}%, round b {b:+.2f}%"
    if a >= rules.good_pct and b >= rules.good_pct:
        return Decision("G", "stable_gain", f"{how}; {rounds}")
    if a <= rules.regression_pct and b <= rules.regression_pct:
        return Decision("R", "stable_regression", f"{how}; {rounds}")
    return Decision("C", "changed_not_clearly_better", f"{how}; {rounds}")


def _correctness(ev: Evidence, rules: Rules) -> Decision | None:
    if ev.correctness.get(rules.candidate) == FAIL:
        others = [c for c in rules.cells if c != rules.candidate]
        if others and all(ev.correctness.get(c) == FAIL for c in others):
            return Decision("X", "correctness_fails_everywhere",
                            "correctness fails under every cell: not the candidate's doing")
        failing = [c for c in others if ev.correctness.get(c) == FAIL]
        why = ev.correctness_reasons.get(rules.candidate)
        return Decision("K", "candidate_correctness_fail", "correctness fails under the "
                        "candidate" + (f": {why}" if why else "") +
                        (f" (also under {', '.join(failing)})" if failing else ""))
    return None


def _cells_ran(ev: Evidence, rules: Rules) -> Decision | None:
    for name in rules.cells:
        facts = ev.round_a.get(name)
        if facts is None or facts.status != PASS:
            status = facts.status if facts else "missing"
            why = f": {facts.reason}" if facts and facts.reason else ""
            return Decision("X", "cell_failed", f"round a cell {name} is {status}{why}")
    return None


def _candidate_checked(ev: Evidence, rules: Rules) -> Decision | None:
    status = ev.correctness.get(rules.candidate)
    if status != PASS:
        why = ev.correctness_reasons.get(rules.candidate)
        return Decision("X", "candidate_correctness_not_pass", f"correctness under the "
                        f"candidate is {status or 'missing'}" + (f": {why}" if why else ""))
    return None


def _round_a(ev: Evidence, rules: Rules) -> Decision | None:
    for name in rules.cells[1:]:
        if ev.round_a[name].replay_fallbacks:
            return Decision("X", "replay_fallback", f"round a cell {name}: replay fell back "
                            f"on {ev.round_a[name].replay_fallbacks} case(s)")
    if rules.code_change == UNOBSERVED:
        return None
    for name in rules.cells:
        if not ev.round_a[name].scope_complete:
            return Decision("X", "scope_incomplete", f"IR scope of cell {name} is "
                            f"incomplete: {ev.round_a[name].scope_problem or 'unknown'}")
    base = ev.round_a[rules.baseline]
    for name in rules.controls:
        if _code(ev.round_a[name], rules) != _code(base, rules):
            return Decision("X", "control_code_differs", f"control cell {name} generated "
                            f"other code than the baseline ({_shown(ev.round_a[name], rules)} "
                            f"vs {_shown(base, rules)})")
    return None


def code_changed(ev: Evidence, rules: Rules) -> tuple[bool, str]:
    """Whether the candidate changed what it targets, and how that reads."""
    if rules.code_change == UNOBSERVED:
        return True, "code change not observed"
    base, cand = ev.round_a[rules.baseline], ev.round_a[rules.candidate]
    if rules.code_change == CONVERT_LAYOUT:
        changed = (cand.convert_count or 0) < (base.convert_count or 0)
        return changed, f"convert_layout {base.convert_count}->{cand.convert_count}"
    changed = cand.fingerprint != base.fingerprint
    return changed, "fingerprint " + ("changed" if changed else "unchanged")


def _round_b(ev: Evidence, rules: Rules) -> Decision | None:
    timed = (rules.baseline, rules.candidate)
    if not ev.round_b:
        return Decision("X", "round_b_missing", "the code changed but round b was not run")
    for name in timed:
        facts = ev.round_b.get(name)
        if facts is None or facts.status != PASS:
            status = facts.status if facts else "missing"
            return Decision("X", "round_b_failed", f"round b cell {name} is {status}")
        if facts.replay_fallbacks:
            return Decision("X", "round_b_replay_fallback", f"round b cell {name}: replay "
                            f"fell back on {facts.replay_fallbacks} case(s)")
    if ev.delta_a is None or ev.delta_b is None:
        return Decision("X", "no_latency", "a round has no comparable latency (no shape "
                        "paired between baseline and candidate)")
    return None


def _code(facts: CellFacts, rules: Rules):
    return facts.convert_count if rules.code_change == CONVERT_LAYOUT else facts.fingerprint


def _shown(facts: CellFacts, rules: Rules) -> str:
    if rules.code_change == CONVERT_LAYOUT:
        return f"convert_layout {facts.convert_count}"
    return f"fingerprint {(facts.fingerprint or 'none')[:12]}"


def evaluate_gate(gate: Gate, canary_order, classes: dict[str, str]) -> dict:
    """The canary gate's verdict on a canary run's classes: pass, failures and its rules."""
    failures = []
    missing = [t for t in canary_order if t not in classes]
    if missing:
        failures.append(f"no class for {', '.join(missing)}")
    for task_id, allowed in gate.classes.items():
        got = classes.get(task_id)
        if got is not None and got not in allowed:
            failures.append(f"{task_id} is {got}, the gate wants {' or '.join(allowed)}")
    k = sum(1 for c in classes.values() if c == "K")
    if k > gate.max_k:
        failures.append(f"{k} task(s) K, the gate allows {gate.max_k}")
    return {"pass": not failures, "failures": failures,
            "rules": {"classes": {t: list(a) for t, a in gate.classes.items()},
                      "max_k": gate.max_k}}


RULE_CODES = ("candidate_correctness_fail", "correctness_fails_everywhere", "cell_failed",
              "candidate_correctness_not_pass", "replay_fallback",
              "scope_incomplete", "control_code_differs", "no_code_change_regression",
              "no_code_change", "round_b_missing", "round_b_failed", "round_b_replay_fallback",
              "no_latency", "stable_gain", "stable_regression", "changed_not_clearly_better")
