"""Adapters and backends from other packages, registered through entry points: a tiny plugin
package is installed (a `.dist-info` with entry_points.txt on the path, as pip leaves it) and
used by name."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, install_plugin

pytestmark = pytest.mark.e2e        # every test here starts zlh processes


PLUGIN = textwrap.dedent('''
    """A team's own adapter and device backend for zlh, shipped without forking it."""
    import torch

    from adapters.base import Adapter, Case, CaseInputs
    from backends.cpu import CpuBackend


    class ScaleAdapter(Adapter):
        name = "scalelib"
        checks_outputs = True

        def available(self):
            return True, ""

        def ops(self):
            return ["scale2x"]

        def dtypes(self, op, backend):
            return ["float32"]

        def cases(self, op, dtypes, shapes, level, backend, device):
            for n in (64, 256):
                yield Case(op=op, dtype="float32", shape=[n], shape_detail=str(n),
                           build=lambda n=n: CaseInputs((torch.randn(n),)),
                           baseline=lambda x: x * 2.0, under_test=lambda x: x + x,
                           check=lambda out, ref: torch.testing.assert_close(out, ref))

        def shapes_used(self, op):
            return {op: [[64], [256]]}


    class HostTwinBackend(CpuBackend):
        """The host CPU under another name, as a vendor's package would register its device."""

        def __init__(self):
            super().__init__()
            self.name = "hosttwin"
            self.aliases = ("twin",)


    class NotABackend:
        pass
''')

ENTRY_POINTS = textwrap.dedent('''
    [zlh.adapters]
    scalelib = zlh_scale_plugin:ScaleAdapter

    [zlh.backends]
    hosttwin = zlh_scale_plugin:HostTwinBackend
    broken = zlh_scale_plugin:NotABackend
''')


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    return install_plugin(tmp_path_factory.mktemp("site"), "zlh_scale_plugin", PLUGIN,
                          ENTRY_POINTS)


def zlh(plugin_path: Path, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin_path), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "harness", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_backends_lists_plugins_and_names_a_broken_one(plugin_path):
    proc = zlh(plugin_path, "backends", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    twin = {b["name"]: b for b in doc["backends"]}["hosttwin"]
    assert twin["plugin"] is True and twin["aliases"] == "twin" and twin["available"]
    assert not {b["name"]: b for b in doc["backends"]}["cpu"]["plugin"]
    assert "scalelib" in doc["adapters"]
    assert "WARNING backend plugin broken cannot be loaded" in proc.stderr
    assert "NotABackend is not a backends.Backend" in proc.stderr


def test_ops_lists_a_plugin_adapters_ops(plugin_path):
    proc = zlh(plugin_path, "ops", "--adapter", "scalelib")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["scale2x"]


def test_bench_runs_a_plugin_adapter_on_a_plugin_backend(plugin_path, tmp_path):
    proc = zlh(plugin_path, "bench", "scale2x", "--adapter", "scalelib", "--backend", "twin",
               "--out", str(tmp_path), "--warmup-ms", "1", "--min-samples", "3",
               "--min-time-ms", "0", "--max-time-ms", "20", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert [r["status"] for r in run["rows"]] == ["SUCCESS", "SUCCESS"]
    assert run["caliber"]["backend"] == "hosttwin"
    info = json.loads((Path(run["run_dir"]) / "run.json").read_text())
    assert info["adapter"]["adapter"] == "scalelib"


def test_unknown_adapter_lists_the_registered_ones(plugin_path):
    proc = zlh(plugin_path, "bench", "scale2x", "--adapter", "scalelb")
    assert proc.returncode == 2
    assert "unknown adapter 'scalelb'; did you mean scalelib?" in proc.stderr
    assert "builtin, flaggems, user, scalelib" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_without_the_plugin_its_names_are_unknown(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "harness", "bench", "scale2x", "--backend",
                           "hosttwin"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "unknown backend 'hosttwin'" in proc.stderr
