"""The ray executor on a real local Ray cluster (two fake GPUs, started once for the module):
the builtin fault batch ends as through local lanes, an actor killed mid-op is that op's
CRASH and is retried in a new actor, a batch whose driver was SIGKILLed resumes with nothing
lost or repeated, and no fake GPU ever runs two ops at once. Without Ray installed,
`--executor ray` is one line saying how to install it (that test runs everywhere)."""
from __future__ import annotations

import csv
import glob
import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.corpus.outcome import CRASH, FAIL, PASS, TIMEOUT
from harness.corpus.ray_executor import NAMESPACE
from conftest import FAST, FAULT_OP_TIMEOUT, ROOT
from procs import alive, signal_when

try:
    import ray
except ImportError:       # the ray extra is optional: CI installs it (.[test,triton,ray])
    ray = None

needs_ray = pytest.mark.skipif(ray is None, reason="Ray is not installed (pip install -e "
                                                   "'.[ray]'): the ray executor is not tested")
OP_TIMEOUT = FAULT_OP_TIMEOUT             # as in test_batch (conftest says why 15 s)


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster for the module, with two fake GPUs; its address."""
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False,
             namespace=NAMESPACE)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def batch_args(tmp_path: Path, root: Path, *args: str) -> list[str]:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\nmm: [[16, 16, 16]]\n")
    return ["batch", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes),
            *FAST, "-q", "--out", str(root), *args]


def rows(root: Path) -> dict[str, dict]:
    with open(root / "ops_status.csv", newline="") as handle:
        return {r["op"]: r for r in csv.DictReader(handle)}


def ray_records(root: Path) -> list[dict]:
    """Every op attempt the lanes' actors ran (.workers/dev<d>.ray.tsv)."""
    found = []
    for path in sorted((root / ".workers").glob("*.ray.tsv")):
        with open(path, newline="") as handle:
            found += list(csv.DictReader(handle, delimiter="\t"))
    return found


def wait_for(pattern: str, seconds: float = 120) -> list[str]:
    deadline = time.time() + seconds
    while time.time() < deadline and not glob.glob(pattern):
        time.sleep(0.02)
    found = glob.glob(pattern)
    assert found, f"never appeared: {pattern}"
    return found


def test_without_ray_the_executor_is_one_line_saying_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)          # `import ray` fails as if absent
    result = CliRunner().invoke(main, batch_args(tmp_path, tmp_path / "b", "--ops", "add",
                                                 "--executor", "ray"))
    assert result.exit_code == 2, result.output
    assert "--executor ray needs Ray, which is not installed" in result.output
    assert "pip install 'zlh[ray]'" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "b").exists()


def test_the_device_summary_says_what_ray_adds_per_op(tmp_path):
    """tests/device/ray_summary.py (check_ray.sh): Ray's call time from the lanes' records,
    elapsed per op against local lanes, wall per op."""
    sys.path.insert(0, str(ROOT / "tests" / "device"))
    try:
        from ray_summary import summary
    finally:
        sys.path.remove(str(ROOT / "tests" / "device"))
    for name, elapsed in (("ray", ("2.5", "1.5")), ("local", ("2.0", "1.4"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ops_status.csv").write_text(
            "op,status,elapsed_s\n" + "".join(f"{op},PASS,{e}\n"
                                              for op, e in zip(("add", "mm"), elapsed)))
    (tmp_path / "ray" / ".workers").mkdir()
    (tmp_path / "ray" / ".workers" / "dev0.ray.tsv").write_text(
        "op\tray_s\nadd\t0.0100\nmm\t0.0300\n")
    assert summary(tmp_path / "ray", tmp_path / "local", (10.0, 8.0)) == [
        "ray call time beyond the actor's own: median 0.0200 s, max 0.0300 s over 2 op "
        "attempts",
        "elapsed per op, ray - local: median +0.30 s, mean +0.30 s over 2 ops",
        "wall per op, ray - local: +1.00 s (walls 10 s vs 8 s, 2 ops; the actor's start "
        "included)"]


@needs_ray
def test_the_fault_batch_through_ray_ends_as_through_local_lanes(tmp_path, cluster):
    """The statuses and retries test_batch asserts for local lanes; two lanes (one per fake
    GPU), and no GPU ever ran two ops at once."""
    root = tmp_path / "batch"
    result = CliRunner().invoke(main, batch_args(
        tmp_path, root, "--ops", "add,fault_raise,fault_abort,fault_hang,softmax",
        "--op-timeout", OP_TIMEOUT, "--executor", "ray", "--ray-address", cluster))
    assert result.exit_code == 1, result.output
    got = rows(root)
    assert {op: r["status"] for op, r in got.items()} == {
        "add": PASS, "fault_raise": FAIL, "fault_abort": CRASH, "fault_hang": TIMEOUT,
        "softmax": PASS}
    assert (got["fault_raise"]["notes"], got["fault_abort"]["notes"],
            got["fault_hang"]["notes"]) == ("retry_rc=1->1", "retry_rc=-6->-6", "")
    assert "through Ray" in result.output
    assert json.loads((root / "batch.json").read_text())["executor"] == "ray"
    records = ray_records(root)
    assert len(records) == 7                 # 5 ops, fault_raise and fault_abort twice
    by_gpu: dict[str, list[tuple[float, float]]] = {}
    for r in records:
        by_gpu.setdefault(r["gpus"], []).append((float(r["started"]), float(r["ended"])))
    assert sorted(by_gpu) == ["0", "1"]                 # a lane per fake GPU, both used
    for spans in by_gpu.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans   # never overlap


@needs_ray
def test_an_actor_killed_mid_op_is_a_crash_retried_in_a_new_actor(tmp_path, cluster):
    root = tmp_path / "batch"
    killed = []

    def kill_when_the_op_runs():
        wait_for(str(root / "fault_hang" / "fault_hang_*" / "run.json"))
        for actor in ray.util.list_named_actors(all_namespaces=True):
            if actor["namespace"] == NAMESPACE and actor["name"].startswith("zlh-"):
                ray.kill(ray.get_actor(actor["name"], namespace=NAMESPACE))
                killed.append(actor["name"])
    killer = threading.Thread(target=kill_when_the_op_runs, daemon=True)
    killer.start()
    # the stall rule, not the op timeout, ends attempt 2's hang: its 5 s count from the run's
    # first heartbeat, not from a worker starting cold, so the kill of attempt 1 cannot lose
    # its race to a timeout on a slow host
    result = CliRunner().invoke(main, batch_args(
        tmp_path, root, "--ops", "fault_hang", "--devices", "0", "--op-timeout", "60",
        "--stall-timeout", "5", "--executor", "ray", "--ray-address", cluster))
    killer.join(timeout=5)
    assert len(killed) == 1, result.output
    row = rows(root)["fault_hang"]
    # attempt 1: the actor's death (CRASH, rc -1); attempt 2 in a new actor hangs: TIMEOUT
    assert (row["status"], row["notes"]) == (TIMEOUT, "retry_rc=-1->124"), result.output
    assert (root / "fault_hang" / "run.attempt2.log").exists()
    pids = [json.loads(p.read_text())["pid"]
            for p in sorted((root / "fault_hang").glob("fault_hang_*/run.json"))]
    assert len(pids) == 2 and pids[0] != pids[1] and not alive(pids[0])


@needs_ray
def test_a_driver_killed_then_resumed_loses_and_repeats_nothing(tmp_path, cluster):
    root = tmp_path / "batch"
    driver = subprocess.Popen(
        [sys.executable, "-m", "harness", *batch_args(
            tmp_path, root, "--ops", "add,softmax,mm", "--executor", "ray",
            "--ray-address", cluster)], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    first = Path(wait_for(str(root / "*" / ".complete"))[0]).parent.name
    driver.kill()                                       # SIGKILL: no finalising at all
    driver.wait()
    before = {p.parent.name: p.read_text() for p in root.glob("*/.complete")}
    runs_before = {op: sorted(p.name for p in (root / op).glob(f"{op}_*")) for op in before}
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q"])
    assert result.exit_code == 0, result.output
    got = rows(root)
    assert {op: r["status"] for op, r in got.items()} == {"add": PASS, "softmax": PASS,
                                                        "mm": PASS}
    assert first in before
    for op, marker in before.items():      # finished before the kill: kept, not run again
        assert (root / op / ".complete").read_text() == marker
        assert sorted(p.name for p in (root / op).glob(f"{op}_*")) == runs_before[op]
        assert "resumed" not in got[op]["notes"]
    for op in set(got) - set(before):      # cut short: run again once, in the resume
        assert len(list((root / op).glob(f"{op}_*/run.json"))) == 1
    abandoned = [json.loads(p.read_text())["pid"]
                 for p in root.glob(".abandoned/*/*/run.json")]
    assert not any(alive(pid) for pid in abandoned)    # the killed driver's workers ended
    # Each op measured once: those finished before the kill never again; one cut short once
    # in the resume — and once more only where the kill fell between the actor's reply (its
    # record written) and the op's .complete, so the killed driver's run, set aside, completed.
    measured = [r["op"] for r in ray_records(root)]
    for op in before:
        assert measured.count(op) == 1
    for op in set(got) - set(before):
        finished = [p for p in root.glob(f".abandoned/{op}-*/{op}_*/run.json")
                    if json.loads(p.read_text()).get("status") == "complete"]
        assert 1 <= measured.count(op) <= 1 + len(finished)
    result = CliRunner().invoke(main, ["batch", "--resume", str(root), "-q", "--executor",
                                       "local"])   # told otherwise: its two lanes checked here
    assert result.exit_code == 3 and "--devices 0,1: backend cpu sees devices 0" in \
        result.output, result.output
    assert json.loads((root / "batch.json").read_text())["executor"] == "ray"   # unchanged


@needs_ray
def test_a_driver_sent_sigterm_ends_with_zlhs_line_not_rays_stack(tmp_path, cluster):
    """Joining the cluster installs Ray's own SIGTERM handler (a stack dump, the process
    ended); zlh's stays: one line naming the root and the resume, exit 128 + 15."""
    root = tmp_path / "batch"
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("fault_hang: [[64]]\n")
    rc, err = signal_when(
        ["batch", "--adapter", "builtin", "--backend", "cpu", "--shapes", str(shapes), *FAST,
         "-q", "--out", str(root), "--ops", "fault_hang", "--executor", "ray", "--ray-address",
         cluster], str(root / "fault_hang" / "fault_hang_*" / "run.json"), signal.SIGTERM,
        cwd=ROOT)
    assert rc == 128 + signal.SIGTERM, err
    assert "SIGTERM received" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        f"zlh: terminated (SIGTERM); finished ops are kept under {root}: "
        f"zlh batch --resume {root} runs the others"), err


@needs_ray
def test_a_screen_and_its_campaign_run_in_lane_actors(tmp_path, cluster):
    """A screen's two sides of one lane share its actor; the campaign (--devices left out: the
    cluster's GPUs) runs one `zlh ab` per op (rounds, ABBA order, pinned record as ever) in
    the actor of a lane that is free, every op once."""
    screen, shapes = tmp_path / "screen", tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\nmm: [[16, 16, 16]]\n")     # one small case each
    result = CliRunner().invoke(main, [
        "screen", "--adapter", "builtin", "--backend", "cpu", *FAST, "--ops", "add,mm",
        "--shapes", str(shapes),
        "--switch", "ZLH_BUILTIN_SLOW=0,1", "--root", str(screen), "--executor", "ray",
        "--ray-address", cluster, "--devices", "0"])
    assert result.exit_code == 0, result.output
    records = [r for side in "AB" for r in ray_records(screen / side)]
    assert {r["gpus"] for r in records} in ({"0"}, {"1"})            # A, then B: one GPU,
    assert len({r["actor_pid"] for r in records}) == 1                 # one actor
    result = CliRunner().invoke(main, ["screen", "--resume", str(screen), "--executor",
                                       "local"])   # told otherwise: recorded for the next
    assert result.exit_code == 0, result.output
    assert json.loads((screen / "screen.json").read_text())["batch"]["executor"] == "local"
    root = tmp_path / "campaign"
    result = CliRunner().invoke(main, [
        "campaign", "--screen", str(screen), "--verdict", "NO_TRITON", "--rounds", "1",
        "--root", str(root), "--executor", "ray", "--ray-address", cluster])
    assert result.exit_code == 0, result.output
    plan = json.loads((root / "campaign.json").read_text())
    assert (plan["executor"], plan["devices"]) == ("ray", [0, 1])
    assert json.loads((root / "merged.json").read_text())["ops_reported"] == \
        ["add", "mm"]
    units = sorted(root.glob("card*-*/campaign.ray.tsv"))
    assert sorted(p.parent.name.split("-", 1)[1] for p in units) == ["add", "mm"]
    for unit in units:
        with open(unit, newline="") as handle:
            (record,) = list(csv.DictReader(handle, delimiter="\t"))
        assert record["gpus"] in ("0", "1") and record["rc"] == "0"
    with open(root / "status.tsv", newline="") as handle:       # one round per side and op
        status = list(csv.DictReader(handle, delimiter="\t"))
    assert sorted((r["op"], r["side"]) for r in status) == \
        sorted((op, side) for op in ("add", "mm") for side in "AB")
    # A unit whose report is lost runs again on resume, into a folder of its own — card<d>-mm/
    # on the lane that was free, card<d>-mm-r1/ where that lane already has one; no other op
    # runs again.
    (unit,) = [p.parent for p in units if p.parent.name.endswith("-mm")]
    (unit / "report.json").unlink()
    before = {p.name for p in root.glob("card*")}
    result = CliRunner().invoke(main, ["campaign", "--resume", str(root)])
    assert result.exit_code == 0, result.output
    again = sorted({p.name for p in root.glob("card*")} - before)
    assert len(again) == 1 and re.fullmatch(r"card[01]-mm(-r1)?", again[0]), again
    assert json.loads((root / "merged.json").read_text())["ops_reported"] == \
        ["add", "mm"]


def test_a_resume_keeps_the_recorded_executor_unless_told(tmp_path):
    from harness.cli.corpus_options import resumed_executor
    from harness.corpus.batch import BatchPlan
    from harness.run.options import BenchOptions
    plan = BatchPlan(root=tmp_path, items=[], devices=[0], options=BenchOptions(),
                     executor="ray", ray_address="10.0.0.1:6379")
    assert not resumed_executor(plan, None, None)
    assert (plan.executor, plan.ray_address) == ("ray", "10.0.0.1:6379")
    assert resumed_executor(plan, None, "auto") and plan.ray_address == "auto"
    assert resumed_executor(plan, "local", None)
    assert (plan.executor, plan.ray_address) == ("local", None)
    doc = plan.to_dict()
    assert (doc["executor"], doc["ray_address"]) == ("local", None)
    result = CliRunner().invoke(main, batch_args(tmp_path, tmp_path / "b", "--ops", "add",
                                                 "--ray-address", "auto"))
    assert result.exit_code == 2 and "--ray-address applies to --executor ray only" in \
        result.output, result.output


def test_a_root_the_driver_does_not_see_as_the_actor_does_is_one_line(tmp_path, monkeypatch):
    """The probe of a lane's first unit: a file the actor wrote (here: on another file
    system, so elsewhere) that the driver does not see stops the command with one line."""
    import types

    from harness.common.errors import UsageError
    from harness.corpus import ray_executor
    from harness.corpus.supervisor import Lane
    monkeypatch.setattr(ray_executor, "PROBE_WAIT_S", 0.1)
    other = tmp_path / "the_node's_own_disk"

    class Call:
        def __init__(self, fn):
            self.remote = fn
    actor = types.SimpleNamespace(probe=Call(lambda d, token: str(other / f".ray-probe-{token}")))
    fake = types.SimpleNamespace(get=lambda value, timeout=None: value,
                                 exceptions=types.SimpleNamespace(RayError=RuntimeError))
    holder = ray_executor.ActorHolder(fake, "cuda:3", "cuda")
    holder.info = {"node": "10.0.0.7"}
    runner = ray_executor.RayLane(Lane(label="cuda:3"), holder, None, False)
    with pytest.raises(UsageError, match=r"written by the actor of lane cuda:3 on node "
                                         r"10\.0\.0\.7, is not seen here: the root must be on "
                                         r"a file system every Ray node shares"):
        runner._check_shared(actor, tmp_path / "root")


def test_an_attempt_lost_before_it_wrote_its_log_still_leaves_one(tmp_path):
    """The actor died, or did not answer, before the op's process started (a slow actor
    start on a loaded host): the attempt's log says so, as every attempt keeps a log; a log
    the attempt did write is left as it is."""
    from types import SimpleNamespace

    from harness.corpus.outcome import CRASH_RC, TIMEOUT_RC
    from harness.corpus.ray_executor import RayLane
    lane = SimpleNamespace(lane=SimpleNamespace(label="dev0"))
    log = tmp_path / "run.attempt2.log"
    attempt = RayLane._lost(lane, "timeout", log, time.time(), None)
    assert attempt.rc == TIMEOUT_RC and "did not answer in time" in attempt.message
    assert log.read_text().startswith("zlh: the Ray actor of lane dev0 did not answer in time")
    log.write_text("the op's own output\n")
    died = RayLane._lost(lane, "the Ray actor of lane dev0 died: x", log, time.time(), None)
    assert died.rc == CRASH_RC and log.read_text() == "the op's own output\n"
