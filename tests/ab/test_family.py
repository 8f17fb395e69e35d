"""The verdicts of an A/B are decided over every shape of it (Holm over all ops' shapes): an
A/A over many ops calls any shape significant at most alpha of the time, and nothing the
op's own family rejected is added."""
import numpy as np

from harness.ab.family import Family, decide
from harness.ab.html import render_html
from harness.ab.render import render_terminal
from harness.ab.report import ABReport, ABRow
from harness.measure.stats import holm


def _row(name: str, p: float, delta: float, significant: bool) -> ABRow:
    low, high = (delta - 0.1, delta + 0.1) if significant else (delta - 1, delta + 1)
    return ABRow("v", "bfloat16", name, 0, 1.0, 1.0, delta_pct=delta, ci_low_pct=low,
                 ci_high_pct=high, p_value=p, significant=significant,
                 direction=(1 if delta > 0 else -1) if significant else 0, interval="rounds")


def _report(op: str, rows: list[ABRow]) -> ABReport:
    faster = sum(1 for r in rows if r.significant and r.direction > 0)
    slower = sum(1 for r in rows if r.significant and r.direction < 0)
    return ABReport(op, {}, {"A": {}, "B": {}}, rows,
                    summary={"n": len(rows), "faster": faster, "slower": slower,
                             "unchanged": len(rows) - faster - slower, "within_noise": 0})


def test_a_verdict_its_op_gave_is_withdrawn_over_the_whole_ab():
    # bmm's 0.0064 passes Holm over its 5 shapes (0.05 / 5 = 0.01), not over 20 (0.0025)
    bmm = _report("bmm", [_row("2x4096", 0.0064, -0.29, True)] +
                  [_row(f"s{i}", 0.3 + i / 10, 0.01, False) for i in range(4)])
    others = [_report(op, [_row(f"{op}{i}", 0.2 + i / 20, 0.02, False) for i in range(5)])
              for op in ("mm", "addmm", "fused_add_rms_norm")]
    family = Family()
    family.add(bmm)
    assert bmm.rows[0].significant and bmm.summary["slower"] == 1     # alone: its own family
    for report in others:
        family.add(report)
    assert not bmm.rows[0].significant and bmm.rows[0].direction == 0
    assert bmm.summary == {"n": 5, "faster": 0, "slower": 0, "unchanged": 5,
                           "within_noise": 0, "family_shapes": 20}
    (line,) = family.withdrawn()
    assert line.startswith("bmm bfloat16 2x4096: shown significant (-0.290 %, p 0.0064)")
    assert "over the A/B's 20 shapes" in line
    assert "significance by Holm over 20 shapes of the A/B" in render_terminal(bmm)
    assert "significance by Holm over 20 shapes of the A/B" in render_html(
        {"title": "t", "ops": [bmm.to_dict()]})


def test_a_change_on_every_shape_keeps_its_verdicts_and_nothing_is_added():
    planted = [_report(op, [_row(f"{op}{i}", p, -0.3, True) for i, p in
                            enumerate((1e-5, 1e-4, 5e-4, 0.004, 0.012))])
               for op in ("mm", "addmm", "bmm")]
    # a row its op did not call significant (no direction) stays so, whatever its p
    planted[0].rows.append(_row("undirected", 1e-9, 0.0, False))
    assert decide(planted) == []
    assert [sum(r.significant for r in rep.rows) for rep in planted] == [5, 5, 5]
    assert not planted[0].rows[-1].significant
    assert planted[1].summary["slower"] == 5 and planted[1].summary["family_shapes"] == 16


def test_an_aa_over_many_ops_calls_a_shape_significant_at_most_alpha_of_the_time():
    """8 ops × 5 shapes of pure noise (exact tests: p uniform), each op decided by Holm over
    its shapes as compare.py does: about a third of the A/As call something; over the A/B's
    40 shapes at most 5 % (within its binomial band)."""
    rng = np.random.default_rng(7)
    sims, per_op_any, family_any = 4000, 0, 0
    for _ in range(sims):
        reports = []
        for op, ps in enumerate(rng.uniform(size=(8, 5))):
            signs = rng.choice((-0.2, 0.2), size=5)
            reports.append(_report(f"op{op}", [_row(f"s{i}", p, d, flag) for i, (p, d, flag)
                                               in enumerate(zip(ps, signs, holm(ps)))]))
        per_op_any += any(r.significant for rep in reports for r in rep.rows)
        decide(reports)
        family_any += any(r.significant for rep in reports for r in rep.rows)
    band = 3 * (0.05 * 0.95 / sims) ** 0.5
    assert family_any / sims <= 0.05 + band
    assert per_op_any / sims > 0.25
