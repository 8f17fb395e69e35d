"""`zlh partition` and `zlh campaign` (rounds spread over the devices of one host).

Pre-registered product campaigns are `zlh product` (cli/product.py); their old spelling
`zlh campaign prepare|run|reaccount` is a usage error naming the new command, not an alias."""
from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import click

from ..common import errors
from ..common.limits import MAX_ROUNDS
from ..common.periodic import every
from ..common.progress import Meter
from ..corpus.campaign import (check_root_files, plan_campaign, read_campaign,
                               run_cards, write_plan)
from ..corpus.campaign_merge import merge
from ..corpus.environment import check_resume_env, environment_switches
from ..corpus.check import check_root, corpus_adapter
from ..corpus.partition import partition, render, weights_from_screen
from ..corpus.verdict import VERDICTS
from .group import main
from ..corpus.screen import read_plan as read_screen_plan
from .devices import parse_devices
from .batch import hold_root, interrupted_hint, new_root
from .corpus_options import (corpus_lanes, env_change_option, executor_options,
                             resumed_executor)
from .common import echo_err, finite, handles_errors, not_empty, refuse_beside, split_csv


@main.command("partition")
@click.argument("screen_tsv", type=click.Path(dir_okay=False))
@click.option("--devices", "--gpus", "devices", required=True, metavar="0,1,…",
              help="Devices to spread over.")
@click.option("--verdict", "verdicts", multiple=True, default=("IR_CHANGED",),
              type=click.Choice(VERDICTS),
              show_default=True, help="Keep ops with this verdict (repeatable).")
@click.option("--rounds", type=click.IntRange(min=1, max=MAX_ROUNDS), default=1, show_default=True,
              help="Rounds each op will run (its weight is multiplied by them).")
@click.option("--format", "fmt", type=click.Choice(["text", "tsv"]), default="text",
              show_default=True, help="text: a table per device; tsv: one line per op.")
@handles_errors
def partition_cmd(screen_tsv, devices, verdicts, rounds, fmt):
    """Plan ops over DEVICES by measured cost (elapsed_a + elapsed_b from a screen.tsv):
    longest first, each to the least-loaded device; deterministic."""
    weights, filtered = weights_from_screen(Path(screen_tsv), tuple(verdicts))
    if not weights:
        raise errors.UsageError(f"{screen_tsv}: no op with verdict {', '.join(verdicts)}")
    part = partition(weights, parse_devices(devices), rounds)
    part.filtered = filtered
    if part.imputed:
        click.echo(f"WARNING: no weight for {len(part.imputed)} op(s); the median weight is "
                   f"used: {', '.join(part.imputed)}", err=True)
    click.echo(render(part, fmt))


# `zlh campaign <name>` once ran these product campaign commands; now they are `zlh product`.
MOVED_TO_PRODUCT = ("prepare", "run", "reaccount")


def _moved(name: str) -> click.UsageError:
    return click.UsageError(f"`zlh campaign {name}` is now `zlh product {name}` (pre-registered "
                            f"product campaigns; `zlh campaign` runs rounds over GPUs only)")


class RoundsCommand(click.Command):
    """`zlh campaign` takes no arguments; its first word that is neither an option nor an
    option's value, when it names a product campaign command, gets the pointer to `zlh product`
    (before --help and every other check), any other word click's own usage error."""

    def parse_args(self, ctx, args):
        word = None if ctx.resilient_parsing else self._first_word(ctx, args)
        if word in MOVED_TO_PRODUCT:
            raise _moved(word)
        return super().parse_args(ctx, args)

    def _first_word(self, ctx, args) -> str | None:
        valued = {opt for p in self.get_params(ctx) if isinstance(p, click.Option)
                  and not p.is_flag and not p.count for opt in p.opts}
        words = iter(args)
        for word in words:
            if word == "--":
                return next(words, None)
            if word.startswith("-") and word != "-":
                if word in valued:
                    next(words, None)
                continue
            return word
        return None


@main.command("campaign", cls=RoundsCommand)
@click.option("--screen", "screen_root", default=None, metavar="ROOT",
              type=click.Path(), callback=not_empty,
              help="The screen whose ops to run rounds on.")
@click.option("--devices", "--gpus", "devices", default=None, metavar="0,1,…",
              callback=not_empty,
              help="Devices, one card each.")
@click.option("--rounds", type=click.IntRange(min=1, max=MAX_ROUNDS), default=3, show_default=True,
              help="Rounds of each op's zlh ab.")
@click.option("--verdict", "verdicts", multiple=True, default=("IR_CHANGED",),
              type=click.Choice(VERDICTS),
              show_default=True, help="Screen verdicts to include (repeatable).")
@click.option("--extra-ops", multiple=True, callback=split_csv, metavar="A,B",
              help="More ops (to the least-loaded device).")
@click.option("--only", multiple=True, callback=split_csv, metavar="A,B",
              help="Only these of the screen's ops (after the verdict filter).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=3600.0,
              show_default=True, callback=finite, help="Per-run limit of each card's zlh ab.")
@click.option("--root", default=None, metavar="DIR", callback=not_empty,
              type=click.Path(), help="Default: runs/campaign_<timestamp>.")
@click.option("--resume", default=None, metavar="ROOT", type=click.Path(), callback=not_empty,
              help="Continue a killed campaign: each card runs the ops its reports lack.")
@click.option("--dry-run", is_flag=True, help="Print the plan; run and write nothing.")
@env_change_option("campaign")
@executor_options
@click.pass_context
@handles_errors
def campaign(ctx, screen_root, devices, rounds, verdicts, extra_ops, only, timeout_s, root,
             resume, dry_run, allow_env_change, executor, ray_address):
    """Rounds on the ops of a screen, spread over the devices of this host by measured cost:
    one `zlh ab --rounds N` per device, side by side, merged at the end (--executor ray: one
    per op, on the first GPU of the cluster that comes free).

    Exit status: 0 every card reported, 1 some card or run failed, 2 bad input, 3 preflight.
    (Pre-registered product campaigns: `zlh product`.)
    """
    if resume is not None:
        refuse_beside(ctx, "resume", allowed=("dry_run", "allow_env_change", "executor",
                                              "ray_address"))
        plan = read_campaign(check_root(resume, "campaign", "--resume"))
        resumed_executor(plan, executor, ray_address)
        where = f"{resume}/campaign.json"
        now = environment_switches(corpus_adapter(plan.options, None, where).env_prefixes)
        if check_resume_env(plan.env, now, where, allow_env_change, echo_err):
            plan.env_changes.append({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                     "from": plan.env, "to": now})
            plan.env = now          # campaign.json is written again below, before any card
    else:
        if allow_env_change:
            raise errors.UsageError("--allow-env-change applies to --resume only")
        executor = executor or "local"
        if not screen_root or not (devices or executor == "ray"):
            raise errors.UsageError("give --screen ROOT and --devices 0,1,… (or --resume ROOT)")
        lanes = parse_devices(devices)
        if executor == "ray":           # the cluster's GPUs (or those of them --devices names)
            backend = read_screen_plan(check_root(screen_root, "screen", "--screen")
                                       ).base.options.backend
            lanes = corpus_lanes(executor, ray_address, backend, lanes)
        plan = plan_campaign(Path(root if root is not None else
                                  f"runs/campaign_{time.strftime('%Y%m%d-%H%M%S')}"),
                             check_root(screen_root, "screen", "--screen"),
                             lanes, rounds, list(extra_ops or ()),
                             tuple(verdicts), timeout_s, only)
        plan.executor, plan.ray_address = executor, ray_address
    click.echo(render(plan.part))
    if dry_run:
        return
    corpus_lanes(plan.executor, plan.ray_address, plan.options.backend, plan.devices)
    if resume is None:
        new_root(plan.root, "--root", "campaign")
    else:
        check_root_files(plan.root)
    hold_root(plan.root, "campaign")
    write_plan(plan)
    with Meter("campaign") as meter, _overall(plan, meter):
        cards = interrupted_hint(plan.root, "campaign",
                                 lambda: run_cards(plan, meter.counted(click.echo),
                                                   resume=resume is not None))
    doc = merge(plan, cards, echo_err)
    click.echo(f"merged: {len(doc['ops_reported'])} ops reported; runs {doc['runs']}, replay "
               f"fallbacks {doc['replay_fallbacks']}, graph fallbacks {doc['graph_fallbacks']}, "
               f"poisoned {doc['poisoned']}; failed runs per card {doc['failed_runs_per_card']}"
               + (f" (superseded by a resume: {doc['superseded_runs']} runs, not counted)"
                  if doc.get("superseded_runs") else ""))
    click.echo(f"status.tsv, report.json/csv/html under {plan.root}")
    failed = any(info["rc"] != 0 for info in cards.values()) or doc["failed_runs_per_card"]
    sys.exit(1 if failed else 0)


@contextlib.contextmanager
def _overall(plan, meter: Meter, every_s: float = 2.0):
    """On a terminal: one bar over every card's runs (ops x 2 sides x rounds), read from the
    cards' status.tsv (a line per finished run) every `every_s` seconds while they run."""
    if not meter.shown:
        yield
        return
    total = sum(len(ops) for ops in plan.part.assignment.values()) * 2 * plan.rounds
    def finished_runs() -> int:
        done = 0
        for path in plan.root.glob("card*/status.tsv"):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                done += max(len(path.read_text(encoding="utf-8").splitlines()) - 1, 0)
        return done

    meter.set_total(total, min(finished_runs(), total))
    with every(every_s, lambda: meter.count(min(finished_runs(), total), total),
               "campaign-progress"):
        yield
