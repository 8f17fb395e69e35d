"""The example manifest that ships (recipes/product_manifest.example.json) is one
`zlh product prepare --dry-run` accepts, once its placeholder paths name a FlagGems checkout
(here the fake one of the tests)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from product_fakes import FAKE_FLAGGEMS, ROOT

EXAMPLE = ROOT / "recipes" / "product_manifest.example.json"


def filled_in(tmp_path):
    """(the example manifest with its paths naming the fake FlagGems checkout, its file)."""
    doc = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["sources"]["library"].update(path=str(FAKE_FLAGGEMS),
                                     import_from=str(FAKE_FLAGGEMS / "src"))
    manifest = tmp_path / "campaign.json"
    manifest.write_text(json.dumps(doc))
    return doc, manifest


def test_the_example_manifest_prepares_against_a_flaggems_checkout(tmp_path):
    doc, manifest = filled_in(tmp_path)
    for selection in ("canary", "all"):
        result = CliRunner().invoke(main, ["product", "prepare", str(manifest), "--selection",
                                           selection, "--dry-run"])
        assert result.exit_code == 0, result.output
        assert f"campaign {doc['campaign_id']} --{selection}" in result.output
    assert not (tmp_path / "runs").exists()                   # a dry run writes nothing


def test_the_example_as_shipped_names_what_to_fill_in():
    result = CliRunner().invoke(main, ["product", "prepare", str(EXAMPLE), "--selection",
                                       "canary", "--dry-run"])
    assert result.exit_code in (2, 3) and "/path/to/FlagGems" in result.output


def test_a_dry_run_says_what_prepare_would_still_refuse(tmp_path):
    _, manifest = filled_in(tmp_path)
    result = CliRunner().invoke(main, ["product", "prepare", str(manifest), "--selection", "all",
                                       "--dry-run", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert "note: not frozen as it stands: --selection all needs --canary-receipt" \
        in result.stderr
