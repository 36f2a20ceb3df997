"""pytest plugin of the reporting layer (entry point ``dra_conformance_reporting``).

Active only when a report directory is set (``--report-dir``, normally registered by the harness plugin;
registered here only when no other plugin did). Then it:

* points allure-pytest at ``<report_dir>/allure-results`` and ``--junitxml`` at ``<report_dir>/junit.xml``
  unless the user chose other paths;
* labels every test for Allure from its markers and run.json (:mod:`conformance.reporting.labels`);
* on a failing phase, labels the failure class (:mod:`conformance.reporting.classify`) and calls
  ``pytest_dra_collect_evidence`` (:mod:`conformance.reporting.hookspecs`), attaching every piece to the
  Allure result and copying it under ``<report_dir>/evidence/<test-id>/``.

The report itself (summary.json, HTML...) is built after pytest by :func:`conformance.reporting.build.generate`;
a plain ``pytest`` session still ends with the run's verdict line (conformance/reporting/scope.py).
"""

from __future__ import annotations

import inspect
import pathlib

import allure
import pytest

from conformance.core import options
from conformance.reporting import classify, evidence, hookspecs, labels, runinfo, scope

OPTION = "--report-dir"


def pytest_addhooks(pluginmanager):
    """Add ``pytest_dra_collect_evidence``."""
    pluginmanager.add_hookspecs(hookspecs)


def _option_taken(parser) -> bool:
    groups = list(getattr(parser, "_groups", [])) + [getattr(parser, "_anonymous", None)]
    return any(OPTION in arg.names() for g in groups if g is not None for arg in g.options)


def pytest_addoption(parser):
    """Register ``--report-dir`` only when no other plugin (the harness) has."""
    if _option_taken(parser):
        return
    try:
        parser.getgroup("dra-conformance").addoption(
            OPTION,
            dest="report_dir",
            default=None,
            metavar="DIR",
            help=options.BY_DEST["report_dir"].help,  # the text `dra-conformance run --help` shows
        )
    except ValueError:  # registered meanwhile by another plugin in the same group
        pass


def report_dir_of(config) -> pathlib.Path | None:
    """The report directory of this pytest run, ``None`` when reporting is off."""
    value = config.getoption("report_dir", default=None)
    return pathlib.Path(value).resolve() if value else None


ACTIVE_NAME = "dra_conformance_reporting_active"


@pytest.hookimpl(optionalhook=True)
def pytest_dra_report_dir(config):
    """The harness chose the report directory (conformance/hookspecs.py): turn reporting on."""
    activate(config)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Activate reporting when ``--report-dir`` was given (before allure-pytest and junitxml configure)."""
    activate(config)


def activate(config) -> bool:
    """Turn reporting on for ``config`` if it has a report directory; idempotent; returns whether active.

    The harness calls the ``pytest_dra_report_dir`` hook from its ``tryfirst`` ``pytest_configure`` after it
    sets ``config.option.report_dir`` (the default ``reports/<run-id>``): allure-pytest and junitxml read
    their output paths in their own (later) ``pytest_configure``.
    """
    if config.pluginmanager.has_plugin(ACTIVE_NAME):
        return True
    root = report_dir_of(config)
    if root is None:
        return False
    root.mkdir(parents=True, exist_ok=True)
    refuse_earlier_results(config, root)
    if hasattr(config.option, "allure_report_dir") and not config.option.allure_report_dir:
        config.option.allure_report_dir = str(root / "allure-results")
    if hasattr(config.option, "xmlpath") and not config.option.xmlpath:
        config.option.xmlpath = str(root / "junit.xml")
    config.pluginmanager.register(ReportingPlugin(root), ACTIVE_NAME)
    return True


def refuse_earlier_results(config, root: pathlib.Path) -> None:
    """Raise ``pytest.UsageError`` (exit 4) naming the directory and the fix when this session's Allure results
    directory (the user's ``--alluredir``, else ``<root>/allure-results``) already holds results of an earlier
    run: two runs' results never mix in one verdict (a retry's pass would hide a failure, breaker s15 C1).
    Not in an xdist worker (the controller checked before any test ran) nor with allure's
    ``--clean-alluredir``."""
    if hasattr(config, "workerinput") or getattr(config.option, "clean_alluredir", False):
        return
    folder = pathlib.Path(getattr(config.option, "allure_report_dir", None) or root / "allure-results")
    if folder.is_dir() and next(folder.glob("*-result.json"), None) is not None:
        raise pytest.UsageError(
            f"{folder} already holds the results of an earlier run: the results of two runs must not mix; fix: "
            "give a new --report-dir (or --alluredir), or remove that directory first"
        )


class ReportingPlugin:
    """Per-run state: the report directory and the (lazily read) run.json."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self._run: dict | None = None

    def run(self) -> dict:
        """run.json, read at the first test (the harness writes it at session start)."""
        if not self._run:
            self._run = runinfo.load(self.root)
        return self._run

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        """Label the test (before skip markers or fixtures can end its setup)."""
        found = labels.for_test(list(item.iter_markers()), self.run())
        for label_type, value in found.labels + (("nodeid", item.nodeid),):
            item.add_marker(pytest.mark.allure_label(value, label_type=label_type))
        for url, name in found.links:
            item.add_marker(pytest.mark.allure_link(url, link_type="link", name=name))
        if item.config.pluginmanager.has_plugin("allure_listener"):
            for name, value in found.parameters:
                allure.dynamic.parameter(name, value)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Outermost, after the harness's teardown and pytest's summary: the verdict of a plain ``pytest suites
        --driver X`` session, by the function ``dra-conformance run`` uses (:func:`scope.at_session_finish`):
        one ``VERDICT:`` line, and exit status 1 where pytest passed but the verdict rules fail."""
        result = yield
        if hasattr(session.config, "workerinput") or session.config.option.collectonly:  # nothing to judge here
            return result
        allure_dir = getattr(session.config.option, "allure_report_dir", None)  # the user's --alluredir
        line, fails = scope.at_session_finish(self.root, int(session.exitstatus), allure_dir)
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if line and tr is not None:
            tr.write_line(f"[dra-conformance] {line}")
        if fails:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return result

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """On a failing phase: failure class label and evidence."""
        outcome = yield
        report = outcome.get_result()
        if not report.failed or call.excinfo is None:
            return
        if not item.config.pluginmanager.has_plugin("allure_listener"):
            return
        # a dynamic label: allure-pytest has already read the markers when a teardown fails
        allure.dynamic.label("failure_class", classify.classify(call.excinfo.value))
        for index, (name, data, mime) in enumerate(collect_evidence(item, call)):
            path = evidence.write_copy(self.root, item.nodeid, call.when, index, name, data, mime)
            allure.attach(data, name=name, attachment_type=mime, extension=path.suffix.lstrip("."))


def collect_evidence(item, call) -> list[tuple[str, bytes, str]]:
    """Call every ``pytest_dra_collect_evidence`` implementation; returns normalised pieces.

    An implementation that raises or returns malformed pieces yields a text piece describing that error
    (the test's own failure stays the reported failure).
    """
    pieces: list[tuple[str, bytes, str]] = []
    for impl in item.config.hook.pytest_dra_collect_evidence.get_hookimpls():
        who = impl.plugin_name
        try:
            kwargs = {"item": item, "call": call}
            wanted = set(inspect.signature(impl.function).parameters)
            result = impl.function(**{k: v for k, v in kwargs.items() if k in wanted}) or []
            pieces.extend(evidence.normalise(p) for p in result)
        except Exception as exc:  # noqa: BLE001 - reported as evidence, never hides the test failure
            text = f"pytest_dra_collect_evidence in {who} raised {type(exc).__name__}: {exc}"
            pieces.append((f"evidence-error {pathlib.PurePath(who).name}.txt", text.encode(), "text/plain"))
    return pieces
