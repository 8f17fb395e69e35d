"""Fixes found on review: an overlapped lane holds its ops to the stall rule as a plain lane
does; a resume that switches overlap keeps what screen.json recorded of environment changes;
the rounds to detect a change are None, not an error, for a spread that is not finite."""
from __future__ import annotations

import json
import math
import shutil
import types

from harness.calibrate.floor import rounds_to_detect
from harness.corpus import units
from harness.corpus.standby import Turns
from harness.corpus.screen import read_plan, record_screen_run_fields
from harness.corpus.supervisor import Lane
from harness.run.options import BenchOptions


def test_an_overlapped_lane_hands_the_stall_timeout_to_its_worker(tmp_path, monkeypatch):
    seen = {}

    class Recorder:
        proc = object()

        def run(self, job, timeout_s, log, out, stall_s=None, wait_cap_s=0.0):
            seen["stall_s"], seen["wait_cap_s"] = stall_s, wait_cap_s
            return "attempt"

    lane = units.OverlapLane.__new__(units.OverlapLane)
    lane.pool = types.SimpleNamespace(warm=None, take=lambda: Recorder())
    lane.mine = types.SimpleNamespace(worker=Recorder())
    lane.handed = []
    lane.lane = Lane()
    work = units.OpWork(op="add", options=BenchOptions(adapter="builtin"), log=tmp_path / "l",
                        out=tmp_path / "o", timeout_s=60.0, stall_s=7.0, wait_cap_s=180.0)
    assert lane._once(work) == "attempt" and seen == {"stall_s": 7.0, "wait_cap_s": 180.0}


def test_an_overlapped_lane_forgives_device_waits_up_to_its_width_times_the_op_timeout(tmp_path):
    """Neighbours' runs are each bounded by their op timeout, so an op waits for at most
    `slots` of them; without overlap nothing is forgiven."""
    lane = units.OverlapLane.__new__(units.OverlapLane)
    lane.slots, lane.turns = 3, Turns()
    handed = []
    lane._once = lambda work: (handed.append(work.wait_cap_s)
                               or types.SimpleNamespace(rc=0, stalled_s=None))
    work = units.OpWork(op="add", options=BenchOptions(adapter="builtin"), log=tmp_path / "l",
                        out=tmp_path / "o", timeout_s=60.0)
    assert lane.run_op(work).rc == 0 and handed == [180.0] and work.wait_cap_s == 0.0


def test_rounds_to_detect_with_no_finite_spread_is_none():
    assert rounds_to_detect(math.nan, 0.3) is None
    assert rounds_to_detect(math.inf, 0.3) is None
    assert rounds_to_detect(None, 0.3) is None
    assert rounds_to_detect(0.1, 0.3) is not None


def test_switching_overlap_on_resume_keeps_the_recorded_environment_changes(tmp_path,
                                                                           corpus_roots):
    root = shutil.copytree(corpus_roots / "screen", tmp_path / "screen", symlinks=True)
    doc = json.loads((root / "screen.json").read_text())
    doc["env_changes"] = [{"at": "then", "from": {}, "to": {"X": "1"}}]
    (root / "screen.json").write_text(json.dumps(doc))
    plan = read_plan(root)
    plan.base.overlap = True
    record_screen_run_fields(plan)
    after = json.loads((root / "screen.json").read_text())
    assert after["batch"]["overlap"] is True
    assert after["env_changes"] == doc["env_changes"]
