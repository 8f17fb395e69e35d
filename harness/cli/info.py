"""`zlh ops`, `zlh show`, `zlh fingerprint`, `zlh backends`: looking at what is there."""
from __future__ import annotations

import sys

import click
from tabulate import tabulate

from ..common import errors
from . import main
from .common import handles_errors


@main.command("ops")
@click.option("--adapter", type=click.Choice(["builtin", "flaggems"]), default=None,
              help="Default: flaggems when a checkout is given, else builtin.")
@click.option("--flaggems-dir", default=None, metavar="DIR", envvar="FLAGGEMS_DIR",
              help="FlagGems checkout. Env: FLAGGEMS_DIR.")
@click.option("--vllm", "vllm_dir", default=None, metavar="DIR", envvar="FLAGGEMS_VLLM_DIR",
              help="Also list a FlagGems-vllm checkout. Env: FLAGGEMS_VLLM_DIR.")
@click.option("--all-builtin", is_flag=True,
              help="Builtin adapter: also the fault-injection ops (fault_raise, fault_abort, "
                   "fault_hang, fault_illegal_address).")
@click.option("--csv", "as_csv", is_flag=True,
              help="The inventory as CSV on stdout (repo, op, op_file, function, marked_skip, "
                   "op_names, ...).")
@click.option("--verify-collect", is_flag=True,
              help="With --csv: import each function and build its Benchmarks (no timing); "
                   "adds collect and collect_detail columns. Needs the library importable.")
@handles_errors
def ops_cmd(adapter, flaggems_dir, vllm_dir, all_builtin, as_csv, verify_collect):
    """List the benchmark functions an adapter can run (FlagGems: static scan, no import),
    and the skip guards each backend overrides or keeps."""
    import adapters
    name = adapter or adapters.default_adapter_name(flaggems_dir)
    try:
        source = adapters.get_adapter(name, flaggems_dir=flaggems_dir, vllm_dir=vllm_dir)
    except adapters.UnknownAdapter as exc:
        raise errors.UsageError(str(exc)) from None
    if as_csv or verify_collect:
        _inventory_csv(source, verify_collect)
        return
    rows = source.describe_ops(include_hidden=all_builtin)
    if rows and "file" not in rows[0]:
        for row in rows:
            click.echo(row["op"])
        return
    click.echo(tabulate([[r.get(k, "-") for k in ("op", "file", "function", "marks",
                                                  "skip_marks")] for r in rows],
                        headers=["op", "file", "function", "marks", "skip marks"],
                        tablefmt="plain"))
    click.echo(f"{len(rows)} benchmark functions", err=True)
    for line in _guard_lines(rows):
        click.echo(line)


def _inventory_csv(source, verify: bool) -> None:
    import csv
    import io
    import backends as registry
    columns, rows = source.inventory(verify, registry.detect_backend() if verify else None,
                                     registry.all_backends())
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    click.echo(buffer.getvalue(), nl=False)
    click.echo(f"{len(rows)} rows", err=True)


def _guard_lines(rows) -> list[str]:
    """Each backend's skip-guard table: stale guards are ignored on that backend (the function
    runs), kept ones are listed so that they stay."""
    import backends as registry
    nodes = {(r.get("file"), r.get("function")) for r in rows}
    lines = [[b.name, "ignored" if g.stale else "kept", f"{g.file}::{g.function}", g.reason,
              "yes" if (g.file, g.function) in nodes else "no"]
             for b in registry.all_backends() for g in b.skip_guards]
    if not lines:
        return []
    return ["", "skip guards per backend (matched on file, function and exact reason):",
            tabulate(lines, headers=["backend", "guard", "function", "reason", "in corpus"],
                     tablefmt="plain")]


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@handles_errors
def show(run_dir):
    """Print a run's table, caliber, autotune mode and marker counts."""
    from ..run.show import show_run
    click.echo(show_run(run_dir, colour=sys.stdout.isatty()))


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--scrub", multiple=True, metavar="REGEX",
              help="Extra pattern removed from every .ttgir before hashing (repeatable); the "
                   "default scrub of FlagTree's ttg.rlc-* module attributes always applies.")
@handles_errors
def fingerprint(run_dir, scrub):
    """sha256 over the run's .ttgir files (sorted relative path + scrubbed content).

    Prints only the hash; a run without .ttgir prints `no IR` and exits 1.
    """
    from ..compile.ir.fingerprint import fingerprint_line
    try:
        line, rc = fingerprint_line(run_dir, list(scrub))
    except ValueError as exc:
        raise errors.UsageError(str(exc)) from None
    click.echo(line)
    sys.exit(rc)


@main.command("backends")
def backends_cmd():
    """List the device runtimes zlh knows, their capabilities and whether one is usable here."""
    import backends as registry
    rows = [b.describe() for b in registry.all_backends()]
    click.echo(tabulate(rows, headers="keys", tablefmt="simple"))
