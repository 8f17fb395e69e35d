"""The `zlh` command line (click). Each command is a thin layer over the Python API."""
from __future__ import annotations

import functools
import sys

import click
from tabulate import tabulate

from . import errors
from .runner import L2_POLICIES, LEVELS, BenchOptions, run_bench
from .stopping import StoppingRule
from .timers import Budget


def _fail(message: str, code: int):
    click.echo(f"zlh: {message}", err=True)
    sys.exit(code)


def handles_errors(fn):
    """User errors become one line on stderr and their exit code; no traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except errors.ZlhError as exc:
            _fail(exc.message, exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; cases measured so far are in the run directory", 130)
    return wrapper


def _split_csv(ctx, param, value):
    if not value:
        return None
    items = []
    for chunk in value:
        items.extend(v.strip() for v in chunk.split(",") if v.strip())
    return items or None


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="zlh", message="zlh %(version)s")
def main():
    """zlh: operator timing harness for A/B comparison of Triton compiler and FlagGems builds."""


@main.command()
@click.argument("ops", nargs=-1, required=True)
@click.option("--adapter", type=click.Choice(["builtin", "flaggems"]), default=None,
              help="Where cases come from. Default: flaggems when importable, else builtin.")
@click.option("--backend", default=None, metavar="NAME",
              help="Device runtime: cuda, musa, rocm, ascend, cpu (aliases nvidia, amd, hip, "
                   "npu). Default: detected.")
@click.option("--device", type=click.IntRange(min=0), default=None,
              help="Logical device index. Default: the first visible device.")
@click.option("--dtypes", multiple=True, callback=_split_csv, metavar="LIST",
              help="Comma-separated dtypes, e.g. float16,bfloat16. Default: the op's defaults.")
@click.option("--shapes", "shapes", default=None, metavar="FILE",
              help="Shape file (YAML: op or class name -> shapes). Default: the adapter's.")
@click.option("--level", type=click.Choice(LEVELS), default="core", show_default=True,
              help="Shape set size when no shape file is given.")
@click.option("--timer", type=click.Choice(["auto", "graph", "event", "host"]), default="auto",
              show_default=True,
              help="auto: graph where the backend captures graphs, else event (cpu: host).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Independent measurements per case; the median of their medians is reported.")
@click.option("--l2", type=click.Choice(L2_POLICIES), default="warm", show_default=True,
              help="flush: clear L2 before every timed call (event timer only).")
@click.option("--warmup-ms", type=click.FloatRange(min=0), default=Budget.warmup_ms,
              show_default=True, help="Warm-up budget after the discarded first call.")
@click.option("--min-samples", type=click.IntRange(min=1), default=StoppingRule.min_samples,
              show_default=True)
@click.option("--min-time-ms", type=click.FloatRange(min=0), default=StoppingRule.min_time_ms,
              show_default=True)
@click.option("--max-time-ms", type=click.FloatRange(min=0), default=StoppingRule.max_time_ms,
              show_default=True, help="Hard cap on sampling time per timed function.")
@click.option("--target-rel-err", type=click.FloatRange(min=0),
              default=StoppingRule.target_rel_err, show_default=True,
              help="Stop early once the median's relative standard error is below this.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for random, numpy and torch before each case's inputs are built.")
@click.option("--no-check", is_flag=True, help="Skip the comparison with the baseline's output.")
@click.option("--out", default="runs", show_default=True, metavar="DIR",
              help="Root under which each op gets runs/<op>_<timestamp>/.")
@click.option("--flaggems-dir", default=None, metavar="DIR", envvar="FLAGGEMS_DIR",
              help="FlagGems checkout (holds benchmark/ and src/). Env: FLAGGEMS_DIR.")
@click.option("--replay", default=None, metavar="RUN_DIR",
              help="Force the autotune configs recorded by this record run (or the newest "
                   "<op>_* record run under this directory). Default: record.")
@click.option("--isolate-tuner-cache", is_flag=True,
              help="Give this invocation a private FlagGems tuner DB (default: the shared one).")
@click.option("--keep-cache", is_flag=True,
              help="Keep the private Triton compile cache (and tuner DB) after the run.")
@click.option("--no-ir", is_flag=True, help="Do not capture TTGIR (recorded in the caliber).")
@handles_errors
def bench(ops, adapter, backend, device, dtypes, shapes, level, timer, repeat, l2, warmup_ms,
          min_samples, min_time_ms, max_time_ms, target_rel_err, seed, no_check, out,
          flaggems_dir, replay, isolate_tuner_cache, keep_cache, no_ir):
    """Time OPS (function under test vs torch baseline), one run directory per op.

    FlagGems op names: `softmax` (test_softmax), `perf_sort:sort` (function:file),
    `name@file`, a node `benchmark/test_x.py::test_y`, or `vllm:NAME` for FlagGems-vllm.

    Exit status: 0 all cases ok, 1 some case failed, 2 bad input, 3 preflight failed,
    5 the device became unusable (the run stopped; what was measured is kept).
    """
    if max_time_ms < min_time_ms:
        raise errors.UsageError("--max-time-ms must be >= --min-time-ms")
    options = BenchOptions(
        adapter=adapter, backend=backend, device=device, dtypes=dtypes, shapes=shapes,
        level=level, timer=timer, repeat=repeat, l2=l2, out=out, seed=seed, check=not no_check,
        rule=StoppingRule(min_samples=min_samples, min_time_ms=min_time_ms,
                          max_time_ms=max_time_ms, max_samples=max(StoppingRule.max_samples,
                                                                   min_samples),
                          target_rel_err=target_rel_err),
        budget=Budget(warmup_ms=warmup_ms), flaggems_dir=flaggems_dir, replay=replay,
        isolate_tuner_cache=isolate_tuner_cache, keep_cache=keep_cache, ir=not no_ir,
        argv=["zlh"] + sys.argv[1:],
    )
    results = run_bench(list(ops), options, echo=click.echo)
    sys.exit(max((r.exit_code for r in results), default=0))


@main.command("ops")
@click.option("--adapter", type=click.Choice(["builtin", "flaggems"]), default=None,
              help="Default: flaggems when a checkout is given, else builtin.")
@click.option("--flaggems-dir", default=None, metavar="DIR", envvar="FLAGGEMS_DIR",
              help="FlagGems checkout. Env: FLAGGEMS_DIR.")
@click.option("--vllm", "vllm_dir", default=None, metavar="DIR", envvar="FLAGGEMS_VLLM_DIR",
              help="Also list a FlagGems-vllm checkout. Env: FLAGGEMS_VLLM_DIR.")
@handles_errors
def ops_cmd(adapter, flaggems_dir, vllm_dir):
    """List the benchmark functions an adapter can run (FlagGems: static scan, no import)."""
    import adapters as registry
    name = adapter or ("flaggems" if flaggems_dir else "builtin")
    if name == "builtin":
        for op in registry.get_adapter("builtin").ops():
            click.echo(op)
        return
    from adapters.flaggems import FlagGemsAdapter
    source = FlagGemsAdapter(flaggems_dir=flaggems_dir, vllm_dir=vllm_dir)
    repos = ["flaggems"] + (["vllm"] if vllm_dir else [])
    rows = []
    for repo in repos:
        for node in source.corpus(repo).nodes:
            rows.append([node.qualified, node.file, node.function, ",".join(node.marks) or "-",
                         " | ".join(node.skip_marks) or "-"])
    click.echo(tabulate(rows, headers=["op", "file", "function", "marks", "skip marks"],
                        tablefmt="plain"))
    click.echo(f"{len(rows)} benchmark functions", err=True)


@main.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@handles_errors
def show(run_dir):
    """Print a run's table, caliber, autotune mode and marker counts."""
    from .show import show_run
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
    from .fingerprint import fingerprint_line
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


if __name__ == "__main__":  # pragma: no cover
    main()
