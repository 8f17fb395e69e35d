"""--replay pins each case's calls per sample to its record's (pinned_calls): both sides of a
comparison size their samples alike, whatever their first estimates said."""
import dataclasses
import json

from conftest import FakeBackend
from harness.measure.case_timer import CaseTimer
from harness.measure.timers import EVENT, GRAPH, HOST, EventTimer, GraphTimer, HostTimer
from harness.run.pinned_calls import calls_from_record
from harness.run.runner import run_op
from harness.store.reader import read_rows
from harness.store.results import SUCCESS
from scripted import plan_for
import backends


def noop():
    sum(range(50))


def test_each_timer_takes_the_pinned_calls_and_a_graph_is_captured_once(fast_rule, fast_budget):
    backend = FakeBackend()
    graph = GraphTimer(backend, 0, fast_rule, fast_budget).measure(noop, calls=7)
    assert (graph.timer, graph.calls_per_sample, backend.captures) == (GRAPH, 7, 1)
    event = EventTimer(FakeBackend(), 0, fast_rule, fast_budget).measure(noop, calls=5)
    host = HostTimer(backends.get_backend("cpu"), 0, fast_rule, fast_budget).measure(noop,
                                                                                      calls=3)
    assert (event.timer, event.calls_per_sample) == (EVENT, 5)
    assert (host.timer, host.calls_per_sample) == (HOST, 3)


def test_a_pin_too_long_for_a_capture_is_not_taken(fast_rule, fast_budget):
    tight = dataclasses.replace(fast_budget, max_capture_ms=1e-4)
    m = GraphTimer(FakeBackend(), 0, fast_rule, tight).measure(noop, calls=500)
    assert m.calls_per_sample != 500


def test_a_pin_applies_to_its_own_timer_only(fast_rule, fast_budget):
    timer = CaseTimer(FakeBackend(), 0, GRAPH, fast_rule, fast_budget)
    assert timer.measure(noop, "op", pin=(GRAPH, 9)).measurement.calls_per_sample == 9
    sized = timer.measure(noop, "op").measurement.calls_per_sample
    other = timer.measure(noop, "op", pin=(EVENT, sized + 4)).measurement
    assert other.timer == GRAPH and other.calls_per_sample != sized + 4
    # a capture that fails falls back to events: an event pin is then the one used
    failing = CaseTimer(FakeBackend(capture_error=RuntimeError("operation not permitted when "
                                                               "stream is capturing")),
                        0, GRAPH, fast_rule, fast_budget)
    fell = failing.measure(noop, "op", pin=(EVENT, 6)).measurement
    assert (fell.timer, fell.calls_per_sample, bool(fell.fallback)) == (EVENT, 6, True)


def test_a_replay_times_every_case_with_its_records_calls_per_sample(tmp_path, fast_rule,
                                                                     fast_budget):
    plan = plan_for(["ok", "ok", "wrong"], tmp_path, fast_rule, fast_budget)
    record = run_op(plan, "op", echo=lambda _: None).run_dir
    assert json.loads((record / "run.json").read_text())["pinned_calls"] == 0
    # Give the record's cases calls per sample no sizing would choose here, one per case.
    path = record / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    wanted = {}
    for number, row in enumerate(rows):
        if row["status"] == SUCCESS:
            for side in ("torch", "gems"):
                row[side]["calls_per_sample"] = 11 + 2 * number + (side == "gems")
            wanted[row["shape_detail"], row["occurrence"]] = (row["torch"]["calls_per_sample"],
                                                              row["gems"]["calls_per_sample"])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    pins = calls_from_record(record)
    assert len(pins) == len(wanted) == 2      # the failed case ("wrong") pins nothing

    replay = run_op(dataclasses.replace(plan, replay_dirs={"op": record}), "op",
                    echo=lambda _: None).run_dir
    got = {(r.shape_detail, r.occurrence): (r.torch.calls_per_sample, r.gems.calls_per_sample)
           for r in read_rows(replay / "results.jsonl") if r.torch is not None}
    assert got == wanted
    assert json.loads((replay / "run.json").read_text())["pinned_calls"] == 2
