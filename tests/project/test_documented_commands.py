"""Every `zlh …` command the README and docs/ show is one the CLI takes: each parses against
the click commands, and its bench options pass the same checks as a real run (a `--max-time-ms`
below the default minimum time once made the calibrate example exit 2). The README's worked
runs then run on the CPU (with the test budgets added, so they finish in seconds) and end
with the exit status the README prints."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import FAST
from harness.cli import main
from harness.cli.common import BENCH_NAMES, options_from

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SYNOPSIS = ROOT / "docs" / "reference" / "cli.md"      # `zlh show [OPTIONS] RUN_DIR` forms
FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
OUTPUT = re.compile(r"^zlh [\w-]+:")                    # a line zlh printed, not a command


def documented_commands(pages=PAGES) -> list[tuple[str, str]]:
    """(page, command) for every `zlh …` line of a fenced block (`$ ` prompts dropped,
    `\\` continuations joined, trailing `# comments` cut)."""
    found = []
    for page in pages:
        if page == SYNOPSIS:
            continue
        for block in FENCE.finditer(page.read_text(encoding="utf-8")):
            lines = block.group(2).splitlines()
            prompted = any(line.startswith("$ ") for line in lines)   # the rest is output
            i = 0
            while i < len(lines):
                line = lines[i].strip()
                while line.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line[:-1].rstrip() + " " + lines[i].strip()
                i += 1
                if prompted and not line.startswith("$ "):
                    continue
                line = line[2:] if line.startswith("$ ") else line
                if line.startswith("zlh ") and not OUTPUT.match(line):
                    found.append((str(page.relative_to(ROOT)),
                                  re.split(r"\s+#\s", line, maxsplit=1)[0].strip()))
    return found


def leaf_context(args: list[str]) -> click.Context:
    """The context of the command `args` names, parsed as `zlh` would (UsageError if not)."""
    ctx = main.make_context("zlh", list(args))
    command, rest = main, _unparsed(ctx)
    while isinstance(command, click.Group):
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)
        rest = _unparsed(ctx) if isinstance(command, click.Group) else []
    return ctx


def _unparsed(ctx: click.Context) -> list[str]:
    """A group's subcommand and its arguments (click 8.2 keeps the first apart)."""
    first = ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args
    return [*first, *ctx.args]


COMMANDS = documented_commands()


def test_the_docs_show_commands():
    pages = {page for page, _ in COMMANDS}
    assert "README.md" in pages and len(COMMANDS) > 40
    assert any("calibrate" in cmd and "--backend cpu" in cmd for _, cmd in COMMANDS)


@pytest.mark.parametrize("page,command", COMMANDS, ids=[f"{p}: {c[:60]}" for p, c in COMMANDS])
def test_every_documented_command_parses_and_its_options_hold(page, command):
    try:
        ctx = leaf_context(shlex.split(command)[1:])
    except click.exceptions.Exit:        # --help
        return
    except click.ClickException as exc:
        pytest.fail(f"{page}: `{command}`: {exc.format_message()}")
    if any(name in ctx.params for name in BENCH_NAMES):
        try:
            options_from(ctx.params)
        except Exception as exc:  # noqa: BLE001 - the message is the finding
            pytest.fail(f"{page}: `{command}`: {exc}")


def readme_worked_runs() -> list[tuple[str, int]]:
    """The README's worked runs: (command, the exit status the README shows: 1 where an
    `echo $?` under it prints 1, else 0)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Four worked runs"):text.index("## Commands")]
    runs = []
    for block in FENCE.finditer(section):
        lines = block.group(2).splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ zlh "):
                status = next((int(lines[j + 1]) for j in range(i + 1, len(lines) - 1)
                               if lines[j] == "$ echo $?"), 0)
                runs.append((line[2:], status))
    return runs


@pytest.mark.e2e
def test_the_readme_worked_runs_run_on_a_cpu(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)             # their runs/ go here
    runs = readme_worked_runs()
    assert [cmd.split()[1] for cmd, _ in runs] == ["bench", "ab", "screen", "batch"]
    for command, status in runs:
        fewer = ["--rounds", "2"] if "--rounds" in command else []     # the same path, sooner
        result = CliRunner().invoke(main, [*shlex.split(command)[1:], *FAST, *fewer])
        assert result.exit_code == status, f"`{command}`: {result.output[-2000:]}"
