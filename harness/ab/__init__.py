"""A/B: paired runs with pinned configs, the caliber guard, pairing, statistics, reports.

    sides.py        the two sides (environment, interpreter) and the plan
    preflight.py    every input checked before the first process (ops, sides, root, ...)
    orchestrate.py  running both sides in fresh processes, rounds, status.tsv
    guard.py        the caliber guard
    pairing.py      which cases pair, output mismatches, annotations
    compare.py      stored runs -> the typed report (ABReport); its statistics (intervals,
                    tests, Holm, summaries) are measure/stats.py's
    report.py       ABReport / ABRow and the report files (report.json, report.csv)
    render.py       the terminal view; html.py the HTML page
    recipe.py       A/B recipes (YAML)
"""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
