"""A KeyboardInterrupt that an op's code raises itself is its failure, not Ctrl-C: zlh's SIGINT
handler notes each SIGINT, and only a KeyboardInterrupt with none noted is the code's own;
with SIGINT ignored every one is. Where another handler is in place (an embedding program's),
every one is taken for Ctrl-C."""
from __future__ import annotations

import json
import os
import signal

import pytest

from harness.common import process


@pytest.fixture
def handlers(monkeypatch):
    monkeypatch.setattr(process, "_CAUGHT", [])
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


@pytest.mark.parametrize("wrapped", ["signal_wrapped", "adapter_signal_wrapped"])
def test_a_sigterm_the_ops_code_wraps_in_its_own_error_still_ends_the_run(
        handlers, tmp_path, fast_rule, fast_budget, wrapped):
    """Triton's interpreter raises InterpreterError for whatever a kernel raised, and a library
    may catch everything: the SIGTERM that came mid-case (or while the adapter made the next
    case) still ends the run (interrupted, the cases before it kept), not a failed case
    followed by the rest of the op, nor an adapter failure."""
    from harness.common.errors import Terminated
    from harness.run.runner import run_op
    from harness.store.reader import read_rows
    from scripted import plan_for

    def raise_terminated(signum):
        raise Terminated(signum)
    saved = process.install_terminate_handlers(raise_terminated)
    try:
        plan = plan_for(["ok", wrapped, "ok"], tmp_path, fast_rule, fast_budget)
        with pytest.raises(Terminated) as ended:
            run_op(plan, "op", echo=lambda _: None)
    finally:
        process.restore_handlers(saved)
    assert ended.value.signum == signal.SIGTERM and ended.value.code == 128 + signal.SIGTERM
    (run_dir,) = (tmp_path / "runs").iterdir()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "interrupted" and info["reason"] == "SIGTERM"
    assert [row.shape_detail for row in read_rows(run_dir / "results.jsonl")] == ["8x0"]
    with process.signals_kept():        # a block after that signal: it is not raised again
        pass
