"""`zlh report` on every kind of root: the kind read from the root's files, each kind's
model from a small synthetic root (tests/report_roots.py), the terminal view and the page."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import report_roots as R
from harness.cli import main
from harness.common.errors import UsageError
from harness.report import kinds, page, svg
from harness.report.build import build

MAKERS = {"screen": R.screen_root, "batch": R.batch_root, "ab": R.ab_root,
          "calibrate": R.calibrate_root, "campaign": R.campaign_root,
          "product": R.product_root}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("roots")
    return {kind: make(base / kind) for kind, make in MAKERS.items()}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_the_kind_is_read_from_the_files(roots, kind):
    assert kinds.detect(roots[kind]) == kind


def test_a_run_directory_and_an_empty_folder_are_refused(roots, tmp_path):
    run = next((roots["batch"] / "op0").glob("op0_*"))
    with pytest.raises(UsageError, match="is a run directory, not an A/B root"):
        kinds.detect(run)
    with pytest.raises(UsageError, match="no report.json"):
        kinds.detect(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "contract-receipt.json").write_text("{}")
    with pytest.raises(UsageError, match="is a frozen product campaign: its run is"):
        kinds.detect(tmp_path)


def test_screen_model(roots):
    report = build(roots["screen"])
    h = report.headline
    assert h.kind == "screen" and [s.switch for s in h.sides] == [
        "TRITON_F32_DEFAULT=ieee", "TRITON_F32_DEFAULT=tf32x3"]
    assert h.sides[1].compiler == "triton 3.6.0" and h.device == "NVIDIA H200"
    assert sum(h.counts.values()) == 12 and h.counts["IR_CHANGED"] >= 3
    ops = {e.op: e for e in report.ops}
    changed = ops["op0000"]
    assert changed.status == "IR_CHANGED" and len(changed.shapes) == 2
    assert all(s.low is not None and s.low <= s.delta <= s.high for s in changed.shapes)
    kernel, = changed.changed_kernels
    assert (kernel.a["n_regs"], kernel.b["n_regs"], kernel.b["n_spills"], kernel.b["shared"],
            kernel.a["num_warps"], kernel.b["num_warps"]) == ("40", "64", "2", "16384", "4", "8")
    assert kernel.file_a.startswith("A/op0000/") and kernel.file_a.endswith(".ttgir")
    assert "ttg.convert_layout" in changed.diff_html and '<table class="diff">' in changed.diff_html
    assert [r[1] for r in changed.split["A"]["rows"]] == ["op0000_kernel", "op0000_setup"]
    assert sum(r[4] for r in changed.split["B"]["rows"]) == pytest.approx(1.0)
    (case, total, idle, span, latency, beside, gap), = changed.split["B"]["sums"]
    # a graph-timed run (the root's caliber): the latency stands beside the kernels' sum
    assert (total, idle, span, latency, beside, gap) == (200.0, 1.0, 201.0, 202.0,
                                                         "sum of kernels",
                                                         pytest.approx(0.990, abs=0.001))
    noise = next(e for e in report.ops if e.status == "NO_IR_DIFF")
    assert noise.noise and not noise.changed_kernels and not noise.diff_html
    no_rows = next(e for e in report.ops if e.status in ("NO_ROWS", "NO_TRITON"))
    assert no_rows.delta is None and no_rows.low is None     # no range printed for them
    assert len(report.telemetry) == 60 and any(p["slow"] for p in report.telemetry)


def test_old_index_without_metadata_still_reads(tmp_path):
    """A root captured before the compiled-kernel columns existed: the kernels still show,
    with the columns the index has."""
    root = R.screen_root(tmp_path / "s", 3)
    for index in root.rglob("index.tsv"):
        lines = [ln.split("\t")[:-3] for ln in index.read_text().splitlines()]
        index.write_text("\n".join("\t".join(c) for c in lines) + "\n")
    kernel = build(root).ops[0].changed_kernels[0]
    assert "n_regs" not in kernel.a and kernel.b["num_warps"] == "8"
    meta = '"meta":["num_warps","num_stages","num_ctas","convert_layout"]'
    assert meta in page.render(build(root))


def test_batch_model(roots):
    report = build(roots["batch"])
    assert report.headline.counts == {"PASS": 3, "FAIL": 1}
    passed = next(e for e in report.ops if e.op == "op0")
    assert passed.delta == pytest.approx(10, abs=1) and len(passed.shapes) == 2
    failed = next(e for e in report.ops if e.status == "FAIL")
    assert failed.reason == "boom" and failed.delta is None


@pytest.mark.parametrize("kind", ["ab", "calibrate", "campaign"])
def test_report_json_models(roots, kind):
    report = build(roots[kind])
    assert report.headline.kind == kind
    statuses = {e.op: e.status for e in report.ops}
    assert set(statuses.values()) <= {"IR_CHANGED", "NO_IR_DIFF"}
    changed = [e for e in report.ops if e.status == "IR_CHANGED"]
    assert all(e.changed_kernels and e.links for e in changed)
    assert all(e.delta is not None and e.low <= e.delta <= e.high for e in report.ops)
    if kind == "campaign":
        assert report.headline.cards == "0, 1"
        assert report.headline.sides[1].switch == "TRITON_F32_DEFAULT=tf32x3"
    if kind == "calibrate":
        assert "calibration: 3 rounds" in report.headline.notes[0]


def test_product_model(roots):
    report = build(roots["product"])
    assert report.headline.counts == {"C": 1, "G": 1, "X": 1}
    task = report.ops[0]
    assert (task.status, task.delta, task.low, task.high) == ("G", 11.1, 10.0, 12.0)
    assert task.convert_layout == "1→2" and len(task.shapes) == 2
    assert any(label == "task receipt" for label, _ in task.links)


def test_robust_axis_survives_outliers():
    """A +4.8 million % interval and a -102 % whisker do not flatten the other points."""
    low, high = svg.robust_range([1.0, -2.0, 3.0, 0.5, 4.8e6, -99.9] + [0.1] * 50,
                                 [4.9e6, -102.0, 5.0])
    assert low >= -100 and high < 100
    axis = svg.Axis(low, high, 0, 100)
    assert axis.clipped(4.8e6) and not axis.clipped(3.0)
    chart = svg.ranked([("big", 4.8e6, 4.7e6, 4.9e6, False), ("small", 1.0, 0.5, 1.5, False),
                        ("neg", -2.0, -2.5, -1.5, False)], "x")
    assert chart.count('class="clip"') + chart.count("class=clip") >= 2


def test_cli_prints_and_writes_the_page(roots, tmp_path):
    result = CliRunner().invoke(main, ["report", str(roots["screen"])])
    assert result.exit_code == 0, result.output
    assert "== zlh screen screen (screen, 12 ops)" in result.output
    assert "largest changes" in result.output and "op0001" in result.output
    out = tmp_path / "page.html"
    result = CliRunner().invoke(main, ["report", str(roots["screen"]), "--html", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    blob = html.split('<script type="application/json" id="data">')[1].split("</script>")[0]
    data = json.loads(blob.replace("<\\/", "</"))
    op = next(o for o in data["ops"] if o["o"] == "op0000")
    assert op["D"]["links"][0][1].startswith("../")       # relative to the page's folder
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "<script src" not in html and "@import" not in html


def test_bare_html_writes_into_the_root(roots):
    result = CliRunner().invoke(main, ["report", str(roots["ab"]), "--html"])
    assert result.exit_code == 0, result.output
    assert (roots["ab"] / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_html_never_replaces_a_file_zlh_did_not_write_unless_forced(roots, tmp_path):
    data = roots["ab"] / "report.json"
    before = data.read_bytes()
    result = CliRunner().invoke(main, ["report", str(roots["ab"]), "--html", str(data)])
    assert result.exit_code == 2 and data.read_bytes() == before
    assert result.output.strip().splitlines()[-1].endswith(
        "exists and is not a page zlh wrote; name another file, or add --force to replace it")
    page_file = tmp_path / "page.html"
    for _ in range(2):                     # a page zlh wrote is replaced without asking
        result = CliRunner().invoke(main, ["report", str(roots["ab"]), "--html",
                                           str(page_file)])
        assert result.exit_code == 0, result.output
    mine = tmp_path / "mine.html"
    mine.write_text("<!DOCTYPE html><p>my notes</p>")
    result = CliRunner().invoke(main, ["report", str(roots["ab"]), "--html", str(mine)])
    assert result.exit_code == 2 and "my notes" in mine.read_text()
    result = CliRunner().invoke(main, ["report", str(roots["ab"]), "--html", str(mine),
                                       "--force"])
    assert result.exit_code == 0 and "my notes" not in mine.read_text()


def test_names_from_a_root_cannot_break_out_of_the_page(tmp_path):
    root = R.screen_root(tmp_path / "s", 3)
    nasty = "op</script><!--<b>x</b>&"
    table = root / "screen.tsv"
    table.write_text(table.read_text().replace("op0002", nasty))
    html = page.render(build(root))
    head, rest = html.split('<script type="application/json" id="data">')
    blob, tail = rest.split("</script>", 1)
    assert html.count("</script>") == 2 and "<!--" not in blob
    assert "<b>x" not in head + tail and "&lt;b&gt;x" in head        # escaped in the SVG
    assert nasty in [o["o"] for o in json.loads(blob)["ops"]]
