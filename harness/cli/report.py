"""`zlh report` (any root zlh writes) and `zlh history` (many roots of one corpus)."""
from __future__ import annotations

from pathlib import Path

import click

from ..ab.render import render_terminal
from ..ab.report import load_report
from ..common import style
from ..common.errors import UsageError
from ..common.files import atomic_write_text, check_output_dir, check_page_file
from ..report import history as history_model
from ..report import history_views, kinds, page, text
from ..report.build import build
from .common import echo_out, handles_errors
from .group import main


FORCE = click.option("--force", is_flag=True,
                     help="Replace the --html FILE even when it is not a page zlh wrote.")


def _page_path(root: Path, html_out: str, force: bool) -> Path:
    """Where the page goes: FILE, or ROOT/report.html for a bare --html."""
    if html_out:
        return check_page_file(html_out, "--html", force)
    check_output_dir(root, "ROOT")
    return root / "report.html"             # the root's own page: zlh's to replace


@main.command()
@click.argument("root", type=click.Path(file_okay=False))
@click.option("--html", "html_out", is_flag=False, flag_value="", default=None,
              metavar="[FILE]",
              help="Write one self-contained page (no network) to FILE; a bare --html writes "
                   "ROOT/report.html.")
@click.option("--top", type=click.IntRange(min=1), default=text.TOP, show_default=True,
              help="Largest changes printed on the terminal.")
@FORCE
@handles_errors
def report(root, html_out, top, force):
    """Print (or render as one HTML page) the report of ROOT: an A/B, calibrate, batch,
    screen, campaign or product run root, its kind read from its files.

    The terminal shows the headline (sides, device, caliber, when, counts) and the largest
    changes; an A/B or calibrate root also prints each op's table. Exit status: 0 printed,
    1 an A/B report holds no op, 2 ROOT is no root zlh wrote."""
    kind = kinds.detect(root)
    path = Path(root)
    target = _page_path(path, html_out, force) if html_out is not None else None
    result = build(path, target.parent if target else path)
    if target is not None:
        click.echo(str(atomic_write_text(target, page.render(result))))
        return
    echo_out(text.render(result, top))
    if kind in (kinds.AB, kinds.CALIBRATE):
        for op_report in load_report(path)[1]:
            echo_out(render_terminal(op_report, colour=style.colour()))


@main.command()
@click.argument("roots", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--html", "html_out", default=None, metavar="FILE",
              help="Write the history as one self-contained page to FILE.")
@click.option("--step-pct", type=click.FloatRange(min=0), default=history_model.STEP_PCT,
              show_default=True,
              help="Medians of two builds closer than this are never a step.")
@FORCE
@handles_errors
def history(roots, html_out, step_pct, force):
    """Line up screen or A/B roots of one corpus by compiler build and date: per op its delta
    over the builds, and the build where it changed (its range over shapes excludes the
    previous build's median by more than --step-pct).

    Exit status: 0 printed, 1 an A/B ROOT's report holds no op (cut short, still running),
    2 a ROOT is no screen or A/B root."""
    if len(set(roots)) < 2:
        raise UsageError("name two or more roots (screen or A/B) to line up")
    for root in roots:
        if kinds.detect(root) not in (kinds.SCREEN, kinds.AB, kinds.CAMPAIGN):
            raise UsageError(f"{root} is a {kinds.detect(root)} root: history lines up "
                             f"screen, A/B and campaign roots")
    target = check_page_file(html_out, "--html", force) if html_out else None
    builds, ops = history_model.line_up(history_model.load(roots), step_pct)
    if target is not None:
        click.echo(str(atomic_write_text(target, history_views.html(builds, ops))))
        return
    echo_out(history_views.text(builds, ops))
