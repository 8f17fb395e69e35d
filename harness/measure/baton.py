"""Two processes taking turns on one device, sample by sample.

Why: a GEMM under the card's power cap measured one side after the other (a whole window of
A, then of B) reads the card's power state at the time, not the kernel: on an H200, a planted
0.3 % on mm/addmm at 2048² and 4096² had a per-round delta sd of 2.7–5.7 % so, and 0.03–0.25 %
when the two sides took turns sample by sample, with the device drained and 50 µs of host
time between turns (tests/device/interleave_ab.py; tests/device/README.md, twenty-first set).
The two sides of an A/B are two processes (two compiler or library builds), so their turns
pass between processes: this module is the baton.

`Baton(token, side)` is one side's end: a datagram socket in Linux's abstract namespace named
after `token` (which the two sides share, e.g. from the round's parent) and the side's label,
so nothing is left on disk and no path length applies. Messages are small JSON objects.

- `meet(name, case)`: a barrier — both sides reached `name` of case `case` (both built the
  case's inputs; both finished it, so neither builds the next case while the other times).
- `take_turns(first, sample, max_blocks)`: the turns of one case in ABBA order (the first side
  takes one sample, the other two, the first one: a block, each side two samples; blocks go
  on while either side's `sample()` says it wants more, at most `max_blocks`). `sample()`
  takes one sample, drained before and after (the caller's timer does that), and returns
  whether its side wants more. Both sides end a case with the same number of samples.

`SampleTurns(baton, first)` is what a timer takes (`timers`, `turns=`): each measurement the
timer makes is a case (both sides' timers measure the same cases in the same order, each
labelled — op, dtype, shape — and a label that differs from the peer's is a lost peer). A case
is met `ready` (both built it and ran it once: compilation overlaps freely), prepared in turn
(the first side estimates, warms up and captures while the other waits, then the other), sampled
in turns (one sample and a device sync per turn) and met `done`. The time a side spends waiting
for its peer (`waited_s`) is not its own: a timer's time budget counts without it. `agree(flag)`
is a joint decision (either side's flag: a throttle retry both take or neither). Once the peer is
lost, `lost` says why, the peer is told (`LEFT`, so it does not wait out the timeout), and the
timer samples on alone.

A peer whose process ended (its pid comes with each message), whose socket is gone after it
answered once, that said it left, or that does not answer within `timeout_s` (at a case's
start `READY_TIMEOUT_S`: the peer may still be compiling the case) raises `PeerLost` on the
side waiting for it, within `POLL_S` of its end: the caller measures on alone and says so.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from typing import Callable

TIMEOUT_S = 120.0      # a peer silent this long is lost
READY_TIMEOUT_S = 900.0    # at a case's start: the peer may be compiling the case (its process
                           # is watched meanwhile: one that ends is lost at once)
RETRY_S = 0.005        # between tries to reach a peer whose socket is not there yet
POLL_S = 0.2           # how often a side waiting for its peer checks that it still runs
TURN, STOP, MEET, LEFT = "turn", "stop", "meet", "left"


class PeerLost(RuntimeError):
    """The other side stopped answering (ended, hung, or out of step)."""


def address(token: str, side: str) -> bytes:
    """The abstract socket name of `side`'s end of the baton `token`."""
    return f"\0zlh-baton-{token}-{side}".encode()


def running(pid: int) -> bool:
    """Whether process `pid` still runs (an ended child not yet waited for does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Baton:
    """One side's end of the baton between two processes (see the module's text)."""

    def __init__(self, token: str, side: str, peer: str, timeout_s: float = TIMEOUT_S):
        if not sys.platform.startswith("linux"):
            raise OSError("taking turns between processes needs Linux (abstract sockets)")
        if side == peer:
            raise ValueError(f"a baton joins two sides, not {side!r} with itself")
        self.side, self.peer, self.timeout_s = side, peer, timeout_s
        self._peer_address = address(token, peer)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(address(token, side))
        self.peer_pid: int | None = None   # from the peer's first message
        self.waited_s = 0.0                # time spent waiting for the peer's messages

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> "Baton":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, kind: str, case: int, **fields) -> None:
        """A message to the peer; waits (up to timeout_s) for its socket to exist."""
        data = json.dumps({"kind": kind, "case": case, "pid": os.getpid(), **fields}).encode()
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                self._socket.sendto(data, self._peer_address)
                return
            except (ConnectionRefusedError, FileNotFoundError):
                if self.peer_pid is not None:      # it was there: its process closed it
                    raise PeerLost(f"side {self.peer} closed its end of the baton") from None
                if time.monotonic() > deadline:
                    raise PeerLost(f"side {self.peer} never opened its end of the baton "
                                   f"({self.timeout_s:g} s)") from None
                time.sleep(RETRY_S)

    def leave(self, reason: str) -> None:
        """Tell the peer (best effort, no wait) that this side goes on alone."""
        data = json.dumps({"kind": LEFT, "pid": os.getpid(), "reason": reason}).encode()
        with contextlib.suppress(OSError):
            self._socket.sendto(data, self._peer_address)

    def receive(self, kinds: tuple[str, ...], case: int,
                timeout_s: float | None = None) -> dict:
        """The peer's next message, which must be one of `kinds` for `case` (within
        `timeout_s`, by default the baton's)."""
        started = time.monotonic()
        try:
            message = self._receive(timeout_s or self.timeout_s)
        finally:
            self.waited_s += time.monotonic() - started
        self.peer_pid = message.get("pid", self.peer_pid)
        if message.get("kind") == LEFT:
            raise PeerLost(f"side {self.peer} went on alone ({message.get('reason')})")
        if message.get("kind") not in kinds or message.get("case") != case:
            raise PeerLost(f"side {self.peer} is out of step: {message.get('kind')} of case "
                           f"{message.get('case')} where {'/'.join(kinds)} of case {case} "
                           f"was due")
        return message

    def _receive(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            self._socket.settimeout(max(0.0, min(POLL_S, deadline - time.monotonic())))
            try:
                data = self._socket.recv(4096)
                break
            except socket.timeout:
                if self.peer_pid is not None and not running(self.peer_pid):
                    raise PeerLost(f"side {self.peer}'s process (pid {self.peer_pid}) "
                                   f"ended") from None
                if time.monotonic() >= deadline:
                    raise PeerLost(f"side {self.peer} sent nothing for "
                                   f"{timeout_s:g} s") from None
        return json.loads(data)

    def meet(self, name: str, case: int, timeout_s: float | None = None, **fields) -> dict:
        """Both sides at `name` of `case` before either goes on; the peer's message."""
        self.send(MEET, case, name=name, **fields)
        return self.expect(name, case, timeout_s)

    def expect(self, name: str, case: int, timeout_s: float | None = None) -> dict:
        """The peer's `name` of `case` (a meeting's other half, or a turn passed by name)."""
        message = self.receive((MEET,), case, timeout_s)
        if message.get("name") != name:
            raise PeerLost(f"side {self.peer} is at {message.get('name')!r} of case {case}, "
                           f"not {name!r}")
        return message

    def take_turns(self, first: bool, sample: Callable[[], bool], case: int,
                   max_blocks: int) -> int:
        """The samples of one case in turns with the peer (ABBA blocks); the number this side
        took. `first`: this side opens each block (and decides when the case ends)."""
        if max_blocks < 1:
            raise ValueError(f"max_blocks {max_blocks}: at least one block")
        taken = 0
        if first:
            for block in range(1, max_blocks + 1):
                sample()
                self.send(TURN, case)
                peer_more = bool(self.receive((TURN,), case).get("more"))
                more = sample()
                taken += 2
                if not (more or peer_more) or block == max_blocks:
                    self.send(STOP, case)
                    return taken
        while self.receive((TURN, STOP), case)["kind"] == TURN:
            sample()
            more = sample()
            taken += 2
            self.send(TURN, case, more=more)
        return taken


class SampleTurns:
    """A timer's samples in turns with the other side's timer (see the module's text)."""

    def __init__(self, baton: Baton, first: bool, max_blocks: int = 2500):
        self.baton, self.first, self.max_blocks = baton, first, max_blocks
        self.cases = 0                     # measurements begun so far
        self.lost: str | None = None       # why the peer was lost, once it was
        self.label: str | None = None      # the next measurement's label (case_timer sets it)
        self._open = False                 # a case begun whose samples are not taken yet

    @property
    def waited_s(self) -> float:
        return self.baton.waited_s

    def begin(self) -> None:
        """A measurement's case: met `ready` (labels compared), then, on the second side, its
        turn to prepare awaited. Called after the measurement's first call."""
        if self._open:           # the previous measurement ended before its samples
            self._lose(PeerLost("a measurement ended before its samples (a failed capture)"))
        if self.lost is not None:
            return
        case, self.cases = self.cases, self.cases + 1
        self._open = True
        try:
            theirs = self.baton.meet("ready", case, READY_TIMEOUT_S,
                                     label=self.label).get("label")
            if theirs != self.label:
                raise PeerLost(f"side {self.baton.peer} measures {theirs!r} where this side "
                               f"measures {self.label!r}")
            if not self.first:
                self.baton.expect("prepare", case)
        except PeerLost as exc:
            self._lose(exc)

    def collect(self, take_one: Callable[[], list[float]],
                enough: Callable[[list[float]], bool]) -> tuple[list[float], bool]:
        """The begun case's samples: (samples, whether the turns ran to the end). Not to the
        end (the peer lost, now or before): the timer goes on alone from these samples."""
        samples: list[float] = []
        if self.lost is not None or not self._open:
            return samples, False
        self._open = False
        case = self.cases - 1

        def sample() -> bool:
            samples.extend(take_one())
            return not enough(samples)

        try:
            self.baton.send(MEET, case, name="prepare")      # this side is ready to sample
            if self.first:
                self.baton.expect("prepare", case)           # the other side prepared
            self.baton.take_turns(self.first, sample, case, self.max_blocks)
            self.baton.meet("done", case)
        except PeerLost as exc:
            self._lose(exc)
            return samples, False
        return samples, True

    def agree(self, flag: bool) -> bool:
        """Either side's `flag` (both sides call it at the same point); this side's alone once
        the peer is lost."""
        if self.lost is not None:
            return flag
        try:
            theirs = self.baton.meet("agree", self.cases, flag=bool(flag)).get("flag")
        except PeerLost as exc:
            self._lose(exc)
            return flag
        return bool(flag or theirs)

    def finish(self, reason: str = "this side's run ended") -> None:
        """The run ends: a peer still waiting is told at once."""
        self.baton.leave(reason)

    def to_dict(self) -> dict:
        return {"first": self.first, "cases": self.cases, "lost": self.lost}

    def _lose(self, exc: PeerLost) -> None:
        self._open = False
        if self.lost is None:
            self.lost = str(exc)
            self.baton.leave(self.lost)
