"""zlh ab in rounds of fresh processes, end to end on the CPU: three rounds of mm with side B
slowed, run once for the module; the slowed side reads slower, the rounds run in ABBA order
with round 1's A the record, and each side's first run keeps its Triton cache for its later
runs (the cache bookkeeping's own tests: test_compile_reuse.py)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.cli import main
from harness.compile.caches import KEPT_PREFIX
from test_ab import builtin_plan

pytestmark = pytest.mark.e2e        # every test here reads zlh processes' runs


@pytest.fixture(scope="module")
def slow_mm(tmp_path_factory):
    """Three rounds of mm, side B slowed: (the reports, the exit code, the A/B root). mm with
    a deep K: the slow switch runs its K loop four times, 4-6x the plain latency under the
    interpreter. The slow add (about 1.8x) is within what separates two processes on a busy
    two-core host (seen: 1.6x between plain runs, 3x for a small mm), and the median of three
    rounds once read -7 % for it."""
    tmp_path = tmp_path_factory.mktemp("slow_mm")
    plan = builtin_plan(tmp_path, rounds=3, op="mm",
                        shapes_yaml="mm: [[16, 16, 64], [32, 32, 64]]\n")
    reports, code = abmod.run_ab(plan, echo=lambda _: None)
    return reports, code, tmp_path / "ab"


def test_slow_switch_is_slower_on_every_shape_with_rounds(slow_mm):
    reports, code, root = slow_mm
    assert code == 0
    (report,) = [r.to_dict() for r in reports]
    assert len(report["rows"]) == 2
    # The median across rounds with a wide margin: one round of a busy CPU host can read
    # anything, so per-round signs and significance are left to the synthetic tests; the
    # device check asserts them on a GPU.
    assert all(r["delta_pct"] < -10 for r in report["rows"]), \
        [(r["delta_pct"], r["rounds"]) for r in report["rows"]]
    assert all(r["interval"] == "rounds" and r["rounds"]["rounds"] == 3 for r in report["rows"])
    assert report["summary"]["faster"] == 0 and report["summary"]["rounds"] == 3
    status = (root / "status.tsv").read_text().splitlines()
    assert status[0].split("\t")[:4] == ["round", "op", "side", "rc"]
    assert [tuple(ln.split("\t")[:3]) for ln in status[1:]] == [
        ("1", "mm", "A"), ("1", "mm", "B"), ("2", "mm", "B"), ("2", "mm", "A"),
        ("3", "mm", "A"), ("3", "mm", "B")]
    # every run but round 1's A replays it; the switch reached side B's processes only
    runs = sorted(root.rglob("run.json"))
    infos = [json.loads(p.read_text()) for p in runs]
    modes = sorted(i["autotune_mode"] for i in infos)
    assert modes == ["record"] + ["replay"] * 5
    assert sorted((p.parent.parent.name[-1], i["env"].get("ZLH_BUILTIN_SLOW"))
                  for p, i in zip(runs, infos)) == [("A", None)] * 3 + [("B", "1")] * 3
    assert (root / "report.json").exists() and (root / "report.csv").exists()
    html = CliRunner().invoke(main, ["report", str(root), "--html"])
    assert html.exit_code == 0 and '"o":"mm"' in (root / "report.html").read_text()


def cache_dir(run_dir: Path) -> Path:
    info = json.loads((run_dir / "run.json").read_text())
    return Path(info["caches"]["env"]["TRITON_CACHE_DIR"])


def test_rounds_of_fresh_processes_load_their_sides_first_compile_cache(slow_mm):
    reports, code, root = slow_mm
    assert code == 0 and len(reports) == 1
    root = root / "mm"
    used = {(n, s): cache_dir(next((root / f"r{n}_{s}").glob("*/run.json")).parent)
            for n in (1, 2, 3) for s in "AB"}
    for side in "AB":
        first = used[(1, side)]
        assert first.parent == root / f"r1_{side}" and first.name.startswith(KEPT_PREFIX)
        assert used[(2, side)] == first and used[(3, side)] == first
    assert used[(1, "A")] != used[(1, "B")]
    assert not list(root.rglob(KEPT_PREFIX + "*"))          # gone with the op's rounds
    for number, side in used:                  # each side its own switch, and its kernels
        (run,) = (root / f"r{number}_{side}").glob("*/run.json")
        env = json.loads(run.read_text()).get("env") or {}
        assert env.get("ZLH_BUILTIN_SLOW") == ("1" if side == "B" else None)
        rows = [json.loads(line) for line in
                (run.parent / "results.jsonl").read_text().splitlines()]
        assert len(rows) == 2 and all(row["extra"]["slow"] is (side == "B") for row in rows)
