"""`zlh merge`."""
from __future__ import annotations

import sys

import click

from ..corpus.merge import merge_roots
from .group import main
from .common import handles_errors, not_empty


@main.command("merge")
@click.argument("roots", nargs=-1, required=True, type=click.Path())
@click.option("--out", required=True, metavar="ROOT", type=click.Path(), callback=not_empty,
              help="The merged root: a new or empty folder, or the root of an earlier merge "
                   "of the same shards (replaced; it must not hold a shard left out now).")
@click.option("--partial", is_flag=True,
              help="Merge although shards are missing or have unfinished ops (their ops "
                   "are left out and named in the plan's `merged` record).")
@handles_errors
def merge(roots, out, partial):
    """Join the roots of one batch's or screen's shards (--shard K/N) into one root.

    The merged root is read like an unsharded one (ops_status.csv, summary.csv; screen.tsv,
    ir_changed.txt, zlh screen --rescore, zlh campaign --screen); its run directories are
    hard links to the shards' files. Refused in one line: shards of different commands
    (selection, options, sides, switches: exit 2) or calibers (exit 4), a shard given twice,
    a shard missing or unfinished (unless --partial).

    Exit status: 0 merged, 1 the merged root could not be written, 2 bad input, 4 calibers
    differ.
    """
    result = merge_roots(roots, out, partial, ["zlh", *sys.argv[1:]])
    shown = ", ".join(f"{k} {n}" for k, n in sorted(result.counts.items())) or "none"
    linked = ", ".join(f"{n} {how}" for how, n in sorted(result.files.items())) or "no file"
    click.echo(f"zlh merge: {result.kind}, {len(result.given)} of {result.n} shard(s), "
               f"{result.finished} of {result.ops} ops finished ({shown}) -> {result.root} "
               f"(files: {linked})")
    if result.missing or result.unfinished:
        missing = ", ".join(f"{k}/{result.n}" for k in result.missing) or "none"
        click.echo(f"zlh merge: partial: shards missing {missing}; {result.unfinished} "
                   f"unfinished op(s) left out; merge again once they finish")
    sys.exit(0)
