"""Seams of the `dra-conformance` command line that the plugin and the lab share (the lab may import
conformance.core, not conformance.cli): a command group that more than one distribution fills, e.g. ``images``
(the plugin's ``images list``, the lab's ``images build|export|import|cache``); how a long command is interrupted
(:func:`sigterm_as_interrupt`), and the steps an interrupt must not cut in two (:func:`signals_deferred`)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading

_ACTIONS = "_dra_conformance_actions"  # attribute of a group's parser holding its subparsers action


def group(subparsers, name: str, help_text: str, metavar: str = "ACTION") -> argparse._SubParsersAction:
    """The subcommands of command ``name`` under ``subparsers`` (an argparse subparsers action), creating the
    command on first use: whichever distribution registers first creates it, the others add their actions to
    it. ``help_text`` is used only by the first. Raises ValueError when ``name`` exists but is not a group."""
    parser = subparsers.choices.get(name)
    if parser is None:
        parser = subparsers.add_parser(name, help=help_text, description=help_text)
        setattr(parser, _ACTIONS, parser.add_subparsers(dest=f"{name}_command", required=True, metavar=metavar))
    actions = getattr(parser, _ACTIONS, None)
    if actions is None:
        raise ValueError(f"dra-conformance {name} is a command, not a group: register its actions elsewhere")
    return actions


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While the block runs, SIGTERM raises KeyboardInterrupt in the main thread, as Ctrl-C (SIGINT) does, so
    every command cleans up the same way on either (CI runners, ``timeout`` and ``kubectl delete pod`` send
    SIGTERM; ``cluster up`` tears down what it started, ``install`` removes its cluster, ``run`` tears down and
    prints VERDICT: INTERRUPTED). The previous handler is restored after the block. Outside the main thread
    (where Python cannot set handlers) it does nothing. The one mechanism: `dra-conformance` wraps every
    command in it (conformance/cli.py), tools wrap their own main in it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:  # signals_deferred(ignore_after=True): exiting
            signal.signal(signal.SIGTERM, previous)


_DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_deferred(ignore_after: bool = False):
    """While the block runs, SIGINT and SIGTERM are noted instead of acted on; when it ends the previous
    handlers are back and each noted signal is raised again (:func:`signal.raise_signal`), so it acts as it
    would have: KeyboardInterrupt under :func:`sigterm_as_interrupt`, the default action otherwise. For steps
    that must not be cut in two: spawning a process and recording it (an interrupt between them leaks a
    process nobody stops), and a tear-down (a second Ctrl-C would abort it half-way). Yields the list of noted
    signal numbers (for a message after the block). Nestable; outside the main thread it defers nothing.
    Python-level handlers, not ``pthread_sigmask``: a mask is inherited across fork and exec, so a child
    started inside the block would ignore the SIGTERM of a later tear-down. ``ignore_after``: for the last step
    of a process that exits as interrupted (an interrupted bring-up's tear-down): SIGINT and SIGTERM stay ignored
    after the block and a noted one raises KeyboardInterrupt, so a Ctrl-C held down cannot kill the interpreter
    on its way out (exit 130, not 2: breaker s13 B8)."""
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    previous = {sig: signal.signal(sig, lambda signum, _frame: noted.append(signum)) for sig in _DEFERRED}
    try:
        yield noted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_IGN if ignore_after else handler)
        if ignore_after and noted:
            raise KeyboardInterrupt
        for sig in dict.fromkeys(noted):  # once each, in arrival order
            signal.raise_signal(sig)
