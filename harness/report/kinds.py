"""Which kind of root a folder is, read from the files each command leaves at its top."""
from __future__ import annotations

from pathlib import Path

from ..common.errors import UsageError
from ..common.files import check_path_text, not_a_folder

AB, CALIBRATE, BATCH, SCREEN, CAMPAIGN, PRODUCT = (
    "ab", "calibrate", "batch", "screen", "campaign", "product")
KINDS = (AB, CALIBRATE, BATCH, SCREEN, CAMPAIGN, PRODUCT)

# The file that names each kind, most specific first: a calibrate root is an A/B root with
# calibration.json beside its report.json; a campaign root also holds a merged report.json.
_MARKS = ((PRODUCT, ("contract-receipt.json", "campaign-receipt.json")),
          (CAMPAIGN, ("campaign.json",)),
          (SCREEN, ("screen.json",)),
          (CALIBRATE, ("calibration.json",)),
          (BATCH, ("batch.json",)),
          (AB, ("report.json", "status.tsv", "plan.json")))


def detect(root) -> str:
    """The kind of `root`, or UsageError naming what it holds instead."""
    check_path_text(root, "ROOT")
    path = Path(root)
    why = not_a_folder(path)
    if why is not None:
        raise UsageError(f"{root}: {why} (give a root zlh ab, calibrate, batch, screen, "
                         f"campaign or product run wrote)")
    for kind, names in _MARKS:
        if any((path / name).is_file() for name in names):
            return kind
    if (path / "run.json").is_file():
        raise UsageError(f"{root} is a run directory, not an A/B root: `zlh show {root}` "
                         f"prints it")
    if (path / "run" / "contract-receipt.json").is_file():
        raise UsageError(f"{root} is a frozen product campaign: its run is {path / 'run'}; "
                         f"give that")
    if (path / ".complete").is_file() or any(path.glob("run.attempt*.log")):
        raise UsageError(f"{root} is the folder of one op of a batch, not a root: give the "
                         f"batch root above it")
    raise UsageError(f"{root}: no report.json, screen.json, batch.json, campaign.json or "
                     f"campaign receipt: not a root zlh wrote (run `zlh ab` with this root "
                     f"first)")
