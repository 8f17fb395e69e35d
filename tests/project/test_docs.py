"""The docs stay true: the generated reference pages match the code, every relative link in
README.md and docs/ leads to a file (and heading) that exists, and the README keeps the two
set-up commands CI runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import reference

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!\!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
EXTERNAL = ("http://", "https://", "mailto:")


def prose(path: Path) -> str:
    """The page without fenced code blocks and code spans (code is not a link)."""
    return CODE_SPAN.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation other than `-`
    and `_` removed, spaces to dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = "".join(ch for ch in text.lower() if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        out.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return out


@pytest.mark.parametrize("name", sorted(reference.pages()))
def test_generated_reference_is_current(name):
    committed = reference.DOCS / name
    assert committed.is_file(), f"{committed} is missing: run python -m harness.cli.reference"
    assert committed.read_text(encoding="utf-8") == reference.pages()[name], \
        f"{committed.relative_to(ROOT)} is stale: run python -m harness.cli.reference"


def test_reference_covers_every_command():
    from harness.cli import main
    page = reference.cli_page()
    for command, ctx in reference.walk(main, reference.click.Context(main, info_name="zlh")):
        assert f"## `{ctx.command_path}`" in page
        for option in command.params:
            if isinstance(option, reference.click.Option) and not option.hidden:
                assert f"`{option.opts[0]}`" in page, (ctx.command_path, option.opts)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_somewhere(page):
    broken = []
    for target in LINK.findall(prose(page)):
        if target.startswith(EXTERNAL):
            continue
        file_part, _, fragment = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target}: no heading #{fragment} in {linked.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_docs_exist_and_readme_stays_short():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for page in ("ARCHITECTURE.md", "troubleshooting.md", "reference/cli.md",
                 "reference/formats.md", "reference/files.md"):
        assert (ROOT / "docs" / page).is_file(), page


def test_readme_keeps_the_two_setup_commands_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = "python3 -m pip install torch==2.13.0 -e '.[test,triton,ray,browser]' && python3 -m pytest -q tests"
    assert test_command in readme and test_command in ci
    assert re.search(r"^python3 -m pip install torch==2\.13\.0 -e '\.\[triton\]' && zlh bench ",
                     readme, re.M)
