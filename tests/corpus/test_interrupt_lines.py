"""Ctrl-C, SIGTERM or SIGHUP of a corpus command (batch, screen, product run) ends with one
line naming the root where what finished is kept and the command that goes on — not "cases
are in the run directory", which a corpus root has many of."""
from __future__ import annotations

import signal

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cli import product as product_cli
from harness.common.errors import Terminated
from procs import signal_when

FAST = ["--adapter", "builtin", "--backend", "cpu", "--warmup-ms", "1", "--min-samples", "3",
        "--min-time-ms", "0", "--max-time-ms", "20"]


@pytest.mark.e2e
@pytest.mark.parametrize("signum, code, word", [(signal.SIGTERM, 128 + signal.SIGTERM,
                                                 "terminated (SIGTERM)"),
                                                (signal.SIGINT, 130, "interrupted")])
def test_a_signalled_batch_names_its_root_and_the_resume_command(tmp_path, signum, code, word):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("fault_hang: [[64]]\n")
    root = tmp_path / "batch"
    rc, err = signal_when(["batch", "--ops", "fault_hang", "--shapes", str(shapes),
                           "--out", str(root), "-q", *FAST],
                          str(root / "fault_hang" / "fault_hang_*" / "run.json"), signum)
    assert rc == code, err
    line = err.strip().splitlines()[-1]
    assert line == (f"zlh: {word}; finished ops are kept under {root}: "
                    f"zlh batch --resume {root} runs the others"), err
    assert "run directory" not in err and "Traceback" not in err


@pytest.mark.parametrize("raised, code, word", [(KeyboardInterrupt(), 130, "interrupted"),
                                                (Terminated(signal.SIGTERM), 143,
                                                 "terminated (SIGTERM)")])
def test_a_signalled_product_run_names_its_root_and_the_resume_command(
        tmp_path, monkeypatch, raised, code, word):
    def run_campaign(*args, **kwargs):       # after its first file, as a real run
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "manifest.json").write_text("{}")
        raise raised
    monkeypatch.setattr(product_cli, "run_campaign", run_campaign)
    frozen = tmp_path / "frozen"
    result = CliRunner().invoke(main, ["product", "run", str(frozen), "--out",
                                       str(tmp_path / "out")])
    assert result.exit_code == code, result.output
    assert result.stderr == (f"zlh: {word}; tasks with a receipt are kept under "
                             f"{tmp_path / 'out'}: zlh product run {frozen} --out "
                             f"{tmp_path / 'out'} --resume runs the others\n")
