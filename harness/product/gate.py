"""The canary gate: decides whether a canary run authorises the full campaign.

It passes when every canary task has a class, each canary the gate names landed in one of the
classes allowed for it, and at most `max_k` tasks are K (default 0).
"""
from __future__ import annotations

from .manifest import Gate


def evaluate(gate: Gate, canary_order, classes: dict[str, str]) -> dict:
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
