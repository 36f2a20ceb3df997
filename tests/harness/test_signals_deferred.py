"""Steps an interrupt must not cut in two (conformance.core.commands.signals_deferred; breaker F5 of session 12:
a SIGTERM between spawning a process and recording it leaked a kube-proxy, a second one aborted `cluster up`'s
tear-down): inside the block SIGINT/SIGTERM are noted, after it they act as before. Real signals to this
process."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from conformance.core import commands


def test_a_sigterm_inside_the_block_interrupts_only_after_it(monkeypatch):
    # given: SIGTERM raises KeyboardInterrupt (every command), and a block that must finish
    done = []
    with commands.sigterm_as_interrupt():
        before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
        # when: SIGTERM arrives inside the block
        with pytest.raises(KeyboardInterrupt):
            with commands.signals_deferred() as noted:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # bytecodes run: an undeferred handler would have raised by now
                done.append("finished")
                assert noted == [signal.SIGTERM]
        # then: the block finished first, and the handlers are the previous ones again
        assert done == ["finished"]
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_nothing_is_raised_without_a_signal_and_nested_blocks_keep_it_for_the_outer_one():
    # SIGINT raises KeyboardInterrupt as in a terminal (a test run started in the background of a shell without job
    # control inherits it ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _nested_blocks()
    finally:
        signal.signal(signal.SIGINT, previous)


def _nested_blocks():
    with commands.sigterm_as_interrupt():
        with commands.signals_deferred() as quiet:
            pass
        assert quiet == []
        with pytest.raises(KeyboardInterrupt):
            with commands.signals_deferred() as outer:
                with commands.signals_deferred() as inner:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.05)
                assert inner == [signal.SIGINT] and outer == [signal.SIGINT]  # passed on, not acted on


def test_a_child_started_inside_the_block_still_ends_on_sigterm(tmp_path):
    """Why handlers and not a blocked signal mask: a mask is inherited across exec, and a component started in
    the block would then ignore the SIGTERM of a later tear-down."""
    with commands.signals_deferred():
        child = subprocess.Popen(["sleep", "60"])
    try:
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
