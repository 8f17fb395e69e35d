"""One command per root: `zlh ab --root`, `zlh calibrate --root` and `zlh product run` hold
their root as batch, screen and campaign do; a second command on a held root is one line
naming the holder (exit 2), never a second writer."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.ab.preflight import ROOT_IN_USE
from harness.cli import main
from harness.common.errors import UsageError
from harness.common import lock
from harness.product import runner as runner_mod

from product_fakes import fake_doc, write
from conftest import CPU_FAST



def _shapes(tmp_path: Path) -> Path:
    path = tmp_path / "shapes.yaml"
    path.write_text("add: [[64]]\n")
    return path


def _refused(result, root: Path, holder: str) -> None:
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in result.output, result.output
    assert f"{root} is in use by {holder}" in line, line


def test_a_second_ab_on_a_root_in_use_is_refused_naming_the_first(tmp_path):
    """Two `zlh ab --root R` at once: the first holds R while its side A runs (an op that
    never returns); the second — and a calibrate, a replay or a comparison into R — is one
    line naming the first, and writes nothing there."""
    root = tmp_path / "ab"
    shapes = _shapes(tmp_path)
    first = subprocess.Popen(
        [sys.executable, "-m", "harness", "ab", "fault_hang", "--switch", "ZLH_X=0,1",
         "--root", str(root), "--shapes", str(shapes), "--timeout", "120", "-q", *CPU_FAST],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        log = root / "fault_hang" / "r1_A" / "bench.log"
        deadline = time.time() + 120
        while time.time() < deadline and not log.exists() and first.poll() is None:
            time.sleep(0.1)                # the first A/B is under way: its side A runs
        assert log.exists(), "the first A/B never started its run"
        holder = f"zlh ab, pid {first.pid}"
        before = sorted(p.name for p in root.iterdir())
        _refused(CliRunner().invoke(main, ["ab", "add", "--switch", "ZLH_X=0,1", "--root",
                                           str(root), "--shapes", str(shapes), *CPU_FAST]),
                 root, holder)
        _refused(CliRunner().invoke(main, ["calibrate", "add", "--root", str(root),
                                           "--shapes", str(shapes), *CPU_FAST]), root, holder)
        runs = tmp_path / "runs"
        for name in ("a", "b"):         # two stored runs compared into the held root
            (runs / name).mkdir(parents=True)
        _refused(CliRunner().invoke(main, ["ab", str(runs / "a"), str(runs / "b"),
                                           "--root", str(root)]), root, holder)
        assert sorted(p.name for p in root.iterdir()) == before
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


def test_the_lock_is_held_by_the_command_and_let_go_after_it(tmp_path):
    """holding() is re-entrant: a calibration holding its root around the A/B it runs keeps
    it held until the calibration ends; a held root is refused to a child process."""
    root = tmp_path / "r"
    root.mkdir()
    with lock.holding(root, "calibrate", "or give another --root"):
        with lock.holding(root, "ab"):
            pass
        probe = subprocess.run(
            [sys.executable, "-c", "import sys; from harness.common.lock import root_in_use; "
                                   "print(root_in_use(sys.argv[1]))", str(root)],
            capture_output=True, text=True, check=True)
        assert probe.stdout.strip() == f"zlh calibrate, pid {os.getpid()}"
    assert lock.root_in_use(root) is None and str(root.resolve()) not in lock._HELD


HOLDER = ("import sys\n"
          "from pathlib import Path\n"
          "from harness.common.lock import claim_root\n"
          "claim_root(Path(sys.argv[1]), sys.argv[2])\n"
          "print('held', flush=True)\n"
          "sys.stdin.read()\n")


def _held_by_child(root: Path, verb: str) -> subprocess.Popen:
    """Another process holding `root` as `zlh VERB` until its stdin closes (an event, not a
    sleep)."""
    root.mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), verb],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_product_run_root_in_use_is_refused_naming_its_holder(tmp_path, monkeypatch):
    """`zlh product run --resume` (or a fresh run into the same --out) while another run
    holds the root: one line naming it, before the contract is checked."""
    def no_contract(*_):
        raise AssertionError("the contract was checked on a root in use")

    monkeypatch.setattr(runner_mod, "check_contract", no_contract)
    doc = fake_doc(tmp_path)
    manifest = write(tmp_path / "m.json", doc)
    made = CliRunner().invoke(main, ["product", "prepare", str(manifest), "--selection",
                                     "canary", "--out", str(tmp_path / "f")])
    assert made.exit_code == 0, made.output
    frozen = tmp_path / "f" / f"{doc['campaign_id']}--canary"
    out = tmp_path / "out"
    for root, args in ((frozen / "run", ["--resume"]), (out, ["--out", str(out)])):
        child = _held_by_child(root, "product run")
        try:
            result = CliRunner().invoke(main, ["product", "run", str(frozen), *args])
            _refused(result, root, f"zlh product run, pid {child.pid}")
        finally:
            child.stdin.close()
            child.wait()


def test_a_root_taken_between_the_check_and_the_claim_is_refused(tmp_path):
    """Two A/Bs that both passed the check before either held the root: the second's claim
    is the one line (the first holds it), and the root is left to the first."""
    root = tmp_path / "ab"
    child = _held_by_child(root, "ab")
    try:
        with pytest.raises(UsageError) as refused:
            with lock.holding(root, "ab", ROOT_IN_USE):
                raise AssertionError("held a root another process holds")
        assert refused.value.message == (f"{root} is in use by zlh ab, pid {child.pid}; wait "
                                          f"for it to end (or stop it), or give another --root")
        assert (root / lock.LOCK_NAME).exists()        # the holder's file stays
    finally:
        child.stdin.close()
        child.wait()
