"""--overlap and --overlap-width of the corpus commands that run ops on this host's devices
(batch, screen): the options, and the checks of a new root's and a resume's values."""
from __future__ import annotations

import click

from ..common import errors
from ..corpus.batch_plan import BatchPlan
from ..corpus.standby import DEFAULT_OVERLAP_WIDTH, MAX_OVERLAP_WIDTH


def overlap_options(command):
    """--overlap and --overlap-width, of the corpus commands that run ops on this host's
    devices (batch, screen); recorded in the root's plan, switchable on --resume."""
    command = click.option(
        "--overlap-width", type=click.IntRange(2, MAX_OVERLAP_WIDTH), default=None,
        metavar="N",
        help=f"With --overlap: untimed ops (a screen's untimed pairs) at once per device, 2 "
             f"to {MAX_OVERLAP_WIDTH}. Default: {DEFAULT_OVERLAP_WIDTH}. With --resume: set it "
             f"for the rest of the root.")(command)
    return click.option(
        "--overlap/--no-overlap", default=None,
        help="Overlap what needs no device: per device a warm spare worker, and several ops "
             "that time nothing (a screen's untimed pairs under --timing changed or none) at "
             "once (--overlap-width), sharing the device's lock (let go while Triton "
             "compiles); an op that times runs alone, after a cool-down of the device where "
             "another process held it last (a screen's two sides do, so under --timing all "
             "it gains only the spare and takes longer). Default: off. With --resume: switch "
             "it for the rest of the root (recorded in its plan).")(command)


def overlap_width_for(executor: str, overlap: bool | None, width: int | None) -> int:
    """The width of a new root's overlap; overlap on Ray, and --overlap-width without
    --overlap, are refused."""
    refuse_overlap_on_ray(executor, overlap)
    if width is not None and not overlap:
        raise errors.UsageError("--overlap-width sets how many ops run at once with --overlap: "
                                "add --overlap, or leave out --overlap-width")
    return width or DEFAULT_OVERLAP_WIDTH


def resumed_overlap(plan: BatchPlan, overlap: bool | None, width: int | None) -> bool:
    """--overlap/--no-overlap and --overlap-width on a resume (after the executor is settled:
    overlap is refused on Ray): `plan` switched for the rest of the root; True when either
    changed (the caller records it). Call it before anything is written."""
    on = plan.overlap if overlap is None else overlap
    if on and plan.executor == "ray":
        raise errors.UsageError("overlap runs with --executor local only (a Ray actor holds its "
                                "GPU alone), and this resume runs on Ray: add --no-overlap")
    if width is not None and not on:
        raise errors.UsageError("--overlap-width sets how many ops run at once with overlap, "
                                "which this root runs without: add --overlap")
    before = (plan.overlap, plan.overlap_width)
    plan.overlap, plan.overlap_width = on, width or plan.overlap_width
    return (plan.overlap, plan.overlap_width) != before


def refuse_overlap_on_ray(executor: str, overlap: bool | None) -> None:
    """Overlap keeps two ops of one device apart with a lock on this host: a Ray actor holds
    its GPU alone, so the two do not go together."""
    if executor == "ray" and overlap:
        raise errors.UsageError("--overlap runs with --executor local only (a Ray actor holds "
                                "its GPU alone); drop one of them")
