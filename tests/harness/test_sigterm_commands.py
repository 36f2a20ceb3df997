"""SIGTERM interrupts every `dra-conformance` command as Ctrl-C does (issue 27: CI runners and `timeout` send
SIGTERM): the command's own clean-up runs (its ``finally``/``except KeyboardInterrupt``), the CLI exits 2, and the
process's SIGTERM handler is the old one afterwards. Real signals to this process; one mechanism
(conformance.core.commands.sigterm_as_interrupt, wrapped around every command in conformance/cli.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from conformance import cli
from conformance.core import commands


def _parser_with(func):
    """The real root parser class with one command ``slow`` running ``func(args)``."""
    parser = cli.Parser(prog="dra-conformance")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("slow").set_defaults(func=func)
    parser.set_defaults(commands=frozenset(sub.choices))
    return parser


def test_sigterm_in_a_command_runs_its_cleanup_and_exits_2(monkeypatch, capsys):
    cleaned = []

    def slow(_args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # what `timeout` or a CI runner sends mid-command
            signal.sigtimedwait([], 5)  # the handler runs at the next bytecode; never reached
            raise AssertionError("SIGTERM did not interrupt the command")
        finally:
            cleaned.append("torn down")

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(slow))
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["slow"]) == cli.EXIT_INTERRUPTED == 2
    assert cleaned == ["torn down"]
    assert "dra-conformance slow: interrupted" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before, "the previous SIGTERM handler is restored"


def test_a_command_that_handles_the_interrupt_itself_keeps_its_exit_code(monkeypatch):
    def slow(_args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 5)
        except KeyboardInterrupt:
            return 7  # e.g. `run` prints VERDICT: INTERRUPTED and returns its own code
        return 0

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(slow))
    assert cli.main(["slow"]) == 7


def test_outside_the_main_thread_the_handler_is_left_alone():
    import threading  # noqa: PLC0415

    seen = []

    def body():
        with commands.sigterm_as_interrupt():
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=body)
    t.start()
    t.join(10)
    assert seen == [signal.getsignal(signal.SIGTERM)]


def test_a_real_process_sigtermed_mid_command_exits_2_after_its_cleanup(tmp_path):
    # given: a dra-conformance process in a command that sleeps until signalled, cleaning up in `finally`
    marker = tmp_path / "cleaned"
    script = textwrap.dedent(
        f"""
        import sys, time
        from conformance import cli
        def slow(_args):
            try:
                print("started", flush=True)
                time.sleep(60)
            finally:
                open({str(marker)!r}, "w").write("torn down")
        parser = cli.Parser(prog="dra-conformance")
        sub = parser.add_subparsers(dest="command", required=True)
        sub.add_parser("slow").set_defaults(func=slow)
        parser.set_defaults(commands=frozenset(sub.choices))
        cli.build_parser = lambda: parser
        sys.exit(cli.main(["slow"]))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        # when: SIGTERM, as `timeout` sends it
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # then: exit 2 (interrupted), the cleanup ran, no traceback
    err = proc.stderr.read()
    assert code == 2, err
    assert marker.read_text() == "torn down"
    assert "Traceback" not in err and "interrupted" in err, err
