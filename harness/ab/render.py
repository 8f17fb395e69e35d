"""The A/B report on the terminal (HTML: html.py; the CSV and JSON files: report.py).

Every view reads a row's `direction` for faster / slower; none re-derives it.
"""
from __future__ import annotations

import math

import click

from tabulate import tabulate

from ..common import style
from ..common.fields import is_int, is_number
from ..store.compiler import short as short_compiler
from .report import ABReport, ABRow, family_note


def _num(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if not is_number(value):
        return "?"                       # a damaged report.json: shown, not raised
    return format(value, spec)


def _colour(text: str, row: ABRow, colour: bool) -> str:
    if not colour or not row.direction:
        return text
    return click.style(text, fg="green" if row.direction > 0 else "red")


def _table_entry(report: ABReport, r: ABRow, multi: bool, colour: bool,
                 auto: bool = False) -> list:
    label = f"{r.variant} " if r.variant and r.variant != report.op else ""
    entry = [r.dtype, label + r.shape_detail + (f" #{r.occurrence}" if r.occurrence else ""),
             _num(r.a_ms, ".5f"), _num(r.b_ms, ".5f"),
             _colour(_num(r.delta_pct, "+.2f"), r, colour),
             f"[{_num(r.ci_low_pct, '+.2f')}, {_num(r.ci_high_pct, '+.2f')}]",
             _num(r.p_value, ".3g"),
             "noise" if r.within_noise else "yes" if r.significant else "no"]
    if multi:
        rd = r.rounds or {}
        spread = (f"{_num(rd.get('min_delta_pct'), '+.2f')}~"
                  f"{_num(rd.get('max_delta_pct'), '+.2f')}")
        entry += [spread,
                  "yes" if rd.get("sign_stable") else "NO", _num(rd.get("detectable_pct"), ".3f")]
        if auto:
            entry.append(_num(rd.get("needed"), "d"))
    entry.append("; ".join(r.annotations) or "")
    return entry


NO_RANGE = ("no IR captured on a side: nothing went through Triton (or IR capture was off), "
            "so the switch cannot act here; no latency range is printed (the numbers are in "
            "report.json/csv)")


def render_terminal(report: ABReport, colour: bool = False) -> str:
    """The printing rule: for NO_IR (no IR on a side) no latency table or range — it would
    read as a conclusion — unless the runs were interpreted on the cpu backend (no compiled
    IR to judge there); for NO_IR_DIFF the range is labelled as this machine's noise floor."""
    lines = [f"== {report.op}: A={report.sides['A'].get('run_dir')}  "
             f"B={report.sides['B'].get('run_dir')}", compiler_line(report)]
    if report.verdict:
        lines.append(f"verdict: {report.verdict}")
    if report.verdict == "NO_IR" and report.caliber.get("backend") != "cpu":
        lines.append(NO_RANGE)
        return "\n".join(lines + _problem_lines(report))
    if report.verdict == "NO_IR":
        lines.append("interpreted (cpu backend): no compiled IR to judge; host-clock "
                     "interpreter times, they show the harness works, not a GPU's speed")
    lines += _table_lines(report, colour)
    summary = _summary_lines(report.summary)
    if summary and str(report.verdict).startswith("SWITCH_NO_IR_DIFF"):
        summary[0] = "noise floor (identical generated code): " + summary[0]
    lines += summary
    return "\n".join(lines + _problem_lines(report))


def compiler_line(report: ABReport) -> str:
    """`compiler: A triton 3.9.0, B flagtree 0.3.0` (each side's run.json)."""
    return "compiler: " + ", ".join(
        f"{key} {short_compiler((report.sides.get(key) or {}).get('compiler'))}"
        for key in ("A", "B"))


def _table_lines(report: ABReport, colour: bool) -> list[str]:
    multi = any(r.rounds for r in report.rows)
    headers = ["dtype", "shape", "A ms", "B ms", "delta %",
               "95% CI (rounds)" if any(r.interval == "rounds" for r in report.rows)
               else "95% CI", "p", "signif."]
    auto = multi and (report.summary.get("rounds_design") or {}).get("design") == "two-stage"
    if multi:
        headers += ["rounds min~max", "sign stable", "detectable %"]
        headers += ["rounds needed"] if auto else []
    headers.append("notes")
    table = [_table_entry(report, r, multi, colour, auto) for r in report.rows]
    return [tabulate(table, headers=headers, tablefmt=style.tablefmt(), disable_numparse=True)
            if table else "(no paired rows)"]


def _problem_lines(report: ABReport) -> list[str]:
    lines = []
    if report.broken_by_b:
        lines.append(f"!!! BROKEN_BY_B op={report.op}: B failed {len(report.broken_by_b)} "
                     f"case(s) A ran: {', '.join(report.broken_by_b[:5])}")
    for u in report.unpaired:
        lines.append(f"unpaired: side {u['side']} {u['dtype']} {u['shape_detail']} "
                     f"{u['status']}: {u['reason']}")
    for m in report.output_mismatches:
        lines.append(f"!!! OUTPUT_MISMATCH op={report.op} round={m['round']} "
                     f"dtype={m['dtype']} shape={m['shape_detail']}: {m['reason']}")
    return lines


def _geomean_ci(s: dict) -> str:
    """` [low, high] (95% CI over rounds)` of the geomean speedup; '' without one."""
    low, high = s.get("geomean_ci_low"), s.get("geomean_ci_high")
    if not (is_number(low) and is_number(high)) or math.isnan(low) or math.isnan(high):
        return ""
    return f" [{low:.4f}, {high:.4f}] (95% CI over {s.get('geomean_interval') or 'samples'})"


def _summary_lines(s: dict) -> list[str]:
    if not s.get("n"):
        return []
    lines = [f"summary: {s['n']} shapes, geomean speedup B vs A "
             f"{_num(s.get('geomean_speedup'), '.4f')}{_geomean_ci(s)}, delta "
             f"{_num(s.get('delta_min_pct'), '+.2f')}% ~ {_num(s.get('delta_max_pct'), '+.2f')}% "
             f"(median {_num(s.get('delta_median_pct'), '+.2f')}%), faster {s['faster']}, "
             f"slower {s['slower']}, unchanged {s['unchanged']} (delta > 0: B faster)"
             + (f"; within the noise floor {s['within_noise']}" if s.get("within_noise")
                else "") + family_note(s)]
    if s.get("rounds", 1) == 1:
        lines.append("one round: intervals and p-values see each process's own noise only; "
                     "when zlh runs both sides, --rounds 3 or more adds the "
                     "process-to-process part" + _chosen(s, "; the round ran as "))
    else:
        per_round = ", ".join(_num(v, "+.2f") for v in s["per_round_median_delta_pct"])
        spread = s["side_spread_median_pct"]
        spread = spread if isinstance(spread, dict) else {}
        lines.append(f"rounds: {s['rounds']}; per-round median delta {per_round}; sign-unstable "
                     f"shapes {s['sign_unstable']}; side spread (median over shapes) "
                     f"A {_num(spread.get('A'), '.2f')}% B {_num(spread.get('B'), '.2f')}%"
                     + _pairs_note(s))
        lines.append(_design_line(s))
    return lines


def _pairs_note(s: dict) -> str:
    """Where a round's delta came from pairs (compare): rounds in turns, from neighbour
    samples; shapes on level placements, from placement pairs."""
    turned, levelled = (_count(s.get(key)) for key in ("rounds_in_turns", "level_paired_shapes"))
    return ((f"; {turned} of {s['rounds']} rounds in turns, a shape's delta there the median "
             f"of its neighbour sample pairs where they pair (rounds.paired_rounds)"
             if turned else "")
            + (f"; {levelled} shape(s) on level placements, a round's delta there the median "
               f"of its placement pairs (rounds.level_paired_rounds)" if levelled else ""))


def _count(value) -> int:
    """A summary's count, or 0 where it is missing or not a positive integer."""
    return value if is_int(value) and value > 0 else 0


def _chosen(s: dict, lead: str = "") -> str:
    """`<lead><process> (chosen from the record[, at its budget])` where --round-process auto
    chose one (with --round-budget auto, the budget the rounds ran at)."""
    chosen = s.get("round_process") if isinstance(s.get("round_process"), dict) else {}
    if not chosen.get("process"):
        return ""
    budget = chosen.get("budget")
    at = f", at {' '.join(map(str, budget))}" if isinstance(budget, list) and budget else ""
    return f"{lead}{chosen['process']} (chosen from the record{at})"


def _design_line(s: dict) -> str:
    """How the rounds were chosen and what `detectable %` means."""
    design = s.get("rounds_design") if isinstance(s.get("rounds_design"), dict) else {}
    what = ("detectable %: the smallest change found 4 times in 5 (alpha 0.05, before Holm) "
            "from the per-round spread")
    if _chosen(s):
        what = f"{_chosen(s, 'rounds as ')}; {what}"
    if design.get("design") != "two-stage":
        return f"rounds fixed at {s.get('rounds')}; {what}"
    return (f"rounds auto (two-stage: pilot {design.get('min_rounds')}, target half-width "
            f"{_num(design.get('target_pct'), 'g')} %, cap {design.get('max_rounds')}): "
            f"{s.get('rounds')} rounds, " + (
                "cut short (later rounds left out)"
                if design.get("stopped_by") in ("interrupted", "short")
                else f"stopped by the {design.get('stopped_by', '?')}")
            + f"; the interval uses the pilot's spread, never narrower than all the rounds'; "
              f"{what}")
