"""The version-matrix runner: run the suites once per Kubernetes version, then merge them into one report.

``dra-conformance matrix --versions 1.34 1.35 1.36 1.37 [--matrix-id ID] -- <run args>`` (also ``python -m
conformance_tools.matrix``) runs ``dra-conformance run --k8s-version V --report-dir reports/<matrix-id>/<V> <run
args>`` for each version (one cluster per version, one after another), then the plugin's
:func:`conformance.reporting.matrix.merge` writes the matrix report. Exit code 0 PASS, 1 FAIL, 2 bad input.

Source: reporting.md §4.2 (matrix: Kubernetes version x requirement), §3.1 (separate versions = separate
pytest invocations, merged afterwards).
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import shlex
import subprocess
import sys
import time

from conformance.reporting import history, html, narrowed
from conformance.reporting.cli import add_history_option
from conformance.reporting.matrix import VERSION_RE, merge, render

CELL_TIMEOUT_S = 4 * 3600


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def plan(matrix_dir: pathlib.Path, versions: list[str], run_args: list[str], runner: list[str]) -> dict:
    """Write ``matrix-plan.json`` (marks the directory as a matrix); returns the plan."""
    data = {"versions": versions, "runArgs": run_args, "runner": runner, "started": _now()}
    matrix_dir.mkdir(parents=True, exist_ok=True)
    (matrix_dir / history.MATRIX_MARKER).write_text(json.dumps(data, indent=2), encoding="utf-8")
    return data


def cell_command(runner: list[str], version: str, cell_dir: pathlib.Path, run_args: list[str]) -> list[str]:
    """The command line of one cell."""
    return [*runner, "--k8s-version", version, "--report-dir", str(cell_dir), *run_args]


def run_cells(
    matrix_dir: pathlib.Path,
    versions: list[str],
    run_args: list[str],
    runner: list[str],
    timeout_s: float = CELL_TIMEOUT_S,
) -> dict[str, dict]:
    """Run every cell in turn; returns ``version -> {"exitCode", "durationS", "command"}``. A cell that
    runs over ``timeout_s`` is killed and recorded with exit code 124."""
    outcome = {}
    for version in versions:
        cmd = cell_command(runner, version, matrix_dir / version, run_args)
        print(f"== matrix cell Kubernetes {version}: {shlex.join(cmd)}", flush=True)
        start = time.monotonic()
        try:
            code = subprocess.run(cmd, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            code = 124
        took = round(time.monotonic() - start, 1)
        outcome[version] = {"exitCode": code, "durationS": took, "command": shlex.join(cmd)}
    (matrix_dir / "cells.json").write_text(json.dumps(outcome, indent=2), encoding="utf-8")
    return outcome


def adopt_cells(matrix_dir: pathlib.Path) -> list[str]:
    """Make ``matrix_dir`` a matrix from cells run elsewhere (one CI job per cell, each downloaded into
    ``matrix_dir/<cell>/``) when it has no plan yet: the cells are the subdirectories holding ``allure-results/``
    or a ``cell.json`` (``{"exitCode", "durationS", "command"}``, written by the cell's job even when its run broke,
    so a cell without results reads ERROR); writes ``matrix-plan.json`` and ``cells.json``; returns the cell names.
    A directory that has a plan is left as it is. Raises FileNotFoundError when there is no cell."""
    if (matrix_dir / history.MATRIX_MARKER).is_file():
        return json.loads((matrix_dir / history.MATRIX_MARKER).read_text(encoding="utf-8"))["versions"]
    cells = (
        sorted(
            d.name
            for d in matrix_dir.iterdir()
            if not d.is_symlink() and ((d / "allure-results").is_dir() or (d / "cell.json").is_file())
        )
        if matrix_dir.is_dir()
        else []
    )
    if not cells:
        raise FileNotFoundError(f"{matrix_dir}: no cell directories (each with allure-results/ or cell.json)")
    outcome = {
        c: json.loads((matrix_dir / c / "cell.json").read_text())
        for c in cells
        if (matrix_dir / c / "cell.json").is_file()
    }
    (matrix_dir / "cells.json").write_text(json.dumps(outcome, indent=2), encoding="utf-8")
    plan(matrix_dir, cells, [], ["ci: one job per cell"])
    return cells


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The matrix options (``dra-conformance matrix`` and ``python -m conformance_tools.matrix`` alike)."""
    parser.add_argument(
        "--versions",
        nargs="+",
        required=False,
        default=[],
        metavar="1.N",
        help="Kubernetes minors, e.g. 1.34 1.35 1.36 1.37",
    )
    parser.add_argument("--matrix-id", default="matrix-" + datetime.datetime.now().strftime("%Y%m%dT%H%M%S"))
    parser.add_argument("--reports-root", type=pathlib.Path, default=pathlib.Path("reports"))
    parser.add_argument(
        "--runner",
        default=f"{sys.executable} -m conformance.cli run",
        help="command that runs one cell (default: dra-conformance run)",
    )
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT_S, help="seconds per cell")
    parser.add_argument(
        "--merge-only",
        type=pathlib.Path,
        metavar="MATRIX_DIR",
        help="only (re-)merge the cells of a matrix directory; one without matrix-plan.json adopts its cell "
        "subdirectories (CI: one job per cell, then one merge job)",
    )
    add_history_option(parser)
    parser.add_argument("--no-html", action="store_true")
    parser.add_argument("--dry-run", action="store_true", help="print the cell commands and exit")


def _checked(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    bad = [v for v in args.versions if not VERSION_RE.match(v)]
    if bad:
        parser.error(f"--versions {' '.join(bad)}: expected Kubernetes minors such as 1.35")
    if not args.versions and not args.merge_only:
        parser.error("--versions is required (e.g. --versions 1.34 1.35), unless --merge-only DIR")
    return args


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Split ``argv`` at ``--``: matrix options before, ``dra-conformance run`` arguments after. Exits 2 (argparse)
    on bad options."""
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(
        prog="dra-conformance matrix", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    return _checked(parser, parser.parse_args(argv[:split])), argv[split + 1 :]


def register(subparsers) -> None:
    """Add the ``matrix`` subcommand: its options, then ``-- <dra-conformance run arguments>``."""
    parser = subparsers.add_parser(
        "matrix",
        help="run the suites on several Kubernetes versions and merge one report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.add_argument("run_args", nargs="*", metavar="-- RUN_ARGS", help="arguments of each cell's run")
    parser.set_defaults(func=lambda a: execute(_checked(parser, a), a.run_args))


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (0 PASS, 1 FAIL, 2 bad input or report error)."""
    return execute(*parse(list(sys.argv[1:] if argv is None else argv)))


def execute(args: argparse.Namespace, run_args: list[str]) -> int:
    """Run (or re-merge) the matrix of parsed ``args``; returns the exit code as :func:`main`."""
    try:
        if args.merge_only:
            adopt_cells(args.merge_only)
            data = merge(args.merge_only, html_report=not args.no_html, history_from=args.history_from)
        else:
            matrix_dir = (args.reports_root / args.matrix_id).resolve()
            runner = shlex.split(args.runner)
            if args.dry_run:
                for v in args.versions:
                    print(shlex.join(cell_command(runner, v, matrix_dir / v, run_args)))
                return 0
            plan(matrix_dir, args.versions, run_args, runner)
            run_cells(matrix_dir, args.versions, run_args, runner, args.cell_timeout)
            data = merge(matrix_dir, html_report=not args.no_html, history_from=args.history_from)
    except (FileNotFoundError, ValueError, html.ReportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(data))
    return 0 if data["verdict"] in narrowed.PASSING else 1


if __name__ == "__main__":
    sys.exit(main())
