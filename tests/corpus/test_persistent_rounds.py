"""`zlh ab --round-process persistent`: every round of a side in one worker process (one start
per side), rounds in ABBA order and re-randomised, the root as fresh rounds leave it (status.tsv,
r<k>_<side>/ run directories, report.json that `zlh ab --rescore` recomputes)."""
import json
import re

import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.rounds import side_order
from harness.ab.sides import ABPlan, Side
from harness.cli import main
from harness.corpus.outcome import Attempt
from harness.corpus.rounds import PersistentRounds, round_seed
from harness.run.options import BenchOptions
from slow_add import slow_add_plan


@pytest.mark.e2e
def test_rounds_run_in_one_worker_per_side_in_abba_order(tmp_path):
    runner = PersistentRounds(settle_s=0.0, shift_max_bytes=1 << 16)
    plan = slow_add_plan(tmp_path, runner, rounds=4)
    reports, code = abmod.run_ab(plan, echo=lambda _: None)
    assert code == 0 and len(reports) == 1
    assert runner.starts == {"A": 1, "B": 1}                 # one process start per side
    assert not any(w.alive for w in runner.workers.values())   # stopped when the A/B ended
    status = (tmp_path / "ab" / "status.tsv").read_text().splitlines()[1:]
    order = [(int(ln.split("\t")[0]), ln.split("\t")[2]) for ln in status]
    assert order == [(n, s) for n in range(1, 5) for s in side_order(n)]
    assert "".join(s for _, s in order) == "ABBAABBA"
    pids, seeds = {}, {}
    for number, side in order:
        (run,) = (tmp_path / "ab" / "add" / f"r{number}_{side}").glob("*/run.json")
        info = json.loads(run.read_text())
        pids.setdefault(side, set()).add(info["pid"])
        assert info["autotune_mode"] == ("record" if (number, side) == (1, "A") else "replay")
        log = (run.parent.parent / "bench.log").read_text()
        assert f"round re-randomised: seed {round_seed('add', number)}" in log
        assert info["options"]["placement_seed"] == round_seed("add", number)  # placements too
        seeds.setdefault(number, set()).add(re.search(r"seed (\d+)", log).group(1))
        assert (info.get("env") or {}).get("ZLH_BUILTIN_SLOW") == ("1" if side == "B" else None)
    assert all(len(p) == 1 for p in pids.values()) and pids["A"] != pids["B"]
    # a round is a block: both sides behind the same allocation, each round another
    assert all(len(s) == 1 for s in seeds.values()) and len(set.union(*seeds.values())) == 4
    saved = json.loads((tmp_path / "ab" / "plan.json").read_text())
    assert saved["round_process"] == "persistent" and saved["settle_s"] == 0.0
    report = reports[0].to_dict()
    assert report["summary"]["rounds"] == 4 and all(r["interval"] == "rounds"
                                                    for r in report["rows"])
    again = CliRunner().invoke(main, ["ab", "--rescore", str(tmp_path / "ab")])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "ab" / "report.json").read_text())["ops"][0]["rows"][0][
        "delta_pct"] == pytest.approx(report["rows"][0]["delta_pct"])


@pytest.mark.parametrize("raised, recorded", [
    (KeyboardInterrupt, "-1"),        # a stop of the A/B: STOP_RC
    (RuntimeError, "125")])           # an error of zlh's own: no result, a failure
def test_an_interrupted_round_stops_its_worker_and_leaves_its_status_row(tmp_path, raised,
                                                                          recorded):
    class Stuck:
        alive, stopped = True, 0

        def run(self, job, timeout_s, log, out):
            assert job["round"]["seed"] == round_seed("add", 2)
            raise raised

        def stop(self):
            self.stopped += 1

    runner = PersistentRounds(settle_s=0.0)
    runner.workers["B"] = worker = Stuck()
    plan = ABPlan(ops=["add"], a=Side("A"), b=Side("B"), options=BenchOptions(),
                  root=tmp_path / "ab", runner=runner)
    (tmp_path / "ab").mkdir()
    with pytest.raises(raised):
        runner.run(plan, "add", 2, plan.b, tmp_path / "record")
    assert worker.stopped == 1 and runner.starts == {}
    (row,) = (tmp_path / "ab" / "status.tsv").read_text().splitlines()[1:]
    assert row.split("\t")[:4] == ["2", "add", "B", recorded]
    assert "--replay" in (tmp_path / "ab" / "add" / "r2_B" / "bench.log").read_text()


@pytest.mark.parametrize("rc, stopped, recorded", [
    (-15, True, "-1"),      # the A/B's stop ended this side's worker too: a stop (STOP_RC)
    (1, True, "1"),         # a run that ended with a result keeps it
    (-15, False, "-15"),    # killed alone while the A/B went on: its own code, a failure
    (-1, False, "125")])    # no result of its own, no stop: NO_RESULT_RC
def test_a_rounds_status_row_tells_a_stop_from_a_failure(tmp_path, rc, stopped, recorded):
    class Ended:
        alive = True

        def run(self, job, timeout_s, log, out):
            if stopped:               # meanwhile, as run_together does before it stops the
                runner.stopped.set()  # workers
            return Attempt(rc, 0.1, log, None, "ended")

        def stop(self):
            pass

    runner = PersistentRounds(settle_s=0.0)
    runner.workers["B"] = Ended()
    plan = ABPlan(ops=["add"], a=Side("A"), b=Side("B"), options=BenchOptions(),
                  root=tmp_path / "ab", runner=runner)
    (tmp_path / "ab").mkdir()
    runner._run_job(plan, "add", 2, plan.b, tmp_path / "record")
    (row,) = (tmp_path / "ab" / "status.tsv").read_text().splitlines()[1:]
    assert row.split("\t")[:4] == ["2", "add", "B", recorded]


def test_the_settle_gap_is_an_option_of_the_worker_round_processes():
    from harness.cli.rounds import rounds_plan
    from harness.common.errors import UsageError
    from harness.corpus.rounds import SETTLE_S, TurnsFreshRounds
    base = {"rounds": 4, "target_pct": None, "min_rounds": None, "max_rounds": None}
    _, _, runner = rounds_plan({**base, "round_process": "turns-fresh", "settle_ms": 250})
    assert isinstance(runner, TurnsFreshRounds) and runner.settle_s == 0.25
    _, _, runner = rounds_plan({**base, "round_process": "persistent", "settle_ms": None})
    assert runner.settle_s == SETTLE_S > 0
    _, _, runner = rounds_plan({**base, "round_process": "turns-fresh", "settle_ms": None})
    assert runner.settle_s == 0.0
    with pytest.raises(UsageError, match="--settle-ms only with --round-process"):
        rounds_plan({**base, "round_process": "fresh", "settle_ms": 0})
    refused = CliRunner().invoke(main, ["ab", "--replay", "runA", "--settle-ms", "0"])
    assert refused.exit_code == 2 and "--settle-ms does not apply" in refused.output


def test_the_round_spacer_is_an_option_of_the_worker_round_processes(monkeypatch):
    """--round-spacer-mb sizes the random allocation before a round's inputs (recorded in
    plan.json's runner); 0 holds none (the allocator's cache is still emptied); refused where
    no worker runs the rounds."""
    from harness.cli.rounds import rounds_plan
    from harness.common.errors import UsageError
    from harness.corpus.rounds import SHIFT_MAX_BYTES
    from harness.run import placement
    base = {"rounds": 4, "target_pct": None, "min_rounds": None, "max_rounds": None,
            "settle_ms": None}
    _, _, runner = rounds_plan({**base, "round_process": "turns-fresh", "round_spacer_mb": 0})
    assert runner.shift_max_bytes == 0
    _, _, runner = rounds_plan({**base, "round_process": "turns", "round_spacer_mb": 1.5})
    assert runner.shift_max_bytes == 3 << 19
    _, _, runner = rounds_plan({**base, "round_process": "persistent",
                                "round_spacer_mb": None})
    assert runner.shift_max_bytes == SHIFT_MAX_BYTES
    with pytest.raises(UsageError, match="--round-spacer-mb only with --round-process"):
        rounds_plan({**base, "round_process": "fresh", "round_spacer_mb": 0})
    refused = CliRunner().invoke(main, ["ab", "--replay", "runA", "--round-spacer-mb", "0"])
    assert refused.exit_code == 2 and "--round-spacer-mb does not apply" in refused.output

    class Backend:
        emptied = 0

        def empty_cache(self):
            self.emptied += 1

        def torch_device(self, index):
            raise AssertionError("nothing is allocated without a spacer")
    backend = Backend()
    with placement.elsewhere(backend, 0, 7, max_bytes=0) as held:
        assert held == 0
    assert backend.emptied == 1
