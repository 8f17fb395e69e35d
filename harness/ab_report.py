"""Presentation of A/B report data: terminal table, CSV, JSON. (HTML: report_html.)"""
from __future__ import annotations

import csv
import io
import math

from tabulate import tabulate

CSV_COLUMNS = ("op", "variant", "dtype", "shape_detail", "occurrence", "a_ms", "b_ms", "delta_pct",
               "ci_low_pct", "ci_high_pct", "interval", "p_value", "significant", "rounds_min_delta_pct",
               "rounds_max_delta_pct", "sign_stable", "annotations")


def _num(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def _colour(text: str, row: dict, colour: bool) -> str:
    if not colour or not row.get("significant"):
        return text
    import click
    return click.style(text, fg="green" if row["delta_pct"] > 0 else "red")


def render_terminal(report: dict, colour: bool = False) -> str:
    lines = [f"== {report['op']}: A={report['sides']['A']['run_dir']}  "
             f"B={report['sides']['B']['run_dir']}"]
    if report.get("verdict"):
        lines.append(f"verdict: {report['verdict']}")
    rows = report["rows"]
    multi = any(r.get("rounds") for r in rows)
    table = []
    for r in rows:
        label = (f"{r['variant']} " if r.get("variant") and r["variant"] != report["op"] else "")
        entry = [r["dtype"], label + r["shape_detail"] +
                 (f" #{r['occurrence']}" if r["occurrence"] else ""),
                 _num(r["a_ms"], ".5f"), _num(r["b_ms"], ".5f"),
                 _colour(_num(r["delta_pct"], "+.2f"), r, colour),
                 f"[{_num(r.get('ci_low_pct'), '+.2f')}, {_num(r.get('ci_high_pct'), '+.2f')}]",
                 _num(r.get("p_value"), ".3g"), "yes" if r.get("significant") else "no"]
        if multi:
            rd = r["rounds"]
            entry += [f"{rd['min_delta_pct']:+.2f}~{rd['max_delta_pct']:+.2f}",
                      "yes" if rd["sign_stable"] else "NO"]
        entry.append("; ".join(r.get("annotations", [])) or "")
        table.append(entry)
    headers = ["dtype", "shape", "A ms", "B ms", "delta %",
               "95% CI (rounds)" if any(r.get("interval") == "rounds" for r in report["rows"])
               else "95% CI", "p", "signif."]
    if multi:
        headers += ["rounds min~max", "sign stable"]
    headers.append("notes")
    lines.append(tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True)
                 if table else "(no paired rows)")
    s = report["summary"]
    if s.get("n"):
        lines.append(f"summary: {s['n']} shapes, geomean speedup B vs A "
                     f"{_num(s.get('geomean_speedup'), '.4f')}, delta "
                     f"{_num(s.get('delta_min_pct'), '+.2f')}% ~ "
                     f"{_num(s.get('delta_max_pct'), '+.2f')}% (median "
                     f"{_num(s.get('delta_median_pct'), '+.2f')}%), faster {s['faster']}, "
                     f"slower {s['slower']}, unchanged {s['unchanged']} (delta > 0: B faster)")
    if s.get("rounds", 1) == 1 and s.get("n"):
        lines.append("one round: intervals and p-values see each process's own noise only; "
                     "--rounds 3 or more adds the process-to-process part")
    if s.get("rounds", 1) > 1 and s.get("n"):
        per_round = ", ".join(_num(v, "+.2f") for v in s["per_round_median_delta_pct"])
        spread = s["side_spread_median_pct"]
        lines.append(f"rounds: {s['rounds']}; per-round median delta {per_round}; sign-unstable "
                     f"shapes {s['sign_unstable']}; side spread (median over shapes) "
                     f"A {_num(spread['A'], '.2f')}% B {_num(spread['B'], '.2f')}%")
    for u in report.get("unpaired", []):
        lines.append(f"unpaired: side {u['side']} {u['dtype']} {u['shape_detail']} "
                     f"{u['status']}: {u['reason']}")
    for m in report.get("output_mismatches", []):
        lines.append(f"!!! OUTPUT_MISMATCH op={report['op']} round={m['round']} "
                     f"dtype={m['dtype']} shape={m['shape_detail']}: {m['reason']}")
    return "\n".join(lines)


def to_csv(reports: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n",
                            extrasaction="ignore")
    writer.writeheader()
    for report in reports:
        for r in report["rows"]:
            rounds = r.get("rounds") or {}
            writer.writerow({**r, "op": report["op"],
                             "rounds_min_delta_pct": rounds.get("min_delta_pct"),
                             "rounds_max_delta_pct": rounds.get("max_delta_pct"),
                             "sign_stable": rounds.get("sign_stable"),
                             "annotations": "; ".join(r.get("annotations", []))})
    return buf.getvalue()


def finite(value):
    """NaN and infinities become null: strict JSON readers reject bare NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def to_json(reports: list[dict]) -> dict:
    """One object: every row (with its op and delta_pct), an overall summary, and per op;
    non-finite numbers as null."""
    rows = [{"op": rep["op"], **r} for rep in reports for r in rep["rows"]]
    summary = reports[0]["summary"] if len(reports) == 1 else {
        "ops": len(reports), "n": sum(rep["summary"].get("n", 0) for rep in reports),
        "faster": sum(rep["summary"].get("faster", 0) for rep in reports),
        "slower": sum(rep["summary"].get("slower", 0) for rep in reports),
        "unchanged": sum(rep["summary"].get("unchanged", 0) for rep in reports)}
    return finite({"rows": rows, "summary": summary, "ops": reports})
