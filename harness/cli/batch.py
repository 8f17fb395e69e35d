"""`zlh batch`."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..common import errors
from ..common.files import check_output_dir
from ..common.progress import Meter
from ..corpus.batch import BatchPlan, run_batch
from ..corpus.environment import check_resume_env, environment_switches, record_env_change
from ..corpus.check import (check_plan, check_replay_plan, check_replay_root, check_root,
                             corpus_adapter)
from ..corpus.files import BATCH_JSON, check_tables, read_batch_json, update_batch_json
from ..common.lock import claim_root, forget_if_empty, only_lock, release_root
from ..corpus.outcome import parse_retry
from ..corpus.selection import dismiss_list, select
from ..corpus.sharding import parse_shard, refuse_merged, ops_phrase
from ..corpus.standby import record_overlap
from ..run.options import UNHOOKED_REPLAY
from .devices import parse_devices
from .corpus_options import (corpus_lanes, env_change_option, executor_options,
                             lane_options, resumed_executor, selection_options, shard_option)
from .group import main
from .overlap import overlap_options, overlap_width_for, resumed_overlap
from .common import (bench_options, echo_err, handles_errors, keeps_on_interrupt,
                     not_empty, options_from, refuse_beside, refuse_vllm_beside)


def corpus_inventory(adapter) -> dict:
    """op -> {"repo", "file"} of every benchmark function the adapter knows (batch.json)."""
    return {r["op"]: {"repo": r.get("repo", adapter.repo_of(r["op"])), "file": r.get("file", "-")}
            for r in adapter.describe_ops(include_hidden=True)}


@main.command()
@selection_options
@lane_options(unit="an op", timeout_ends="status TIMEOUT, its worker killed",
              fresh_help="Run every op in its own zlh bench process instead of "
                         "reused workers.")
@overlap_options
@click.option("--out", default=None, metavar="DIR", type=click.Path(), callback=not_empty,
              help="Batch root. Default: runs/batch_<timestamp>.")
@click.option("--resume", default=None, metavar="BATCH_DIR", type=click.Path(),
              callback=not_empty,
              help="Continue a killed batch: finished ops are kept, the others run again.")
@click.option("--retry", default=None, metavar="FAIL,TIMEOUT,…", callback=not_empty,
              help="With --resume: also run again the finished ops with these statuses "
                   "(FAIL, TIMEOUT, CRASH, POISONED, SKIP), e.g. after fixing the "
                   "environment; their earlier attempts are kept. Default: none.")
@click.option("--replay", "replay_root", default=None, metavar="BATCH_DIR", type=click.Path(),
              callback=not_empty,
              help="Pin every op's tuned configs to what the batch at BATCH_DIR recorded for "
                   "it (e.g. the same corpus under another compiler build). An op without a "
                   "record there is SKIP, note no_record.")
@env_change_option("batch")
@shard_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@executor_options
@bench_options
@click.pass_context
@handles_errors
def batch(ctx, all_ops, ops, ops_file, include_skipped, dismiss, no_dismiss, vllm_dir, devices,
          op_timeout, stall_timeout, retries, fresh_process, overlap, overlap_width, out, resume,
          retry, replay_root, allow_env_change, shard_text, quiet, executor, ray_address,
          **params):
    """Run many ops, each in its own run directory: isolated, resumable, over devices.

    Exit status: 0 every op PASS or SKIP, 1 some op FAIL/TIMEOUT/CRASH/POISONED (the batch
    completed), 2 bad input, 3 preflight failed.
    """
    meter = Meter("batch", show=False if quiet else None)
    statuses = retry_statuses(retry, resume)
    if resume is not None:
        if all_ops or ops or ops_file:
            raise errors.UsageError("--resume BATCH_DIR takes its ops from the batch; name none")
        refuse_beside(ctx, "resume", allowed=("quiet", "vllm_dir", "retry", "allow_env_change",
                                              "overlap", "overlap_width", "executor",
                                              "ray_address"))
        sys.exit(_resume(Path(resume), vllm_dir, allow_env_change, (overlap, overlap_width),
                         executor, ray_address, meter, statuses))
    if allow_env_change:
        raise errors.UsageError("--allow-env-change applies to --resume only")
    shard = parse_shard(shard_text)
    options = options_from(params)
    if replay_root and not options.autotune_hooks:
        raise errors.UsageError("zlh batch --replay: " + UNHOOKED_REPLAY)
    adapter = corpus_adapter(options, vllm_dir)
    refuse_vllm_beside(ctx, adapter)
    dismissed = dismiss_list(dismiss, all_ops, no_dismiss)
    whole, left_out = select(adapter, all_ops, ops, ops_file, include_skipped, dismissed,
                             warn=echo_err)
    items = shard.take(whole) if shard else whole
    executor = executor or "local"
    width = overlap_width_for(executor, overlap, overlap_width)
    lanes = corpus_lanes(executor, ray_address, options.backend, parse_devices(devices))
    inventory = corpus_inventory(adapter)
    plan = BatchPlan(root=Path(out if out is not None else default_root("batch", shard)),
                     items=items, devices=lanes, options=options, op_timeout_s=op_timeout,
                     stall_timeout_s=stall_timeout,
                     fresh_process=fresh_process, retries=retries,
                     argv=["zlh"] + sys.argv[1:], left_out=left_out, inventory=inventory,
                     replay_root=check_replay_root(replay_root, out) if replay_root else None,
                     env=environment_switches(adapter.env_prefixes), overlap=bool(overlap),
                     overlap_width=width,
                     shard=shard.record(whole, left_out) if shard else None, executor=executor,
                     ray_address=ray_address)
    check_plan(plan, adapter)
    if plan.replay_root is not None:
        check_replay_plan(plan)
    new_root(plan.root, "--out", "batch")
    click.echo(f"zlh batch: {ops_phrase(shard, len(items), len(whole))} on {len(lanes)} "
               f"device(s) ({'fresh processes' if fresh_process else 'reused workers'}"
               f"{', a warm spare per device, ops one at a time' if overlap else ''}"
               f"{', through Ray' if executor == 'ray' else ''}) -> {plan.root}")
    meter.set_total(len(items))
    with meter:
        result = interrupted_hint(plan.root, "batch", lambda: run_batch(
            plan, meter.counted(click.echo), None, warn=meter.counted(echo_err)))
    sys.exit(result.exit_code)


def _resume(root: Path, vllm_dir, allow_env_change: bool, overlap: tuple,
            executor: str | None, ray_address: str | None, meter: Meter,
            statuses: tuple[str, ...]) -> int:
    """`--resume ROOT`: the plan ROOT holds, checked like a new one, then the ops not finished
    (and those `statuses` name) run; overlap (on/off, width) and the executor as given, else
    as recorded."""
    plan = resumed_plan(root, vllm_dir, allow_env_change)
    changed = resumed_executor(plan, executor, ray_address)
    switch_overlap = resumed_overlap(plan, *overlap)
    corpus_lanes(plan.executor, plan.ray_address, plan.options.backend, plan.devices)
    hold_root(plan.root, "batch")
    if plan.env_change:                   # allowed: batch.json says from when and what
        record_env_change(plan.root, plan.env_change)
        plan.env = plan.env_change["to"]
    if switch_overlap:
        record_overlap(plan.root, plan.overlap, plan.overlap_width)
    if changed:
        record_executor(plan.root, plan)
    with meter:
        result = interrupted_hint(plan.root, "batch", lambda: run_batch(
            plan, meter.counted(click.echo), None, resume=True,
            warn=meter.counted(echo_err), retry=statuses))
    return result.exit_code


def default_root(verb: str, shard) -> str:
    """runs/<verb>_<timestamp>, with the shard when there is one (the tasks of a job array
    start in the same second)."""
    tail = f"_shard{shard.k}of{shard.n}" if shard else ""
    return f"runs/{verb}_{time.strftime('%Y%m%d-%H%M%S')}{tail}"


def retry_statuses(retry: str | None, resume: str | None) -> tuple[str, ...]:
    """`--retry` read (only beside --resume: a new root has nothing to retry)."""
    if retry is None:
        return ()
    if resume is None:
        raise errors.UsageError("--retry works with --resume ROOT (it names which finished "
                                "ops of ROOT run again)")
    return parse_retry(retry)


def resumed_plan(root: Path, vllm_dir: str | None, allow_env_change: bool = False
                 ) -> BatchPlan:
    """The plan of a batch root, checked like a new one (one line for what would fail every
    op); a screen's side is refused (its B side replays A per op: resume the screen), and so
    is a resume under other environment switches (unless `allow_env_change`: then the new
    values and the change are recorded in batch.json)."""
    check_root(root, "batch", "--resume")
    doc = read_batch_json(root)
    side = doc.get("screen_side") or (root.name in ("A", "B") and
                                      (root.parent / "screen.json").is_file() and root.name)
    if side:
        raise errors.UsageError(f"{root} is side {side} of the screen {root.parent}; resume "
                                f"the screen: zlh screen --resume {root.parent}")
    refuse_merged(doc, root, "batch")
    plan = BatchPlan.from_dict(root, doc)
    where = f"{root}/{BATCH_JSON}"
    adapter = corpus_adapter(plan.options, vllm_dir, where)
    check_plan(plan, adapter, where, resolve=True)
    now = environment_switches(adapter.env_prefixes)
    if check_resume_env(plan.env, now, where, allow_env_change, echo_err):
        plan.env_change = {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "from": plan.env,
                           "to": now}
    if plan.replay_root is not None:       # the recorded batch it replays must still be there
        try:
            check_replay_root(str(plan.replay_root), str(root))
        except errors.UsageError as exc:
            raise errors.UsageError(f"{where}: {exc.message}") from None
    check_tables(root, [item.op for item in plan.items])
    return plan


def record_executor(root: Path, plan: BatchPlan) -> None:
    """batch.json of a resume that named another executor: the next resume keeps it."""
    update_batch_json(root, executor=plan.executor, ray_address=plan.ray_address)


def new_root(root: Path, flag: str, verb: str) -> None:
    """A new corpus root: an empty (or new) writable directory, made now and held by this
    process (lock.py). A folder holding only a lock file (a start that ended before its plan
    was written) is empty; a command that ends before writing into its new root leaves it as
    it found it (lock.forget_if_empty)."""
    check_output_dir(root, flag)
    if root.exists() and not only_lock(root):
        raise errors.UsageError(f"{flag} {root} exists and is not empty; use --resume "
                                f"{root} to continue it, or another directory")
    made = not root.exists()
    check_output_dir(root, flag, create=True)
    hold_root(root, verb, made)


def hold_root(root: Path, verb: str, made: bool = False) -> None:
    """This command holds `root` until it ends (common/lock.py): a second command on the same
    root is one line, not interleaved writes. When it ends having written nothing there, the
    lock file goes (and the root, when `made` by it)."""
    claim_root(root, verb)

    def let_go() -> None:
        forget_if_empty(root, made)
        release_root(root)
    click.get_current_context().call_on_close(let_go)


def interrupted_hint(root: Path, verb: str, run):
    """Ctrl-C, SIGTERM or SIGHUP ends a corpus command with one line saying what is kept and
    how to go on."""
    return keeps_on_interrupt(root, f"zlh {verb} --resume {root}", run)
