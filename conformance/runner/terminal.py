"""The in-process pytest plugins of ``dra-conformance run`` (``pytest.main(..., plugins=[...])``):

- :class:`Counter`: the test outcomes of the verdict line;
- :class:`ExitOnce`: a run stopped by ``pytest.exit`` before its tests (the harness's set-up:
  conformance/plugin.py and conformance/runner/plan.py turn a bad input or an unusable cluster into
  ``pytest.exit(reason, returncode=3|4)``) names the reason once (breaker B6, also s15 C5: every refusal
  printed its reason twice).

Why the reason was printed twice (pytest 9.2 ``_pytest/main.py`` ``wrap_session``): an ``Exit`` raised in
``pytest_configure`` or ``pytest_sessionstart`` (``initstate < 2``) is written to stderr as ``Exit: <reason>``
and then handed to ``pytest_keyboard_interrupt``, whose terminal reporter keeps it and prints it again at
``pytest_unconfigure`` as ``! _pytest.outcomes.Exit: <reason> !`` (``_pytest/terminal.py``
``_report_keyboardinterrupt``). An ``Exit`` raised later (a test, a fixture) has no stderr line: the terminal
line is its only one, and stays. Ctrl-C is never an ``Exit``: its ``! KeyboardInterrupt !`` line stays.
"""

from __future__ import annotations

import pytest


class Counter:
    """Counts test outcomes for the verdict line: ``counts`` (``passed``, ``failed``, ``skipped``, ``error``), a
    failed setup or teardown being an error."""

    def __init__(self) -> None:
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.failed:
                self.counts["failed" if report.when == "call" else "error"] += 1
            else:
                self.counts["skipped" if report.skipped else "passed"] += 1
        elif report.when == "teardown" and report.failed:
            self.counts["error"] += 1


class ExitOnce:
    """Drops the terminal reporter's copy of an ``Exit`` that pytest already wrote to stderr (one raised before
    ``pytest_sessionstart`` completed), so the reason is printed once, as ``Exit: <reason>`` on stderr. Touches
    the reporter's ``_keyboardinterrupt_memo`` (pytest's own name since pytest 3; were it renamed, the line
    would show twice again, nothing worse: tests/harness/test_run_terminal.py would say so)."""

    def __init__(self) -> None:
        self.config = None
        self.started = False  # pytest_sessionstart completed: pytest no longer writes an Exit to stderr

    def pytest_configure(self, config):
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session):
        result = yield  # an Exit raised inside propagates: started stays False
        self.started = True
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_keyboard_interrupt(self, excinfo):
        if self.started or self.config is None or not isinstance(excinfo.value, pytest.exit.Exception):
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and getattr(reporter, "_keyboardinterrupt_memo", None) is not None:
            reporter._keyboardinterrupt_memo = None
