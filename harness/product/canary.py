"""Which canary receipt authorises `--selection all`: the campaign receipt of a terminal canary
run of this very manifest (same campaign_id, same manifest sha256) whose gate passed."""
from __future__ import annotations


from ..common.documents import loads_json
from ..common.errors import UsageError
from ..common.files import read_text
from ..common.schema import check_readable
from .manifest import Manifest, ManifestError
from .receipts import SCHEMA_VERSION, TERMINAL, sha256_file


def canary_problems(manifest: Manifest, receipt: dict) -> list[str]:
    """Why this receipt does not authorise the full campaign ([] when it does)."""
    problems = []
    expect = (("schema_version", SCHEMA_VERSION), ("kind", "campaign"),
              ("campaign_id", manifest.campaign_id), ("selection", "canary"),
              ("status", TERMINAL), ("manifest_sha256", manifest.sha256))
    for key, wanted in expect:
        if receipt.get(key) != wanted:
            problems.append(f"{key} is {receipt.get(key)!r}, must be {wanted!r}")
    gate = receipt.get("canary_gate")
    if not isinstance(gate, dict) or gate.get("pass") is not True:
        why = "; ".join(gate.get("failures") or ()) if isinstance(gate, dict) else "no gate"
        problems.append(f"the canary gate did not pass ({why or 'no reason recorded'})")
    return problems


def check_canary_receipt(manifest: Manifest, selection: str, path: str | None) -> str | None:
    """The sha256 of the authorising receipt (None for the canary selection); each rule the
    receipt breaks is a line of the ManifestError (exit 2)."""
    if selection == "canary":
        if path:
            raise UsageError("--canary-receipt is for --selection all only")
        return None
    if not path:
        raise UsageError("--selection all needs --canary-receipt R: the campaign receipt of "
                         "a terminal canary run of this manifest whose gate passed")
    try:
        receipt = loads_json(read_text(path))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--canary-receipt {path}: cannot be read ({exc})") from None
    if not isinstance(receipt, dict):
        raise UsageError(f"--canary-receipt {path}: not a JSON object")
    check_readable(receipt, f"--canary-receipt {path}")
    problems = canary_problems(manifest, receipt)
    if problems:
        raise ManifestError(f"--canary-receipt {path}", problems)
    return sha256_file(path)
