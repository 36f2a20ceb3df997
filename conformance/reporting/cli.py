"""``dra-conformance report RUN_DIR``: (re)build the report files of a run (or a matrix) directory.

The builder itself is :func:`conformance.reporting.build.generate` (summary.json, summary.md, junit.xml,
Allure HTML, the ``latest`` symlink); a matrix directory is merged by :mod:`conformance.reporting.matrix`.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from conformance.reporting import browser, build, history, html, matrix, narrowed


def _run(args: argparse.Namespace) -> int:
    start = time.monotonic()
    if not args.run_dir.is_dir():
        print(f"error: {args.run_dir} is not a directory; give a run directory such as reports/latest", file=sys.stderr)
        return 4
    if history.is_matrix(args.run_dir):
        return _merge(args)
    try:
        verdict = build.generate(
            args.run_dir, html_report=not args.no_html, single_file=args.single_file, history_from=args.history_from
        )
    except (FileNotFoundError, ValueError, html.ReportError) as exc:
        return _error(exc)
    print(f"{verdict.line or verdict.text}: {verdict.summary_path} ({time.monotonic() - start:.1f}s)")
    if args.screenshot and not args.no_html:
        try:
            print(f"screenshot: {build.screenshot(args.run_dir)}")
        except browser.BrowserError as exc:
            return _error(exc)
    for reason in verdict.reasons:
        print(f"  - {reason}")
    return verdict.exit_code


def _error(exc: Exception) -> int:
    """Print ``exc`` on stderr; exit 4 for a run directory that cannot be read (missing or malformed results: bad
    input, as for every command), 3 when a tool failed (the Allure CLI, the browser of ``--screenshot``). Never 2,
    which means INTERRUPTED (README "Reading the verdict")."""
    print(f"error: {exc}", file=sys.stderr)
    return 3 if isinstance(exc, (html.ReportError, browser.BrowserError)) else 4


def _merge(args: argparse.Namespace) -> int:
    """Re-merge a matrix directory (``report`` on a matrix); exit 0 PASS, 1 FAIL, 3/4 as :func:`_error`."""
    try:
        data = matrix.merge(args.run_dir, html_report=not args.no_html, history_from=args.history_from)
    except (FileNotFoundError, ValueError, html.ReportError) as exc:
        return _error(exc)
    print(f"{data['verdict']}: {args.run_dir / 'matrix.md'}")
    return 0 if data["verdict"] in narrowed.PASSING else 1


def add_history_option(parser: argparse.ArgumentParser) -> None:
    """``--history-from PATH`` (``run`` and ``report``): the Allure history of earlier nights for CI, where
    each night starts without earlier run directories (conformance/reporting/history.py)."""
    parser.add_argument(
        "--history-from",
        dest="history_from",
        type=pathlib.Path,
        metavar="PATH",
        help="Allure history saved by an earlier report (history.jsonl, or a folder holding it or history/"
        "history.jsonl; missing or empty: a new history starts) instead of the newest sibling run's; save "
        "RUN_DIR/history/history.jsonl after the report for the next night (default: the newest sibling run's)",
    )


def register(subparsers) -> None:
    """Add the ``report`` subcommand (exit 0 PASS, 1 FAIL, 3 the Allure CLI or browser failed, 4 a run directory
    that is missing or cannot be read)."""
    parser = subparsers.add_parser(
        "report",
        help="(re)generate summary, JUnit and HTML of a run directory",
        description=__doc__
        + "\nExit: 0 PASS, 1 FAIL, 3 the Allure CLI or the browser failed, 4 RUN_DIR missing or unreadable.",
    )
    parser.add_argument(
        "run_dir", type=pathlib.Path, metavar="RUN_DIR", help="a run directory, e.g. reports/latest or reports/<run-id>"
    )
    parser.add_argument("--no-html", action="store_true", help="skip the Allure HTML report")
    parser.add_argument(
        "--single-file",
        action="store_true",
        help="also write allure-report-single/index.html (self-contained, for CI artifacts)",
    )
    add_history_option(parser)
    parser.add_argument(
        "--screenshot", action="store_true", help="also save RUN_DIR/report-overview.png (headless chromium)"
    )
    parser.set_defaults(func=_run)
