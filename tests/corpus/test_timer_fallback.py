"""A corpus op that kills its process under graph timing (some libraries abort inside a graph
capture) is run once more with event timing, in a fresh process: measured, with notes
`timer_fallback=event` and `graph_rc=…`; an op that dies either way stays CRASH. The device
is the host with make-believe graphs and events, registered as a plugin backend so that the
batch's worker processes find it too."""
from __future__ import annotations

import csv
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FAST, FakeEvent, FakeGraph, ROOT, install_plugin


PLUGIN = textwrap.dedent('''
    """A host device that captures graphs, and ops that abort inside a capture."""
    import contextlib
    import os
    import time

    import torch

    from adapters.base import Adapter, Case, CaseInputs
    from backends.cpu import CpuBackend

    CAPTURING = []


    class CaptureHostBackend(CpuBackend):
        def __init__(self):
            super().__init__()
            self.name, self.aliases = "capturehost", ()
            self.supports_graph = self.supports_events = True

        def event(self):
            return FakeEvent()        # conftest's fake event and graph, appended below

        def new_graph(self):
            return FakeGraph()

        @contextlib.contextmanager
        def graph_capture(self, graph):
            CAPTURING.append(True)
            try:
                yield graph
            finally:
                CAPTURING.pop()

        def device_usable(self):
            return None

        def rng_usable(self, index):
            return None


    class CaptureLib(Adapter):
        name = "capturelib"

        def available(self):
            return True, ""

        def ops(self):
            return ["plain", "abort_in_capture", "abort_always"]

        def dtypes(self, op, backend):
            return ["float32"]

        def cases(self, op, dtypes, shapes, level, backend, device):
            def under_test(x):
                if op == "abort_always" or (op == "abort_in_capture" and CAPTURING):
                    os.abort()
                return x + x
            yield Case(op=op, dtype="float32", shape=[64], shape_detail="64",
                       build=lambda: CaseInputs((torch.randn(64),)),
                       baseline=lambda x: x * 2.0, under_test=under_test)

        def shapes_used(self, op):
            return {op: [[64]]}
''')

ENTRY_POINTS = textwrap.dedent('''
    [zlh.adapters]
    capturelib = zlh_capture_plugin:CaptureLib

    [zlh.backends]
    capturehost = zlh_capture_plugin:CaptureHostBackend
''')



@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    source = PLUGIN + "\n\n" + inspect.getsource(FakeEvent) + "\n\n" + \
        inspect.getsource(FakeGraph)
    return install_plugin(tmp_path_factory.mktemp("site"), "zlh_capture_plugin", source,
                          ENTRY_POINTS)


def batch(plugin_path: Path, out: Path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin_path), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "harness", "batch", "--adapter", "capturelib",
                           "--backend", "capturehost", *FAST, "--op-timeout", "120",
                           "-q", "--out", str(out), *args],
                          env=env, capture_output=True, text=True, timeout=600)


def rows(root: Path) -> dict[str, dict]:
    with open(root / "ops_status.csv", newline="") as handle:
        return {r["op"]: r for r in csv.DictReader(handle)}


def timer_of(root: Path, row: dict) -> str:
    return json.loads((root / row["run_dir"] / "run.json").read_text())["caliber"]["timer"]


@pytest.mark.e2e
def test_an_op_that_dies_in_graph_capture_is_measured_with_event_timing(plugin_path,
                                                                      tmp_path):
    out = tmp_path / "b"
    result = batch(plugin_path, out, "--ops", "plain,abort_in_capture,abort_always",
                   "--retries", "1")
    assert result.returncode == 1, result.stderr           # abort_always stays CRASH
    got = rows(out)
    assert got["plain"]["status"] == "PASS" and got["plain"]["notes"] == ""
    assert timer_of(out, got["plain"]) == "graph"           # auto chose graphs on this device
    caught = got["abort_in_capture"]
    assert caught["status"] == "PASS", caught
    assert caught["notes"].split() == ["timer_fallback=event", "graph_rc=-6->-6"]
    assert timer_of(out, caught) == "event"
    # attempts 1 and 2 died under graph timing (their logs kept), attempt 3 is event-timed
    logs = sorted(p.name for p in (out / "abort_in_capture").glob("run.attempt*.log"))
    assert logs == ["run.attempt1.log", "run.attempt2.log", "run.attempt3.log"]
    dead = got["abort_always"]
    assert dead["status"] == "CRASH" and "timer_fallback=event" in dead["notes"].split()


@pytest.mark.e2e
def test_an_explicit_graph_timer_is_kept_as_asked(plugin_path, tmp_path):
    out = tmp_path / "g"
    result = batch(plugin_path, out, "--ops", "abort_in_capture", "--timer", "graph",
                   "--retries", "0")
    assert result.returncode == 1, result.stderr
    row = rows(out)["abort_in_capture"]
    assert row["status"] == "CRASH" and "timer_fallback" not in row["notes"]


def test_the_builtin_fault_op_is_hidden_and_needs_a_device_that_captures(tmp_path):
    from click.testing import CliRunner

    from harness.cli import main
    listed = CliRunner().invoke(main, ["ops", "--adapter", "builtin", "--all-builtin"])
    assert "fault_abort_in_capture" in listed.output
    assert "fault_abort_in_capture" not in CliRunner().invoke(
        main, ["ops", "--adapter", "builtin"]).output
    result = CliRunner().invoke(main, ["bench", "fault_abort_in_capture", "--adapter",
                                       "builtin", "--backend", "cpu", *FAST,
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output       # skipped, not aborted
    assert "needs a device that captures graphs (backend cpu does not)" in result.output
