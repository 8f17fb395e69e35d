"""A KeyboardInterrupt that an op's code raises itself is its failure, not Ctrl-C: zlh's SIGINT
handler notes each SIGINT, and only a KeyboardInterrupt with none noted is the code's own;
with SIGINT ignored every one is. Where another handler is in place (an embedding program's),
every one is taken for Ctrl-C."""
from __future__ import annotations

import os
import signal

import pytest

from harness.common import process


@pytest.fixture
def handlers(monkeypatch):
    monkeypatch.setattr(process, "_SIGINTS", [])
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, *process.TERMINATING)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def caught(fn) -> BaseException:
    try:
        fn()
    except KeyboardInterrupt as exc:
        return exc
    raise AssertionError("no KeyboardInterrupt")


def raise_it():
    raise KeyboardInterrupt


def test_the_codes_own_interrupt_is_told_from_a_sigint(handlers):
    saved = process.install_terminate_handlers(lambda signum: None)
    assert signal.SIGINT in saved
    assert process.raised_by_code(caught(raise_it))
    assert not process.raised_by_code(ValueError("not an interrupt"))

    def sigint():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000_000):       # the handler runs between two of these
            pass
    assert not process.raised_by_code(caught(sigint))
    assert not process.raised_by_code(caught(raise_it))     # after a SIGINT: all are Ctrl-C
    process.restore_handlers(saved)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_zlhs_handler_every_interrupt_is_ctrl_c(handlers):
    assert not process.raised_by_code(caught(raise_it))
    signal.signal(signal.SIGINT, lambda signum, frame: None)     # an embedding program's
    process.install_terminate_handlers(lambda signum: None)
    assert signal.getsignal(signal.SIGINT) is not process._noted_sigint   # left in place
    assert not process.raised_by_code(caught(raise_it))


def test_with_sigint_ignored_every_interrupt_is_the_codes_own(handlers):
    """Started with SIGINT ignored (a background job, `nohup`): zlh installs no handler, and
    no SIGINT can come, so a KeyboardInterrupt is the code's own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    saved = process.install_terminate_handlers(lambda signum: None)
    assert signal.SIGINT not in saved and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert process.raised_by_code(caught(raise_it))
