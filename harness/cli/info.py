"""`zlh ops`, `zlh show`, `zlh fingerprint`, `zlh backends`: looking at what is there."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
from pathlib import Path

import click
from click.core import ParameterSource
from tabulate import tabulate

import adapters
import backends
from adapters import suggest

from ..common import errors, style
from ..common.files import SYMLINK_LOOP, check_path_text, link_loop, to_json
from ..common.schema import stamp
from ..compile.ir.fingerprint import compile_scrub, fingerprint_line
from ..corpus.files import corpus_root_hint
from ..run.show import show_run
from ..store.reader import load_run, read_info
from .group import main
from .common import echo_err, echo_out, handles_errors, not_empty
from .output import AdapterName


@main.command("ops")
@click.argument("patterns", nargs=-1)
@click.option("--adapter", type=AdapterName(exclude=("user",)), default=None,
              help="builtin, flaggems or an installed plugin's adapter. Default: flaggems when "
                   "a checkout is given, else builtin.")
@click.option("--flaggems-dir", default=None, metavar="DIR", callback=not_empty,
              type=click.Path(), envvar="FLAGGEMS_DIR",
              help="FlagGems checkout. Env: FLAGGEMS_DIR.")
@click.option("--vllm", "vllm_dir", default=None, metavar="DIR", callback=not_empty,
              type=click.Path(), envvar="FLAGGEMS_VLLM_DIR",
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
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per line (op, file, function, marks, skip marks), untruncated.")
@click.pass_context
@handles_errors
def ops_cmd(ctx, patterns, adapter, flaggems_dir, vllm_dir, all_builtin, as_csv,
            verify_collect, as_json):
    """List the benchmark functions an adapter can run (FlagGems: static scan, no import),
    and the skip guards each backend overrides or keeps.

    PATTERNS (optional) keep the functions whose op name, file or function contains one of
    them (case-insensitive): `zlh ops softmax`; an empty pattern is refused. On a terminal,
    lines are cut to its width (the COLUMNS variable overrides it); --json gives everything.
    """
    if any(not p.strip() for p in patterns):     # '' is in every name: it would keep all
        raise errors.UsageError("PATTERNS holds an empty pattern, which every op matches; give "
                                "part of an op, file or function name, or none to list all")
    if as_csv and as_json:
        raise errors.UsageError("give one of --csv and --json (two forms of one listing)")
    if verify_collect and not as_csv:
        raise errors.UsageError("--verify-collect goes with --csv (it fills the CSV's collect "
                                "columns); add --csv")
    name = adapter or adapters.default_adapter_name(flaggems_dir)
    if (name != "flaggems" and vllm_dir
            and ctx.get_parameter_source("vllm_dir") == ParameterSource.COMMANDLINE):
        raise errors.UsageError("--vllm lists a FlagGems-vllm checkout: it needs the flaggems "
                                "adapter (--flaggems-dir or --adapter flaggems)")
    try:
        source = adapters.get_adapter(name, flaggems_dir=flaggems_dir, vllm_dir=vllm_dir)
    except adapters.UnknownAdapter as exc:
        raise errors.UsageError(str(exc)) from None
    if as_csv or verify_collect:
        hidden = () if all_builtin else (
            {r["op"] for r in source.describe_ops(include_hidden=True)}
            - {r["op"] for r in source.describe_ops(include_hidden=False)})
        _inventory_csv(source, verify_collect,
                       lambda rows: _matching([r for r in rows if r.get("op") not in hidden],
                                              patterns))
        return
    rows = _matching(source.describe_ops(include_hidden=all_builtin), patterns)
    if as_json:
        for row in rows:
            click.echo(json.dumps(stamp(row), sort_keys=False))
        return
    if rows and "file" not in rows[0]:
        lines = [row["op"] for row in rows]
    else:
        lines = tabulate([[r.get(k, "-") for k in ("op", "file", "function", "marks",
                                                   "skip_marks")] for r in rows],
                         headers=["op", "file", "function", "marks", "skip marks"],
                         tablefmt=style.tablefmt("plain")).splitlines()
        echo_err(f"{len(rows)} benchmark functions")
        lines += "\n".join(_guard_lines(rows)).splitlines()
    width = _output_width()
    for line in lines:
        click.echo(line if not width or len(line) <= width else line[:width - 1] + "…")


def _inventory_csv(source, verify: bool, keep) -> None:
    """The adapter's inventory as CSV, the rows `keep` keeps (PATTERNS, --all-builtin)."""
    columns, rows = source.inventory(verify, backends.detect_backend() if verify else None,
                                     backends.all_backends())
    rows = keep(rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    click.echo(buffer.getvalue(), nl=False)
    click.echo(f"{len(rows)} rows", err=True)


def _guard_lines(rows) -> list[str]:
    """Each backend's skip-guard table: stale guards are ignored on that backend (the function
    runs), kept ones are listed so that they stay."""
    nodes = {(r.get("file"), r.get("function")) for r in rows}
    lines = [[b.name, "ignored" if g.stale else "kept", f"{g.file}::{g.function}", g.reason,
              "yes" if (g.file, g.function) in nodes else "no"]
             for b in backends.all_backends() for g in b.skip_guards]
    if not lines:
        return []
    return ["", "skip guards per backend (matched on file, function and exact reason):",
            tabulate(lines, headers=["backend", "guard", "function", "reason", "in corpus"],
                     tablefmt=style.tablefmt("plain"))]


def _matching(rows: list[dict], patterns) -> list[dict]:
    if not patterns:
        return rows
    wanted = [p.lower() for p in patterns]
    keep = [r for r in rows if any(w in " ".join(str(r.get(k, "")) for k in
                                                 ("op", "file", "op_file", "function")).lower()
                                   for w in wanted)]
    if not keep:
        raise errors.UsageError(f"no op matches {', '.join(map(repr, patterns))}"
                                f"{suggest(patterns[0], [r['op'] for r in rows])} "
                                f"({len(rows)} ops; `zlh ops` lists them)")
    return keep


def _output_width() -> int:
    """Terminal width for `zlh ops` lines: $COLUMNS when set, the terminal's when stdout is
    one, else 0 (no cut: a pipe or file gets whole lines)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isascii() and columns.isdigit() and int(columns) > 0:   # not '٥' or '²'
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return 0


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="Print the run as one JSON object: run.json (`run`), its status and rows.")
@handles_errors
def show(run_dir, as_json):
    """Print a run's table, caliber, autotune mode and marker counts."""
    check_path_text(run_dir, "RUN_DIR")
    if not (Path(run_dir) / "run.json").exists():
        hint = corpus_root_hint(run_dir, "a run directory")
        if hint:
            raise errors.UsageError(hint)
    if as_json:
        run = load_run(run_dir)
        lost = {"results_lost": run.lost} if run.lost else {}
        if run.lost:
            echo_err(f"WARNING: {run.lost}: the rows are only those the file holds")
        echo_out(to_json(stamp({"run_dir": str(run.path), "status": run.status, **lost,
                                "run": run.info, "rows": [r.to_dict() for r in run.rows]}),
                         indent=None))
        return
    echo_out(show_run(run_dir, colour=style.colour()))


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--scrub", multiple=True, metavar="REGEX",
              help="Extra pattern removed from every .ttgir before hashing (repeatable); the "
                   "default scrub of FlagTree's ttg.rlc-* module attributes always applies.")
@handles_errors
def fingerprint(run_dir, scrub):
    """sha256 over the run's .ttgir files (sorted relative path + scrubbed content).

    Prints only the hash; a run without .ttgir prints `no IR` and exits 1; a path that is
    not a run directory (or its ttgir/) exits 2.
    """
    check_path_text(run_dir, "RUN_DIR")
    try:
        compile_scrub(scrub)
    except ValueError as exc:
        raise errors.UsageError(str(exc)) from None
    path = Path(run_dir)
    if link_loop(path):
        raise errors.UsageError(f"{run_dir}: {SYMLINK_LOOP}")
    if not path.is_dir():
        raise errors.UsageError(f"{run_dir} is not a run directory (no such directory)")
    if not any((path / name).exists() for name in ("run.json", "ttgir", "index.tsv")) and \
            not any(path.glob("*.ttgir")):
        raise errors.UsageError(f"{run_dir} is not a run directory (no run.json or ttgir/)")
    if os.path.lexists(path / "run.json"):   # a damaged run.json: one line, not "no IR"
        read_info(path)
    line, rc = fingerprint_line(run_dir, list(scrub))
    click.echo(line)
    sys.exit(rc)


@main.command("backends")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: the backends (plugins included) and the adapters.")
@handles_errors
def backends_cmd(as_json):
    """List the device runtimes zlh knows (built-in and plugins), their capabilities and
    whether one is usable here, and the registered adapters."""
    builtin = set(backends.BUILTIN)
    rows = [{**b.describe(), "plugin": b.name not in builtin} for b in backends.all_backends()]
    for name, why in backends.PLUGIN_ERRORS.items():
        echo_err(f"WARNING backend plugin {name} cannot be loaded: {why}")
    names = adapters.adapter_names()
    if as_json:
        echo_out(to_json(stamp({"backends": rows, "adapters": names}), indent=None))
        return
    echo_out(tabulate(rows, headers="keys", tablefmt=style.tablefmt()))
    echo_out(f"adapters: {', '.join(names)}")
