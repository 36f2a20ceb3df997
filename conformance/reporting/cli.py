"""``dra-conformance report RUN_DIR`` and :func:`generate`, which builds every report file of a run.

From ``RUN_DIR/allure-results`` and ``RUN_DIR/run.json`` it writes: ``summary.json`` (schema-validated),
``summary.md``, a normalised ``junit.xml`` (built from the Allure results when pytest wrote none), Allure
side files, ``allure-report/`` (Allure 3 HTML, with history from the previous run) and the ``latest``
symlink next to the run. Idempotent: running it twice gives the same report.
"""
from __future__ import annotations

import argparse
import logging
import pathlib
import time

from conformance.reporting import browser, history, html, junit, markdown, results, runinfo, summary

Verdict = summary.Verdict
log = logging.getLogger(__name__)


def _check_run_dir(run_dir: pathlib.Path) -> None:
    if not (run_dir / "allure-results").is_dir():
        raise FileNotFoundError(f"{run_dir}: no allure-results/ inside; pass a run directory such as "
                                f"reports/<run-id> written by `dra-conformance run` (or pytest --report-dir)")


def write_junit(run_dir: pathlib.Path, run: dict, records: list[results.TestRecord]) -> dict:
    """Normalise (or build) ``run_dir/junit.xml``; returns its counts."""
    name = f"dra-conformance k8s-{runinfo.k8s_minor(run)} {runinfo.driver_name(run)}"
    path = run_dir / "junit.xml"
    if path.is_file() and path.stat().st_size > 0:
        return junit.normalise(path, name)
    return junit.from_records(records, path, name)


def generate(run_dir: str | pathlib.Path, *, html_report: bool = True, link_latest: bool | None = None,
             single_file: bool = False) -> Verdict:
    """Build every report file of ``run_dir``; returns the run's :class:`Verdict`.

    ``html_report=False`` skips the Allure CLI (summary and JUnit only); ``single_file`` also writes
    ``allure-report-single/index.html`` (one self-contained file for CI artifacts). ``link_latest``: update
    ``<parent>/latest`` (default: yes, except for the cells of a matrix). Raises ``FileNotFoundError`` when
    ``run_dir`` has no allure-results, :class:`html.ReportError` when the Allure CLI fails (summary.json and
    junit.xml are written before), ``jsonschema.ValidationError`` on a summary that breaks the schema.
    """
    run_dir = pathlib.Path(run_dir).resolve()
    _check_run_dir(run_dir)
    run = runinfo.load(run_dir)
    records = results.load(run_dir / "allure-results")
    data = summary.build(run_dir)
    path = summary.write(run_dir, data)
    (run_dir / "summary.md").write_text(markdown.render(data), encoding="utf-8")
    write_junit(run_dir, run, records)
    html.write_side_files(run_dir / "allure-results", run)
    if html_report:
        hist = history.prepare(run_dir)
        name = f"DRA qualification: {runinfo.driver_name(run)} on Kubernetes {runinfo.k8s_minor(run)}"
        took = html.generate(run_dir, run_dir / "allure-results", hist, name, [runinfo.k8s_minor(run)],
                             ["summary.md", "summary.json"], single_file)
        log.info("allure report generated in %.1fs: %s", took, run_dir / "allure-report" / "index.html")
    if link_latest if link_latest is not None else not history.in_matrix(run_dir):
        history.update_latest(run_dir)
    return Verdict(passed=data["verdict"] == "PASS", reasons=tuple(data["verdictReasons"]), summary_path=path)


def screenshot(run_dir: str | pathlib.Path, name: str = "report-overview.png") -> pathlib.Path:
    """Serve ``run_dir/allure-report`` on 127.0.0.1 and save a screenshot of its overview into ``run_dir``.
    Raises :class:`browser.BrowserError` when chromium is missing or fails."""
    run_dir = pathlib.Path(run_dir).resolve()
    with browser.serve(run_dir / "allure-report") as url:
        return browser.screenshot(url + "index.html", run_dir / name)


def _run(args: argparse.Namespace) -> int:
    start = time.monotonic()
    if history.is_matrix(args.run_dir):
        from conformance.reporting import matrix
        argv = ["--merge-only", str(args.run_dir)] + (["--no-html"] if args.no_html else [])
        return matrix.main(argv)
    try:
        verdict = generate(args.run_dir, html_report=not args.no_html, single_file=args.single_file)
    except (FileNotFoundError, ValueError, html.ReportError) as exc:
        print(f"error: {exc}")
        return 2
    print(f"{verdict.text}: {verdict.summary_path} ({time.monotonic() - start:.1f}s)")
    if args.screenshot and not args.no_html:
        try:
            print(f"screenshot: {screenshot(args.run_dir)}")
        except browser.BrowserError as exc:
            print(f"error: {exc}")
            return 2
    for reason in verdict.reasons:
        print(f"  - {reason}")
    return verdict.exit_code


def register(subparsers) -> None:
    """Add the ``report`` subcommand (exit 0 PASS, 1 FAIL, 2 bad input or report error)."""
    parser = subparsers.add_parser("report", help="(re)generate summary, JUnit and HTML of a run directory",
                                   description=__doc__)
    parser.add_argument("run_dir", type=pathlib.Path, metavar="RUN_DIR",
                        help="a run directory, e.g. reports/latest or reports/<run-id>")
    parser.add_argument("--no-html", action="store_true", help="skip the Allure HTML report")
    parser.add_argument("--single-file", action="store_true",
                        help="also write allure-report-single/index.html (self-contained, for CI artifacts)")
    parser.add_argument("--screenshot", action="store_true",
                        help="also save RUN_DIR/report-overview.png (headless chromium)")
    parser.set_defaults(func=_run)
