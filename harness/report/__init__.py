"""`zlh report ROOT` and `zlh history ROOTS...`: one self-contained page (or terminal text)
for any root zlh writes — an A/B, calibrate, batch, screen, campaign or product run root.

    kinds.py     which kind of root a folder is, from its files
    model.py     the page's data: headline, one entry per op, telemetry
    runs.py      one op's detail from its two run directories (shapes, kernels, TTGIR diff)
    abroot.py    the A/B, calibrate and campaign models (report.json)
    corpus.py    the batch and screen models (ops_status.csv, screen.tsv)
    product.py   the product run model (status.csv, task receipts)
    svg.py       the charts, drawn as inline SVG with robust axes
    page.py      the HTML page with its own small script (sort, filter, details)
    text.py      the terminal view
    history.py   many screen / A/B roots of one corpus lined up by build
"""

__all__: list[str] = []
