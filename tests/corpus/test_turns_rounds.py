"""`zlh ab --round-process turns`: the record made alone first (round 0), then every round's two
sides at once in their workers, their samples taken in turns (run.json says so, the first side
following ABBA), the report built from rounds 1.. as `zlh ab --rescore` reads them."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.ab import orchestrate as abmod
from harness.ab.orchestrate import together
from harness.ab.rounds import side_order
from harness.cli import main
from harness.ab.render import render_terminal
from harness.corpus.chosen_rounds import ChosenRounds, choose_by_record
from harness.corpus.rounds import (RUN_LINE, TurnsFreshRounds, TurnsRounds, TwinsRounds,
                                   round_seed)
from harness.measure.device_lock import LOCK_DIR_ENV
from slow_add import slow_add_plan


@pytest.mark.e2e
def test_rounds_run_both_sides_at_once_taking_turns(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))  # dropped: both sides time at once
    runner = TurnsRounds(settle_s=0.0, shift_max_bytes=1 << 16)
    plan = slow_add_plan(tmp_path, runner, rounds=3, shapes="add: [[4096], [8192]]\n")
    lines: list[str] = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert code == 0 and len(reports) == 1, lines
    assert runner.starts == {"A": 1, "B": 1}
    assert not any("taken alone" in line for line in lines), lines
    root = tmp_path / "ab" / "add"
    (record,) = (root / "r0_A").glob("*/run.json")
    assert json.loads(record.read_text())["autotune_mode"] == "record"
    assert "turns" not in json.loads(record.read_text())        # made alone
    for number in range(1, 4):
        for side in "AB":
            (run,) = (root / f"r{number}_{side}").glob("*/run.json")
            info = json.loads(run.read_text())
            assert info["autotune_mode"] == "replay"
            assert LOCK_DIR_ENV not in (info.get("env") or {})
            # two shapes, the function under test alone (an A/B run does not time the
            # baseline): two measurements in turns
            assert info["turns"] == {"first": side == side_order(number)[0], "cases": 2,
                                     "lost": None}
            rows = [json.loads(line) for line in
                    (run.parent / "results.jsonl").read_text().splitlines()]
            assert len(rows) == 2 and all(r["torch_ms"] is None and r["gems_ms"] > 0 and
                                          r["torch_gbps"] is None and r["gems_gbps"] > 0
                                          for r in rows)
    report = reports[0].to_dict()
    assert report["summary"]["rounds"] == 3
    assert all(r["interval"] == "rounds" and r["delta_pct"] < 0 for r in report["rows"])  # B slower
    # every round took turns throughout: each shape's delta there from its neighbour pairs
    assert report["summary"]["rounds_in_turns"] == 3
    assert [r["rounds"]["paired_rounds"] for r in report["rows"]] == [3, 3]
    again = CliRunner().invoke(main, ["ab", "--rescore", str(tmp_path / "ab")])
    assert again.exit_code == 0, again.output
    assert "3 of 3 rounds in turns" in again.output


def built_slowed(op_root: Path, name: str) -> bool:
    """Whether the run in op_root/name measured cases built slowed (ZLH_BUILTIN_SLOW): what
    its side's switch, given to its process, asked. Twins time the sides one after the other,
    so on a loaded two-CPU host a stretch of other processes can slow one side's whole run
    past the switch's own cost; what each run built says the sides ran apart surely."""
    rows = [json.loads(line) for line in
            next((op_root / name).glob("*/results.jsonl")).read_text().splitlines()]
    return all(row["extra"]["slow"] for row in rows)


def two_rounds_alone_first(tmp_path, runner):
    """Two rounds of the slowed add by `runner`, whose record is made alone: (the reports,
    the op's folder, each run's run.json by its folder's name r0_A … r2_B)."""
    plan = slow_add_plan(tmp_path, runner, rounds=2)
    lines: list[str] = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert code == 0 and len(reports) == 1, lines
    root = tmp_path / "ab" / "add"
    runs = {}
    for name in ("r0_A", "r1_A", "r1_B", "r2_A", "r2_B"):
        (run,) = (root / name).glob("*/run.json")
        runs[name] = json.loads(run.read_text())
    return reports, root, runs


@pytest.mark.e2e
def test_turns_fresh_runs_every_run_in_its_own_process_launched_ahead(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))  # dropped: both sides time at once
    runner = TurnsFreshRounds(settle_s=0.0, shift_max_bytes=1 << 16)
    reports, root, runs = two_rounds_alone_first(tmp_path, runner)
    assert "turns" not in runs["r0_A"] and runs["r0_A"]["autotune_mode"] == "record"
    for number in (1, 2):
        for side in "AB":
            assert runs[f"r{number}_{side}"]["turns"] == {
                "first": side == side_order(number)[0], "cases": 1, "lost": None}
    assert len({info["pid"] for info in runs.values()}) == 5      # a process per run
    cache = {name: Path(info["caches"]["env"]["TRITON_CACHE_DIR"]) for name, info in runs.items()}
    assert cache["r0_A"].parent == root / "r0_A" and cache["r1_B"].parent == root / "r1_B"
    assert cache["r1_A"] == cache["r2_A"] == cache["r0_A"] != cache["r1_B"] == cache["r2_B"]
    # each worker said in the side's log where its job's time went
    jobs = [line for side in "AB" for line in
            (tmp_path / "ab" / f"worker_{side}.log").read_text().splitlines()
            if line.startswith("zlh job add: set up ")]
    assert len(jobs) == 5 and all(line.endswith(" s") and "bench" in line for line in jobs)
    # and the parent where each run's wall went: its spare's readiness, the run, the stop
    ran = [line for side in "AB" for line in
           (tmp_path / "ab" / f"worker_{side}.log").read_text().splitlines()
           if line.startswith(RUN_LINE.format("turns-fresh"))]
    assert sorted(line.split(":")[1].split(" spare")[0] for line in ran) == sorted(
        f" add round {n} side {s}" for n, s in
        ((0, "A"), (1, "A"), (1, "B"), (2, "A"), (2, "B")))
    assert all(re.search(r"ready \d+\.\d\d s later, run ended \d+\.\d+, stopped in "
                         r"\d+\.\d\d s, spares [1-8]$", line) for line in ran), ran
    assert not any(LOCK_DIR_ENV in (info.get("env") or {}) for info in runs.values())
    # every run's process stopped after it, and the spares with the A/B
    pools = list(runner.pools.values())
    assert pools and all(pool.spare is None for pool in pools)
    assert all(pool.warm["activate"] for pool in pools)     # spares make their context ahead
    assert sum(pool.starts for pool in pools) >= 5 and not runner.workers
    assert reports[0].to_dict()["rows"][0]["delta_pct"] < 0                # B slower


@pytest.mark.e2e
def test_twins_run_a_rounds_sides_one_after_the_other_behind_one_spacer(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))    # kept: one side at a time
    runner = TwinsRounds(shift_max_bytes=1 << 16)
    assert runner.settle_s == 0.0 and together(runner) is None
    reports, root, runs = two_rounds_alone_first(tmp_path, runner)
    assert runs["r0_A"]["autotune_mode"] == "record"         # made alone, as round 0
    assert all(runs[f"r{n}_{s}"]["autotune_mode"] == "replay" for n in (1, 2) for s in "AB")
    assert not any("turns" in info for info in runs.values())
    assert len({info["pid"] for info in runs.values()}) == 5      # a process per run
    assert all((info.get("env") or {}).get(LOCK_DIR_ENV) for info in runs.values())
    # a round's two runs are twins: the same spacer, one run after the other in ABBA order
    for number in (1, 2):
        held = {side: re.search(r"round re-randomised: seed (\d+), (\d+) bytes held",
                                (root / f"r{number}_{side}" / "bench.log").read_text())
                for side in "AB"}
        assert all(held.values()) and held["A"].groups() == held["B"].groups()
        assert int(held["A"].group(1)) == round_seed("add", number)
    status = [line.split("\t") for line in (root.parent / "status.tsv").read_text()
              .splitlines()[1:]]
    assert [(row[0], row[2]) for row in status] == [
        ("0", "A"), ("1", "A"), ("1", "B"), ("2", "B"), ("2", "A")]
    ran = [line for side in "AB" for line in
           (tmp_path / "ab" / f"worker_{side}.log").read_text().splitlines()
           if line.startswith(RUN_LINE.format("twins"))]
    assert len(ran) == 5, ran                             # each run's wall, in the side's log
    pools = list(runner.pools.values())
    assert pools and not any(pool.warm["activate"] for pool in pools)   # spares start bare
    assert not runner.workers and all(pool.spare is None for pool in pools)
    report = reports[0].to_dict()
    assert report["summary"]["rounds"] == 2
    assert report["summary"]["rounds_in_turns"] == 0          # twins: the ratio of medians
    assert report["rows"][0]["rounds"]["paired_rounds"] == 0
    assert {name: built_slowed(root, name) for name in runs} == {
        "r0_A": False, "r1_A": False, "r1_B": True, "r2_A": False, "r2_B": True}
    again = CliRunner().invoke(main, ["ab", "--rescore", str(tmp_path / "ab")])
    assert again.exit_code == 0, again.output


@pytest.mark.e2e
def test_auto_runs_each_ops_rounds_as_its_record_chose(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))  # dropped, as in turns-fresh

    def choose(run_dir):          # no CPU case runs at a power limit: softmax's record says so
        if Path(run_dir).parent.parent.name == "softmax":
            return {"process": "turns-fresh", "held_by_power": ["float32 4x64"],
                    "why": "said so for the test"}
        return choose_by_record(run_dir)
    runner = ChosenRounds(shift_max_bytes=1 << 16, choose=choose)
    plan = slow_add_plan(tmp_path, runner, rounds=1,
                         shapes="add: [[4096]]\nsoftmax: [[4, 64]]\n")
    plan.ops = ["add", "softmax"]
    lines: list[str] = []
    reports, code = abmod.run_ab(plan, echo=lines.append)
    assert code == 0 and [r.op for r in reports] == ["add", "softmax"], lines
    root = tmp_path / "ab"
    assert any(line.startswith("add: rounds as twins: no case of the record ran held back")
               for line in lines), lines
    assert "softmax: rounds as turns-fresh: said so for the test" in lines
    runs = {(op, name): json.loads(next((root / op / name).glob("*/run.json")).read_text())
            for op in ("add", "softmax") for name in ("r0_A", "r1_A", "r1_B")}
    assert not any("turns" in info for (op, _), info in runs.items() if op == "add")
    assert all("turns" in runs[("softmax", f"r1_{s}")] for s in "AB")
    assert len({info["pid"] for info in runs.values()}) == 6       # a process per run
    status = [line.split("\t") for line in (root / "status.tsv").read_text().splitlines()[1:]]
    assert [(row[0], row[2]) for row in status if row[1] == "add"] == [
        ("0", "A"), ("1", "A"), ("1", "B")]           # twins: one after the other, in order
    chosen = {r.op: r.summary["round_process"]["process"] for r in reports}
    assert chosen == {"add": "twins", "softmax": "turns-fresh"}
    assert {(op, name): built_slowed(root / op, name) for op, name in runs} == {
        (op, name): name == "r1_B" for op, name in runs}
    assert reports[1].to_dict()["rows"][0]["delta_pct"] < 0     # B slower (softmax in turns)
    assert "the round ran as twins (chosen from the record)" in render_terminal(reports[0])
    again = CliRunner().invoke(main, ["ab", "--rescore", str(root)])
    assert again.exit_code == 0, again.output
    rescored = json.loads((root / "report.json").read_text())["ops"]
    assert {op["op"]: op["summary"]["round_process"]["process"] for op in rescored} == chosen


def test_ctrl_c_stops_both_sides_while_their_threads_change_the_workers(monkeypatch):
    """Ctrl-C in a round in turns: the main thread stops every worker while a side's thread
    may take or drop its worker at that moment (turns-fresh swaps one per run): stopping goes
    over a copy, so the interrupt surfaces as Ctrl-C, not as a changed dictionary."""
    from harness.ab.sides import Side
    from harness.corpus import rounds as rounds_mod

    runner = rounds_mod.TurnsRounds(settle_s=0.0, sleep=lambda s: None)
    stopped = []

    class Worker:
        def __init__(self, label):
            self.label = label

        def stop(self):
            stopped.append(self.label)
            runner.workers.pop("B", None)             # as a side thread dropping its worker

    runner.workers.update(A=Worker("A"), B=Worker("B"))
    monkeypatch.setattr(runner, "_run_job", lambda *args: None)

    def interrupted(futures):
        raise KeyboardInterrupt
    monkeypatch.setattr(rounds_mod, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run_together(None, "add", 1, (Side("A"), Side("B")), None)
    assert stopped[0] == "A"
    # a side thread that had not yet begun its run begins none (no worker is started)
    monkeypatch.undo()
    monkeypatch.setattr(runner, "_worker", lambda *a, **k: pytest.fail("a worker started"))
    with pytest.raises(rounds_mod.RoundsStopped):
        runner._run_job(None, "add", 1, Side("B"), None)
    runner.close()
