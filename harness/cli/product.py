"""`zlh product prepare | run | reaccount`: pre-registered product campaigns (harness/product).

Not `zlh campaign`, which runs rounds on a screen's ops over the GPUs of a host; its old
spelling for these commands, `zlh campaign prepare|run|reaccount`, is a usage error that points
here (cli/campaign.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..common.errors import UsageError
from ..common.files import check_output_dir
from ..common.progress import Meter
from ..product import (CAMPAIGN_RECEIPT, SELECTIONS, STATUS_CSV, ManifestError, build_plan,
                       check_canary_receipt, corpus_adapter, cross_check, freeze_plan,
                       frozen_name, load_frozen, load_manifest, plan_text, reaccount_run,
                       run_campaign)
from .group import main
from .common import echo_err, handles_errors, keeps_on_interrupt, not_empty


@main.group("product")
def product():
    """Pre-registered product campaigns: a claim about a compiler (or library) change, tested
    on a fixed list of workloads under a protocol written down before anything runs.

    A manifest (JSON) names the sources at their commits, the one device, the cells (a
    baseline, controls and the candidate, each an environment), the timer, the thresholds and
    the workloads. `prepare` checks it and freezes the plan; `run` checks the contract (hashes,
    commits, imports, an idle device), then runs each task serially on the device and gives it
    a class (G gain, C changed, B no code change, R regression, K correctness broken, X
    excluded), every claim backed by a receipt that hashes what produced it; `reaccount`
    classifies a sealed run again with another launch floor. The canary workloads run first:
    `--selection all` needs their passing campaign receipt.

    Not `zlh campaign`, which runs rounds on a screen's ops over the GPUs of this host."""


@product.command("prepare")
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--selection", type=click.Choice(SELECTIONS), required=True,
              help="canary: the canaries in canary order; all: every workload (needs a "
                   "passing canary receipt).")
@click.option("--canary-receipt", default=None, metavar="R", type=click.Path(),
              callback=not_empty,
              help="With --selection all: campaign-receipt.json of this manifest's canary run.")
@click.option("--out", default="runs", show_default=True, metavar="DIR",
              type=click.Path(), callback=not_empty,
              help="Where <campaign_id>--<selection>/ is frozen.")
@click.option("--dry-run", is_flag=True, help="Print the plan and budget; write nothing.")
@handles_errors
def prepare(manifest, selection, canary_receipt, out, dry_run):
    """Validate MANIFEST, check it against the corpus and freeze the plan.

    Exit status: 0 frozen (or planned, with --dry-run), 2 a violation (one line each)."""
    doc = load_manifest(manifest)
    if not dry_run:
        check_output_dir(out, "--out")
    problems, resolved = cross_check(doc, corpus_adapter(doc))
    if problems:
        raise ManifestError(f"manifest {manifest}", problems)
    try:
        canary_sha = check_canary_receipt(doc, selection, canary_receipt)
    except UsageError:
        if not dry_run or canary_receipt:
            raise
        canary_sha, refusal = None, sys.exc_info()[1]   # the plan first, then why not
    else:
        refusal = None
    matrix, budget = build_plan(doc, selection, resolved, canary_sha)
    click.echo(plan_text(matrix, budget))
    if dry_run:                 # a preview: what `prepare` would still refuse, said
        target = Path(out).resolve() / frozen_name(doc, selection)
        for why in ([refusal.message] if refusal is not None else []) + (
                [f"{target} exists: a frozen plan is never rewritten"] if target.exists()
                else []):
            echo_err(f"note: not frozen as it stands: {why}")
        return
    target = freeze_plan(doc, selection, Path(out), matrix, budget)
    click.echo(f"frozen: {target}")
    click.echo(f"next: zlh product run {target}")


@product.command("run")
@click.argument("frozen_dir", type=click.Path(file_okay=False))
@click.option("--out", default=None, metavar="RUN_ROOT", type=click.Path(), callback=not_empty,
              help="Where the run goes. Default: FROZEN_DIR/run.")
@click.option("--resume", is_flag=True,
              help="Continue a run: tasks with a terminal receipt are kept.")
@handles_errors
def run(frozen_dir, out, resume):
    """Run a frozen plan: the contract, then every task on the one device, serially.

    Exit status: 0 terminal, 1 the canary gate failed, 2 bad input, 3 PREFLIGHT_FAILED."""
    root = Path(out) if out else Path(frozen_dir) / "run"
    again = f"zlh product run {frozen_dir}{f' --out {out}' if out else ''} --resume"
    with Meter("product", total=_task_count(frozen_dir)) as meter:
        def task_done(line: str) -> None:
            meter.write(click.echo, line)
            if line.startswith("CAMPAIGN_TASK "):
                meter.advance()
        receipt = keeps_on_interrupt(root, again, lambda: run_campaign(
            frozen_dir, out, resume, task_done,
            progress=lambda line: meter.write(echo_err, line)), kept="tasks with a receipt")
    root = Path(receipt["run_root"])
    counts = ", ".join(f"{c} {n}" for c, n in receipt["counts"].items() if n)
    click.echo(f"campaign {receipt['campaign_id']} --{receipt['selection']}: "
               f"{receipt['status']}, {receipt['task_count']} task(s): {counts}")
    click.echo(f"{root / STATUS_CSV}\n{root / CAMPAIGN_RECEIPT}")
    gate = receipt.get("canary_gate")
    if gate is not None:
        click.echo("canary gate: " + ("PASS" if gate["pass"] else
                                      "FAIL: " + "; ".join(gate["failures"])))
        if not gate["pass"]:
            sys.exit(1)


@product.command("reaccount")
@click.argument("run_root", type=click.Path(file_okay=False))
@click.option("--out", required=True, metavar="DIR", callback=not_empty,
              type=click.Path(), help="Where the re-account goes (outside "
                                                          "RUN_ROOT).")
@click.option("--measured-launch-floor", "floor", type=click.IntRange(min=0), default=None,
              help="Count a measured variant only above this many launches. Default: the "
                   "floor the run was sealed with.")
@click.option("--force", is_flag=True, help="Replace an earlier re-account in --out.")
@handles_errors
def reaccount_cmd(run_root, out, floor, force):
    """Classify a sealed run again from its receipts with another launch floor. An earlier
    re-account in --out is refused unless --force."""
    result = reaccount_run(run_root, out, floor, force)
    for row in result["tasks"]:
        if row["changed"]:
            click.echo(f"{row['task_id']} {row['sealed_class']} -> {row['new_class']}: "
                       f"{row['new_reason']}")
    click.echo(f"reaccount at floor {result['measured_launch_floor']}: {result['task_count']} "
               f"task(s), {len(result['changed'])} changed; {Path(out) / 'reaccount-matrix.csv'}")


def _task_count(frozen_dir: str) -> int | None:
    """How many tasks the frozen plan holds, for the progress bar (None when it cannot be
    read: run_campaign then says why, in its own words)."""
    try:
        return len(load_frozen(frozen_dir).matrix["tasks"])
    except (UsageError, OSError, KeyError, TypeError, ValueError):
        return None
