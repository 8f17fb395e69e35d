"""SIGHUP (the terminal closed) ends a zlh command as SIGTERM does: the run directory is
finalised (run.json `interrupted`, reason SIGHUP, results written) and the exit status is
128 + 1; a SIGHUP the command was started to ignore (`nohup`) stays ignored."""
from __future__ import annotations

import json
import signal

from harness.common.process import install_terminate_handlers
from conftest import CPU_FAST
from procs import signal_when



def test_sighup_finalises_a_running_bench(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("add: [[64]]\n")
    out = tmp_path / "runs"
    rc, err = signal_when(["bench", "add", "fault_hang", "--shapes", str(shapes), "--out",
                           str(out), "-q", *CPU_FAST], str(out / "fault_hang_*" / "run.json"),
                          signal.SIGHUP)
    assert rc == 128 + signal.SIGHUP, err
    assert "terminated (SIGHUP)" in err and "Traceback" not in err, err
    (done,) = out.glob("add_*")
    (hung,) = out.glob("fault_hang_*")
    assert json.loads((done / "run.json").read_text())["status"] == "complete"
    info = json.loads((hung / "run.json").read_text())
    assert info["status"] == "interrupted" and info["reason"] == "SIGHUP", info
    assert (hung / "results.jsonl").is_file() and (hung / "results.csv").is_file()
    assert (done / "results.jsonl").read_text().count("\n") == 1


def test_a_sighup_ignored_at_start_stays_ignored():
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)          # as `nohup zlh …` starts it
        install_terminate_handlers(lambda signum: None)
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        assert callable(signal.getsignal(signal.SIGTERM))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
