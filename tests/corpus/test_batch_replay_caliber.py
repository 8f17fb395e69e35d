"""`zlh batch --replay ROOT` measured otherwise than ROOT (another seed, inputs mode, budget):
its runs could not be compared with ROOT's, so the batch is refused before it runs."""
from __future__ import annotations

from click.testing import CliRunner

from conftest import CPU_FAST
from harness.cli import main
from harness.common.errors import EXIT_CALIBER


def test_a_replay_batch_told_another_caliber_option_is_refused_before_it_runs(tmp_path,
                                                                             corpus_batch):
    shapes = corpus_batch.parent / "shapes.yaml"
    out = tmp_path / "again"
    result = CliRunner().invoke(main, ["batch", *map(str, CPU_FAST), "--shapes", str(shapes),
                                       "--ops", "add", "--seed", "7", "--replay",
                                       str(corpus_batch), "--out", str(out), "-q"])
    assert result.exit_code == EXIT_CALIBER, result.output
    assert f"--replay {corpus_batch}: its ops were measured with --seed" in result.output
    assert "this batch would measure with 7" in result.output
    assert not out.exists()
