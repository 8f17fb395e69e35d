"""The progress bar (tqdm) of batch, screen, ab, product and campaign: on a terminal each
line is written whole above the bar, never glued to it; elsewhere there is no bar at all."""
from __future__ import annotations

import io
import re

from harness.common.progress import Meter


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_lines_are_plain_and_no_bar_is_drawn():
    stream, lines = io.StringIO(), []
    with Meter("batch", total=2, stream=stream) as meter:
        echo = meter.counted(lines.append)
        echo("[1/2] PASS        0.1s add")
        echo("[2/2] PASS        0.1s softmax")
    assert lines == ["[1/2] PASS        0.1s add", "[2/2] PASS        0.1s softmax"]
    assert stream.getvalue() == "" and not meter.shown


def test_on_a_terminal_the_line_is_never_glued_to_the_bar():
    screen = Terminal()

    def echo(line: str) -> None:           # stdout and stderr on one terminal
        screen.write(line + "\n")

    with Meter("batch", stream=screen) as meter:
        meter.set_total(2)
        out = meter.counted(echo)
        out("[1/2] PASS        0.1s add")
        out("[2/2] PASS        0.1s softmax")
    text = screen.getvalue()
    assert "1/2 elapsed" in text and "eta" in text        # the bar was drawn, with an ETA
    for line in ("[1/2] PASS        0.1s add", "[2/2] PASS        0.1s softmax"):
        # the bar is cleared (\r ... \r) before each line: the line starts a row of its own
        assert re.search(r"\r\s*\r" + re.escape(line) + "\n", text), text
    assert not re.search(r"eta \S+\[", text)               # `…eta 0:00:03[2/2] PASS`


def test_the_bar_counts_from_the_lines_and_from_advance():
    with Meter("product", total=3, stream=Terminal()) as meter:
        meter.counted(lambda line: None)("[2/5] add r1 A rc=0 1.0s")
        assert (meter.bar.n, meter.bar.total) == (2, 5)
        meter.advance()
        assert meter.bar.n == 3
    assert meter.bar is None                                  # closed with the command


def test_a_campaign_has_one_bar_over_every_cards_runs(tmp_path):
    import threading
    from types import SimpleNamespace

    from harness.cli.campaign import _overall

    plan = SimpleNamespace(root=tmp_path, rounds=2,
                           part=SimpleNamespace(assignment={0: ["add", "mm"], 1: ["softmax"]}))
    (tmp_path / "card0").mkdir()
    (tmp_path / "card1").mkdir()
    (tmp_path / "card0" / "status.tsv").write_text("round\top\n1\tadd\n1\tadd\n")
    meter = Meter("campaign", stream=Terminal())
    with meter, _overall(plan, meter, every_s=0.01):
        assert (meter.bar.n, meter.bar.total) == (2, 12)        # 3 ops x 2 sides x 2 rounds
        (tmp_path / "card1" / "status.tsv").write_text("round\top\n1\tsoftmax\n")
        seen = threading.Event()
        for _ in range(500):
            if meter.bar.n == 3:
                seen.set()
                break
            seen.wait(0.01)
        assert seen.is_set(), meter.bar.n
