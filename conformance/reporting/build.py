"""The report builder: :func:`generate` writes every report file of one run directory.

From ``RUN_DIR/allure-results`` and ``RUN_DIR/run.json`` it writes: ``summary.json`` (schema-validated),
``summary.md``, a normalised ``junit.xml`` (built from the Allure results when pytest wrote none), Allure
side files, ``allure-report/`` (Allure 3 HTML, with history from the previous run) and the ``latest``
symlink next to the run. Idempotent: running it twice gives the same report. Used by ``dra-conformance
report`` (:mod:`conformance.reporting.cli`), the matrix merge (:mod:`conformance.reporting.matrix`) and the
end of ``dra-conformance run``.
"""

from __future__ import annotations

import json
import logging
import pathlib

from conformance.node import kubelet_latency
from conformance.reporting import (
    browser,
    history,
    html,
    interrupt,
    junit,
    markdown,
    narrowed,
    results,
    runinfo,
    scope,
    summary,
)
from conformance.reporting.cluster_fault import mark_allure, mark_junit
from conformance.reporting.dra_latency import write as write_dra_latency

Verdict = summary.Verdict
log = logging.getLogger(__name__)


def check_run_dir(run_dir: pathlib.Path) -> None:
    """Raise FileNotFoundError naming ``run_dir`` when it has no ``allure-results/``."""
    if not (run_dir / "allure-results").is_dir():
        raise FileNotFoundError(
            f"{run_dir}: no allure-results/ inside; pass a run directory such as "
            f"reports/<run-id> written by `dra-conformance run` (or pytest --report-dir)"
        )


def write_junit(run_dir: pathlib.Path, run: dict, records: list[results.TestRecord]) -> dict:
    """Normalise (or build) ``run_dir/junit.xml``; returns its counts."""
    name = f"dra-conformance k8s-{runinfo.k8s_minor(run)} {runinfo.driver_name(run)}"
    path = run_dir / "junit.xml"
    if path.is_file() and path.stat().st_size > 0:
        return junit.normalise(path, name)
    return junit.from_records(records, path, name)


def scope_properties(data: dict) -> dict[str, str]:
    """Allure environment entries (the report's first screen) from a summary: the verdict line, the mission
    areas qualified and not qualified, and the scope box (conformance/reporting/scope.py :func:`scope.box`)."""
    props = {
        "Verdict": data["verdictLine"],
        "Mission areas qualified": ", ".join(data["qualifiedAreas"]) or "none",
        "Not qualified (no test executed)": ", ".join(data["notQualified"]) or "none",
    }
    return {**props, **{f"Scope: {title}": ", ".join(names) or "none" for title, names in scope.box(data)}}


def generate(
    run_dir: str | pathlib.Path,
    *,
    html_report: bool = True,
    link_latest: bool | None = None,
    single_file: bool = False,
    history_from: pathlib.Path | None = None,
) -> Verdict:
    """Build every report file of ``run_dir``; returns the run's :class:`Verdict`.

    ``html_report=False`` skips the Allure CLI (summary and JUnit only); ``single_file`` also writes
    ``allure-report-single/index.html`` (one self-contained file for CI artifacts). ``link_latest``: update
    ``<parent>/latest`` (default: yes, except for the cells of a matrix). ``history_from``: Allure history
    saved by an earlier night (file or folder, :func:`history.saved_history`) instead of a sibling run's.
    Raises ``FileNotFoundError`` when ``run_dir`` has no allure-results, :class:`html.ReportError` when the
    Allure CLI fails (summary.json and junit.xml are written before), ValueError on a malformed
    ``history_from``, ``jsonschema.ValidationError`` on a summary that breaks the schema.
    """
    run_dir = pathlib.Path(run_dir).resolve()
    check_run_dir(run_dir)
    run = runinfo.load(run_dir)
    interrupt.settle_files(run_dir / "allure-results", bool(run.get("interrupted")))  # no green cut-short test
    records = results.load(run_dir / "allure-results")
    data = summary.build(run_dir)
    path = summary.write(run_dir, data)
    latency = kubelet_latency.summary_line(run_dir)  # NodePrepare/Unprepare latency recorded at the run's end
    timings = run_dir / "timings.json"  # written by `dra-conformance run` (conformance.runner.timings)
    doc = json.loads(timings.read_text(encoding="utf-8")) if timings.is_file() else None
    calls, plots = write_dra_latency(run_dir)  # per-driver NodePrepare/Unprepare p50..max (issue 26 §4)
    (run_dir / "summary.md").write_text(markdown.render(data, doc) + latency + calls, encoding="utf-8")
    write_junit(run_dir, run, records)
    mark_junit(run_dir / "junit.xml", data.get("clusterFault"))  # the driver is not blamed there
    mark_allure(run_dir / "allure-results", data.get("clusterFault"))  # nor in the Allure report's categories
    html.write_side_files(run_dir / "allure-results", run, scope_properties(data))
    if html_report:
        hist = history.prepare(run_dir, history_from)
        name = f"DRA qualification: {runinfo.driver_name(run)} on Kubernetes {runinfo.k8s_minor(run)}"
        if data["narrowed"]:  # the report's title says it too: a narrowed run qualifies nothing
            name = f"DRA narrowed run (not a qualification): {name.split(': ', 1)[1]}"
        else:  # the first screen says what the PASS covers (issue 24 §1)
            name += f" — {data['verdictLine']}"
        took = html.generate(
            run_dir,
            run_dir / "allure-results",
            hist,
            name,
            [runinfo.k8s_minor(run)],
            ["summary.md", "summary.json", *plots],
            single_file,
        )
        log.info("allure report generated in %.1fs: %s", took, run_dir / "allure-report" / "index.html")
    if link_latest if link_latest is not None else not history.in_matrix(run_dir):
        try:
            history.update_latest(run_dir)
        except FileExistsError as exc:  # a directory of the user's own named latest: kept, the report is done
            log.warning("the latest link was not updated: %s", exc)
    return Verdict(
        passed=data["verdict"] in narrowed.PASSING,
        reasons=tuple(data["verdictReasons"]),
        summary_path=path,
        narrowed=data["narrowed"] is not None,
        line=data["verdictLine"],
    )


def screenshot(run_dir: str | pathlib.Path, name: str = "report-overview.png") -> pathlib.Path:
    """Serve ``run_dir/allure-report`` on 127.0.0.1 and save a screenshot of its overview into ``run_dir``.
    Raises :class:`browser.BrowserError` when chromium is missing or fails."""
    run_dir = pathlib.Path(run_dir).resolve()
    with browser.serve(run_dir / "allure-report") as url:
        return browser.screenshot(url + "index.html", run_dir / name)
