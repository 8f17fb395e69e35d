"""The files of a batch root, each written atomically.

    batch.json        schema_version, the plan (ops, devices), the bench options, settings
    ops_status.csv    one row per op, rewritten after every op
    summary.csv       one row per measured case of every finished op
    <op>/.complete    the op's latest outcome (JSON); present = finished: a resume keeps it
                      unless `--retry` names its status
    <op>/run.attempt<k>.log, <op>/<op>_<timestamp>/   the attempts' logs and run directories
                      (k counts on across a retrying resume: nothing earlier is removed)
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from ..common.documents import loads_json
from ..common.errors import UsageError, one_line
from ..common.files import (atomic_write_json, atomic_write_text, check_output_file, csv_lines,
                            csv_text, read_failure, read_json_object, read_text)
from ..common.schema import check_readable
from ..compile.autotune import load_record_dir
from ..store.reader import (COMPLETE as RUN_COMPLETE, describe_status, load_info, load_run,
                            load_run_or_none)
from ..store.rundir import op_folder
from .outcome import Outcome

SCHEMA_VERSION = 1
BATCH_JSON = "batch.json"
COMPLETE = ".complete"
ABANDONED = ".abandoned"         # attempts of an op a killed batch left unfinished
# backend, device and timer in both tables: rows timed with CUDA graphs and rows timed
# with events (an op's fallback), or of two backends, never mix unseen.
OPS_STATUS_COLUMNS = ("repo", "op", "op_file", "backend", "device", "timer", "status",
                      "attempts", "rc", "elapsed_s", "rows_total", "rows_success", "notes",
                      "run_dir", "reason")
SUMMARY_COLUMNS = ("op", "backend", "device", "timer", "dtype", "shape", "torch_ms",
                   "gems_ms", "speedup", "status", "op_status")


def op_dir(root: Path, op: str) -> Path:
    return op_folder(root, op)


def next_attempt(root: Path, op: str) -> int:
    """The number the op's next attempt log takes: one past the highest `run.attempt<k>.log`
    in its folder (1 for a new op), so a retried op keeps its earlier attempts' logs."""
    numbers = [int(p.name[len("run.attempt"):-len(".log")])
               for p in op_dir(root, op).glob("run.attempt*.log")
               if p.name[len("run.attempt"):-len(".log")].isdigit()]
    return max(numbers, default=0) + 1


def relative_run_dir(root: Path, run_dir: Path | None) -> str:
    """A run directory as the batch files name it: relative to the batch root, so a root
    that is moved or copied elsewhere (another machine, a resume from another directory)
    still finds its runs; "-" for none."""
    if run_dir is None:
        return "-"
    try:
        return str(Path(run_dir).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(Path(run_dir).resolve())


def replay_source(root: Path, op: str, backend: str) -> Path | str:
    """`zlh batch --replay ROOT`: the record run `op` finished with in the batch at `root`,
    or why there is none to replay (a line for the op's SKIP): not finished there, no run
    directory, a run that replayed itself, a record that was never completed or is damaged,
    another backend."""
    where = f"--replay {root}"
    try:
        done = read_complete(root, op)
        if done is None:
            return f"no record to replay: {op} did not finish in {where}"
        outcome = done[0]
        if outcome.run_dir is None or not outcome.run_dir.is_dir():
            return (f"no record to replay: {op} ended {outcome.status} in {where} without a "
                    f"run directory")
        load_record_dir(outcome.run_dir, backend)
        record = load_info(outcome.run_dir)          # its status: run.json is enough
        if record.status != RUN_COMPLETE:      # what `zlh bench --replay` would refuse
            return f"no record to replay: {op} in {where}: {describe_status(record)}"
        return outcome.run_dir
    except UsageError as exc:
        return f"no record to replay: {exc.message}"
    except Exception as exc:  # noqa: BLE001 - a damaged file of the recorded batch
        return f"no record to replay: {op} in {where} cannot be read ({one_line(exc, 200)})"


def write_complete(root: Path, op: str, outcome: Outcome, device: int) -> None:
    doc = outcome.to_dict()
    if outcome.run_dir is not None:
        doc["run_dir"] = relative_run_dir(root, outcome.run_dir)
    atomic_write_json(op_dir(root, op) / COMPLETE, {"schema_version": SCHEMA_VERSION, "op": op,
                                                    "device": device, **doc})


def drop_complete(root: Path, op: str) -> None:
    """The op is no longer finished on disk (its logs and run directories stay): a screen's B
    whose A runs again must not be paired, by a later resume, with A's new run."""
    (op_dir(root, op) / COMPLETE).unlink(missing_ok=True)


def read_complete(root: Path, op: str) -> tuple[Outcome, int] | None:
    path = op_dir(root, op) / COMPLETE
    if op_dir(root, op).exists() and not op_dir(root, op).is_dir():
        raise UsageError(f"{op_dir(root, op)} is a file where the folder of op {op} belongs; "
                         f"move it away to run {op} again")
    try:
        data = check_readable(loads_json(read_text(path)), "")
        if not isinstance(data, dict):
            raise ValueError(f"a JSON object was expected, found {type(data).__name__}")
        if data.get("op", op) != op:           # another op's outcome copied or moved here
            raise ValueError(f"field op: expected {op!r}, got {data.get('op')!r:.60}")
        outcome = Outcome.from_dict(data, "")
        if outcome.run_dir is not None and not outcome.run_dir.is_absolute():
            outcome.run_dir = Path(root) / outcome.run_dir
        device = data.get("device", 0)
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise ValueError(f"field device: expected a device index, got {device!r}")
        return outcome, device
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, UsageError) as exc:
        why = exc.message.removeprefix(": ") if isinstance(exc, UsageError) else \
            read_failure(exc)
        raise UsageError(f"{path} is damaged ({why}); remove it to run {op} again") from None


def run_problem(op: str, outcome: Outcome) -> str | None:
    """Why the run directory a finished op's outcome names cannot give its measured rows
    (gone, damaged, another op's run), or None. An outcome without rows is not checked."""
    if outcome.run_dir is None or not outcome.rows_total:
        return None
    try:
        run = load_run(outcome.run_dir)
    except UsageError as exc:
        return "is missing" if not Path(outcome.run_dir).exists() else \
            f"cannot be read ({one_line(exc.message, 160)})"
    if run.op != op:
        return f"is a run of {run.op}, not of {op}"
    if run.lost or len(run.rows) < outcome.rows_total:
        return f"lacks measured rows ({run.lost or f'{len(run.rows)} of {outcome.rows_total}'})"
    return None


def set_aside(root: Path, op: str) -> Path | None:
    """An op directory left by a killed batch: moved under .abandoned/, never mixed with the
    new attempt and never deleted (it may hold cases measured before the kill)."""
    source = op_dir(root, op)
    if not source.exists():
        return None
    target_root = Path(root) / ABANDONED
    check_folder_place(target_root, "a resume keeps the attempts of an unfinished op there; "
                                    "move it away, then resume")
    target_root.mkdir(exist_ok=True)
    target = target_root / f"{source.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    n = 1
    while target.exists():
        n += 1
        target = target_root / f"{source.name}-{time.strftime('%Y%m%d-%H%M%S')}-{n}"
    shutil.move(str(source), str(target))
    return target


def write_batch_json(root: Path, doc: dict) -> None:
    atomic_write_json(Path(root) / BATCH_JSON, {"schema_version": SCHEMA_VERSION, **doc})


def update_batch_json(root: Path, **fields) -> None:
    """batch.json with `fields` set (the rest as it was), written at this schema version."""
    doc = read_batch_json(root)
    doc.pop("schema_version", None)
    write_batch_json(root, {**doc, **fields})


def read_batch_json(root: Path) -> dict:
    path = Path(root) / BATCH_JSON
    doc = read_json_object(path, f"{root} is not a batch root (no {BATCH_JSON})")
    if not isinstance(doc.get("ops"), list):
        raise UsageError(f"{path} is not a batch description (no list of ops)")
    return doc


def check_tables(root: Path, ops=()) -> None:
    """The tables a resumed batch rewrites, the folder it moves an unfinished op's attempts
    to, and the folders of its `ops`: a folder, a device or a file in their place, or a
    symbolic link (a resume never follows one out of the root), is refused now, in one
    line, rather than after the first op (as a failed write, exit 1) or after files
    outside the root were moved or written."""
    for name in ("ops_status.csv", "summary.csv"):
        check_output_file(Path(root) / name, "batch table")
    check_folder_place(Path(root) / ABANDONED, "a resume keeps the attempts of an unfinished "
                                               "op there; move it away, then resume")
    for op in ops:
        folder = op_dir(root, op)
        if folder.is_symlink():
            check_folder_place(folder, f"the folder of op {op} belongs there; remove the link, "
                                       f"then resume")


def check_folder_place(folder: Path, purpose: str) -> None:
    """UsageError `FOLDER is not a folder: PURPOSE` when a file, a device or a link stands
    where a resumed corpus command keeps a folder: a link (even to a folder) is refused, as
    what it points to lies outside the root's own files."""
    if folder.is_symlink():
        raise UsageError(f"{folder} is a symbolic link, not a folder of the root (zlh does not "
                         f"follow links out of a root; what it points to is left alone): "
                         f"{purpose}")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is not a folder: {purpose}")


def op_summary_rows(op: str, outcome: Outcome, backend: str, device: int
                 ) -> tuple[str, list[dict]]:
    """(the timer the op's run used, its summary.csv rows), from its run.json and results:
    an op that fell back to event timing says so in both tables."""
    run = load_run_or_none(outcome.run_dir)
    caliber = run.caliber if run is not None else None
    timer = caliber.timer if caliber is not None else "-"
    common = {"backend": backend, "device": device, "timer": timer}
    return timer, [{"op": op, **common, "dtype": r.dtype, "shape": r.shape_detail,
                    "torch_ms": r.torch_ms, "gems_ms": r.gems_ms, "speedup": r.speedup,
                    "status": r.status, "op_status": outcome.status}
                   for r in (run.rows if run is not None else [])]


def status_row(root: Path, op: str, outcome: Outcome, where: dict, backend: str, device: int,
               timer: str) -> dict:
    """One ops_status.csv row (`where`: the op's repo and file from the inventory)."""
    return {"repo": where.get("repo", "-"), "op": op, "op_file": where.get("file", "-"),
            "backend": backend, "device": device, "timer": timer, "status": outcome.status,
            "attempts": outcome.attempt, "rc": outcome.rc,
            "elapsed_s": round(outcome.elapsed_s, 3), "rows_total": outcome.rows_total,
            "rows_success": outcome.rows_success, "notes": " ".join(outcome.notes),
            "run_dir": relative_run_dir(root, outcome.run_dir), "reason": outcome.reason}


def summary_lines(rows: list[dict]) -> str:
    """An op's summary.csv lines, rendered once (a batch rewrites the table after every op:
    re-rendering every op's rows each time grew with the square of the ops)."""
    return csv_lines(SUMMARY_COLUMNS, rows)


def write_tables(root: Path, status_rows: list[dict], summary: str) -> None:
    """ops_status.csv from its rows, summary.csv from the ops' `summary_lines` joined."""
    atomic_write_text(Path(root) / "ops_status.csv", csv_text(OPS_STATUS_COLUMNS, status_rows))
    atomic_write_text(Path(root) / "summary.csv", csv_text(SUMMARY_COLUMNS, []) + summary)


def refuse_corpus_root(root, whose: str) -> None:
    """UsageError when `--root` names a batch, screen or campaign root (or one op's folder
    in it): `whose` runs (an A/B's, a calibration's) would mix with its ops."""
    if root is not None and corpus_root_hint(root, "an A/B root"):
        raise UsageError(f"--root {root} is the root of a zlh batch, screen or campaign (or "
                         f"one op's folder in it): {whose} runs would mix with its ops; give "
                         f"a new --root")


def corpus_root_hint(path: str | Path, reader: str) -> str | None:
    """What a corpus root (or a batch op's folder) given to `zlh report` or `zlh show`
    holds instead, and where to look; None for any other path."""
    root = Path(path)
    runs = sorted(p.name for p in root.glob("*_*") if (p / "run.json").is_file()) \
        if root.is_dir() else []
    if (root / "campaign.json").is_file():
        return f"{root} is a campaign root: `zlh report {root}` prints its merged report"
    if (root / "screen.json").is_file():
        return (f"{root} is a screen root, not {reader}: its verdicts are in screen.tsv; each "
                f"side's runs are under {root}/A and {root}/B (zlh show {root}/A/<op>/<run>)")
    if (root / BATCH_JSON).is_file():
        return (f"{root} is a batch root, not {reader}: see ops_status.csv and summary.csv; "
                f"one op's run: zlh show {root}/<op>/<op>_<timestamp>")
    if (root / COMPLETE).is_file() or any(root.glob("run.attempt*.log")):
        newest = f" (newest: zlh show {root / runs[-1]})" if runs else ""
        return f"{root} is the folder of one op of a batch, not {reader}{newest}"
    return None
