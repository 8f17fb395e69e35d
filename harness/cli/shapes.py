"""`zlh shapes derive` and `zlh shapes check`: curated shape sets and their upkeep."""
from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

import adapters

from ..common import errors
from ..common.documents import loads_yaml
from ..common.files import atomic_write_text, check_new_file, check_output_file, read_text
from ..run.shapes import INT64_MAX, ShapeFileError, load_shape_file
from .group import main
from .common import handles_errors, split_csv
from .output import AdapterName

KINDS = ("single", "multi")


def _adapter(adapter, flaggems_dir, vllm_dir=None):
    name = adapter or adapters.default_adapter_name(flaggems_dir)
    try:
        return adapters.get_adapter(name, flaggems_dir=flaggems_dir, vllm_dir=vllm_dir)
    except adapters.UnknownAdapter as exc:
        raise errors.UsageError(str(exc)) from None


@main.group()
def shapes():
    """Shape sets: derive them from the library's own shapes, check their keys."""


@shapes.command()
@click.option("--flaggems-dir", default=None, metavar="DIR",
              type=click.Path(), envvar="FLAGGEMS_DIR",
              help="FlagGems checkout (its benchmark/core_shapes.yaml). Env: FLAGGEMS_DIR.")
@click.option("--kind", type=click.Choice(KINDS), default=None,
              help="single: one shape per key; multi: up to three. Default: from --out's name "
                   "(single unless it contains 'multi').")
@click.option("--out", required=True, metavar="FILE",
              type=click.Path(), help="Shape file to write.")
@click.option("--adapter", type=AdapterName(exclude=("user",)), default=None,
              help="Default: flaggems when a checkout is given.")
@click.option("--force", is_flag=True, help="Replace --out when it exists.")
@handles_errors
def derive(flaggems_dir, kind, out, adapter, force):
    """Write a shape set derived from upstream's core shapes (the rule is in its header).
    An existing --out is refused unless --force."""
    check_new_file(out, "--out", force)
    kind = kind or ("multi" if "multi" in Path(out).name else "single")
    source = _adapter(adapter, flaggems_dir)
    command = f"zlh shapes derive --flaggems-dir {flaggems_dir} --kind {kind} --out {out}"
    try:
        text, dropped = source.derive_shape_set(kind, command)
    except adapters.Unsupported as exc:
        raise errors.UsageError(str(exc)) from None
    atomic_write_text(out, text)
    count = sum(1 for line in text.splitlines() if line and not line[0].isspace()
                and not line.startswith("#"))
    click.echo(f"{out}: {count} keys ({kind})")
    if dropped:
        click.echo(f"dropped (nothing reaches them): {', '.join(dropped)}", err=True)


def unmatched_path(path: str) -> Path:
    """shapes/single.yaml -> shapes/single.unmatched.yaml"""
    file = Path(path)
    return file.with_name(f"{file.stem}.unmatched{file.suffix or '.yaml'}")


@shapes.command()
@click.argument("file", metavar="FILE", type=click.Path())
@click.option("--flaggems-dir", default=None, metavar="DIR",
              type=click.Path(), envvar="FLAGGEMS_DIR",
              help="FlagGems checkout. Env: FLAGGEMS_DIR.")
@click.option("--vllm", "vllm_dir", default=None, metavar="DIR",
              type=click.Path(), envvar="FLAGGEMS_VLLM_DIR",
              help="Also match a FlagGems-vllm checkout. Env: FLAGGEMS_VLLM_DIR.")
@click.option("--adapter", type=AdapterName(exclude=("user",)), default=None,
              help="Default: flaggems when a checkout is given.")
@handles_errors
def check(file, flaggems_dir, vllm_dir, adapter):
    """Report keys of FILE that no op or benchmark class matches: they are written to
    FILE's stem + `.unmatched.yaml` (a file this command wrote before is replaced or, once
    every key matches, removed; any other file there is left alone and refused); exit 1
    when there are any. Without --adapter it needs the FlagGems checkout to match against."""
    if not str(file).strip():
        raise errors.UsageError("FILE: an empty path; name the shape file to check")
    try:
        shape_file = load_shape_file(file)
    except ShapeFileError as exc:
        raise errors.UsageError(str(exc)) from None
    raw = loads_yaml(read_text(file))
    if adapter is None and adapters.default_adapter_name(flaggems_dir) != "flaggems":
        raise errors.UsageError("zlh shapes check: no FlagGems checkout to match the keys "
                                "against; give --flaggems-dir DIR (or set FLAGGEMS_DIR), or "
                                "--adapter builtin to match the builtin ops")
    target = check_output_file(unmatched_path(file), "unmatched keys file")
    try:
        unmatched = _adapter(adapter, flaggems_dir, vllm_dir).unmatched_shape_keys(
            shape_file.doc)
    except adapters.Unsupported as exc:
        raise errors.UsageError(str(exc)) from None
    ours = _written_by_check(target)
    if (target.exists() or target.is_symlink()) and not ours:
        raise errors.UsageError(f"{target} exists and was not written by zlh shapes check; "
                                f"move it away (this command writes the unmatched keys there)")
    if not unmatched:
        if ours:
            target.unlink()
            click.echo(f"removed stale {target}", err=True)
        click.echo(f"{file}: all {len(shape_file.doc)} keys match an op or benchmark class")
        return
    atomic_write_text(target, f"{UNMATCHED_HEADER} {file}\n" + yaml.safe_dump(
        {k: raw.get(k, v) for k, v in unmatched.items()}, sort_keys=False,
        default_flow_style=None))
    click.echo(f"{file}: {len(unmatched)} of {len(shape_file.doc)} keys match nothing: "
               f"{', '.join(unmatched)} (written to {target})")
    sys.exit(1)


# The first line of every unmatched-keys file: only a file that starts with it is replaced or
# removed by a later check.
UNMATCHED_HEADER = "# zlh shapes check: keys that match no op or benchmark class, of"


def _written_by_check(path: Path) -> bool:
    """`path` is a regular file an earlier `zlh shapes check` wrote (its first line)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(UNMATCHED_HEADER)
    except OSError:
        return False


@shapes.command()
@click.argument("config", metavar="CONFIG", type=click.Path())
@click.option("--tokens", required=True, callback=split_csv, multiple=True, metavar="LIST",
              help="Tokens per forward step, comma-separated: prompt tokens (prefill) or "
                   "batch size (decode), e.g. 1,16,64,256.")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tensor-parallel degree: shards heads, dense and shared MLPs, vocabulary.")
@click.option("--lm-head/--no-lm-head", default=True, show_default=True,
              help="Include the LM head GEMM (prefill computes it for the last token only).")
@click.option("--out", required=True, metavar="FILE",
              type=click.Path(), help="Shape file to write.")
@click.option("--adapter", type=AdapterName(exclude=("user",)), default="flaggems",
              show_default=True, help="Whose benchmark keys to write.")
@click.option("--force", is_flag=True, help="Replace --out when it exists.")
@handles_errors
def model(config, tokens, tp, lm_head, out, adapter, force):
    """Write the GEMM and MoE shapes of a model (CONFIG: its config.json, or the same fields
    in YAML) for the given token counts, keyed for the adapter's benchmarks. An existing
    --out is refused unless --force."""
    check_new_file(out, "--out", force)
    try:
        counts = [int(t) for t in tokens]
    except ValueError:
        raise errors.UsageError(f"--tokens takes integers, got {','.join(tokens)}") from None
    try:
        fields = loads_yaml(read_text(config))
    except OSError as exc:
        raise errors.UsageError(f"model config {config} cannot be read: {exc.strerror}") from None
    except (yaml.YAMLError, ValueError) as exc:
        raise errors.UsageError(f"model config {config} is not JSON or YAML: "
                                f"{errors.one_line(exc)}") from None
    if any(t > INT64_MAX for t in counts):
        raise errors.UsageError(f"--tokens {max(counts)} is beyond int64 (at most {INT64_MAX}): "
                                f"no tensor has that many rows")
    if not isinstance(fields, dict) or any(t < 1 for t in counts):
        raise errors.UsageError(f"model config {config} must be a mapping and --tokens positive")
    header = [f"# Model shapes of {fields.get('model_type', Path(config).stem)} "
              f"({Path(config).name}): tokens per step {', '.join(map(str, counts))}, tp {tp}"
              f"{'' if lm_head else ', no LM head'}.",
              f"# Generated by: zlh shapes model {config} --tokens {','.join(map(str, counts))} "
              f"--tp {tp}{'' if lm_head else ' --no-lm-head'} --out {out}"]
    try:
        text = _adapter(adapter, None).model_shape_set(fields, counts, tp, lm_head, header)
    except adapters.Unsupported as exc:
        raise errors.UsageError(str(exc)) from None
    atomic_write_text(out, text)
    click.echo(f"{out}: {sum(1 for ln in text.splitlines() if ln and ln[0] not in ' #')} keys")
