"""A shard of a parallel sweep measures every N-th case from the K-th, and names each by the
occurrence it has among all the op's cases (a shape listed twice is occurrence 0 and 1
whichever shard measures it), so the shards' records and rows key alike."""
from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from conftest import CPU_FAST


def test_a_shard_names_a_repeated_shape_by_its_place_among_all_cases(tmp_path):
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64], [64], [128]]\n")
    keys = {}
    for shard in ("0/2", "1/2"):
        out = tmp_path / shard.replace("/", "of")
        result = CliRunner().invoke(main, ["bench", "add", *CPU_FAST, "--shapes", str(shapes),
                                           "--case-shard", shard, "--out", str(out), "-q"])
        assert result.exit_code == 0, result.output
        (results,) = out.glob("add_*/results.jsonl")
        keys[shard] = [(row["shape_detail"], row["occurrence"]) for row in
                       map(json.loads, results.read_text().splitlines())]
    assert keys == {"0/2": [("64", 0), ("128", 0)], "1/2": [("64", 1)]}
