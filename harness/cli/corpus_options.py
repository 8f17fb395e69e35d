"""The options the corpus commands share: which ops (batch, screen), who runs them (the
executor: batch, screen, campaign) and on what terms (the lanes' devices, time limits,
retries and process policy: batch, screen); the lanes a command's choice gives, and the
executor a resume keeps or switches to."""
from __future__ import annotations

import click

from ..common import errors
from ..corpus.executor import EXECUTORS
from ..corpus.ray_executor import cluster_lanes
from ..corpus.stall import DEFAULT_STALL_S
from .common import finite, not_empty, split_csv
from .devices import check_devices


def selection_options(command):
    """--all, --ops, --ops-file, --include-skipped, --dismiss, --no-dismiss and --vllm: the
    ops of a corpus command that runs a selection of them (batch, screen)."""
    return _apply(command, [
        click.option("--all", "all_ops", is_flag=True,
                     help="Every benchmark function of the corpus."),
        click.option("--ops", multiple=True, callback=split_csv, metavar="A,B",
                     help="These ops (comma-separated, repeatable)."),
        click.option("--ops-file", default=None, metavar="FILE", type=click.Path(),
                     callback=not_empty,
                     help="Ops, one per line: [vllm:]op[:op_file[:dtypes]]; # comments."),
        click.option("--include-skipped", is_flag=True,
                     help="With --all: also functions with an unconditional skip mark."),
        click.option("--dismiss", default=None, metavar="FILE", type=click.Path(),
                     callback=not_empty,
                     help="Ops left out, one `[repo:]op  # reason; date; verified: how` per "
                          "line. Default with --all: the curated list (recipes/dismiss.txt)."),
        click.option("--no-dismiss", is_flag=True,
                     help="Leave nothing out: not even the curated list's ops (to re-check "
                          "them)."),
        click.option("--vllm", "vllm_dir", default=None, metavar="DIR",
                     type=click.Path(), envvar="FLAGGEMS_VLLM_DIR",
                     help="Also the FlagGems-vllm checkout (vllm:NAME ops). "
                          "Env: FLAGGEMS_VLLM_DIR."),
    ])


SHARD_HELP = ("Run only the K-th of N shards of the selection (K from 1 to N; auto/N: K from "
              "SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX) into its own root; zlh merge "
              "joins the shards' roots.")


def shard_option(command):
    """--shard K/N of a corpus command that runs a selection of ops (batch, screen)."""
    return click.option("--shard", "shard_text", default=None, metavar="K/N",
                        callback=not_empty, help=SHARD_HELP)(command)


def env_change_option(kind: str):
    """--allow-env-change of the corpus command `kind` (batch, screen, campaign), whose root
    records its environment switches in <kind>.json."""
    return click.option(
        "--allow-env-change", is_flag=True,
        help=f"With --resume: go on although an environment switch (TRITON_*, ZLH_*, a "
             f"visibility variable, ...) differs from what the {kind} started with; the "
             f"change is recorded in {kind}.json.")


def executor_options(command):
    """--executor and --ray-address, the options of every corpus command (batch, screen,
    campaign) that say who runs its units; recorded in the root's plan."""
    command = click.option(
        "--ray-address", default=None, metavar="auto|HOST:PORT", callback=not_empty,
        help="With --executor ray: the Ray cluster to join. Default: auto (the cluster this "
             "host runs, or RAY_ADDRESS).")(command)
    return click.option(
        "--executor", default=None, type=click.Choice(list(EXECUTORS)),
        help="Who runs the units: local (this host's devices; the default) or ray (one lane "
             "per GPU of a Ray cluster, the root on a file system the nodes share; needs "
             "pip install 'zlh[ray]'). --resume keeps the root's unless given.")(command)


def resumed_executor(plan, executor: str | None, ray_address: str | None) -> bool:
    """`plan` (a BatchPlan or CampaignPlan) with the executor a resume names (else the one its
    root recorded); True when it changed (the root's plan is to record it)."""
    before = (plan.executor, plan.ray_address)
    if executor is not None:
        plan.executor = executor
        plan.ray_address = ray_address if executor == "ray" else None
    elif ray_address is not None:
        plan.ray_address = ray_address
    return (plan.executor, plan.ray_address) != before


def lane_options(*, unit: str, timeout_ends: str, fresh_help: str):
    """--devices, --op-timeout, --stall-timeout, --retries and --fresh-process of a corpus
    command whose lanes run ops (batch, screen). `unit` is what one time limit and one retry
    apply to ("an op", "one side of an op"), `timeout_ends` what a timeout makes of it,
    `fresh_help` what --fresh-process runs in a process of its own."""
    return lambda command: _apply(command, [
        click.option("--devices", "--gpus", "devices", default=None, metavar="0,1,…",
                     callback=not_empty,
                     help="Devices to spread the ops over (one serial lane each). Default: "
                          "the first. --gpus is the same option."),
        click.option("--op-timeout", type=click.FloatRange(min=1), default=1800.0,
                     show_default=True, callback=finite,
                     help=f"Seconds {unit} may take ({timeout_ends}); with --overlap, time "
                          f"it waited for a neighbour's device work does not count, up to "
                          f"--overlap-width times this."),
        click.option("--stall-timeout", type=click.FloatRange(min=0), default=DEFAULT_STALL_S,
                     show_default=True, callback=finite,
                     help=f"Seconds {unit} may go without finishing a case or compiling a "
                          f"kernel before it is ended as TIMEOUT (a hang; what it measured "
                          f"is kept); 0: off. --op-timeout stays the hard cap (under "
                          f"--overlap, plus the time waited for the device, up to "
                          f"--overlap-width times --op-timeout)."),
        click.option("--retries", type=click.IntRange(min=0, max=5), default=2,
                     show_default=True,
                     help=f"Retries of {unit} that FAILed or CRASHed, each in a fresh "
                          f"worker."),
        click.option("--fresh-process", is_flag=True, help=fresh_help),
    ])


def _apply(command, options: list):
    """`command` with `options`, listed in its help in their order."""
    for option in reversed(options):
        command = option(command)
    return command


def corpus_lanes(executor: str, ray_address: str | None, backend: str | None,
                 devices: list[int] | None, option: str = "--devices") -> list[int]:
    """The lanes of a corpus command: this host's devices (check_devices), or with the ray
    executor one per GPU of the cluster (`devices`: those of them)."""
    if executor != "ray":
        if ray_address is not None:
            raise errors.UsageError("--ray-address applies to --executor ray only")
        return check_devices(backend, devices, option)
    if not backend:
        raise errors.UsageError("--executor ray: name the backend of the cluster's GPUs "
                                "(--backend cuda, ...); this host may have none")
    return cluster_lanes(ray_address, devices, option)
