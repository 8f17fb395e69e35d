from harness.measure.measurement import Measurement
from harness.store.results import FAILED, SUCCESS, Row
from harness.run.table import render_rows


def row(shape, status=SUCCESS, dtype="float16", t=2.0, g=1.0):
    ok = status == SUCCESS
    return Row(op="add", dtype=dtype, shape=[shape], shape_detail=str(shape), status=status,
               reason="" if ok else "mismatch",
               torch=Measurement((t,), "graph") if ok else None,
               gems=Measurement((g,), "graph") if ok else None)


def test_identical_columns_fold_into_the_legend():
    legend, table = render_rows([row(1), row(2)])
    assert legend == "op=add  dtype=float16  status=SUCCESS  timer=graph"
    header = table.splitlines()[0]
    assert "dtype" not in header and "shape" in header and "speedup" in header
    assert "2.000" in table


def test_differing_columns_stay_in_the_table():
    legend, table = render_rows([row(1), row(2, dtype="bfloat16"), row(3, status=FAILED)])
    assert "dtype" not in legend and "status" not in legend
    assert "FAILED: mismatch" in table and "bfloat16" in table


def test_colour_only_when_asked():
    _, plain = render_rows([row(1), row(2)], colour=False)
    _, coloured = render_rows([row(1), row(2)], colour=True)
    assert "\x1b[" not in plain and "\x1b[" in coloured
