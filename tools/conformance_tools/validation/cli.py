"""``dra-conformance validate-suite``: the fault-detection matrix (``make validate-suite``).

For each selected fault of ``fixtures/faults.yaml`` (default all; ``--faults a,b``) it runs the fault's
selection of suites against the reference driver with that fault switched on (``dra-conformance run --cluster
local`` in a subprocess with ``DRA_REFERENCE_FAULTS``), then once against the healthy driver over the union of
the selections, and decides per (fault, test) caught / missed / unexpected-fail (:mod:`.verdict`). The report
goes to ``reports/validate-suite/<id>/`` (:mod:`.report`). ``--check`` only validates the faults file and the
reference driver's profile.

Exit codes: 0 every fault caught as the file says and the healthy driver passed; 1 the matrix failed
(reasons printed); 2 interrupted (Ctrl-C; the running child tears its cluster down first); 4 bad input.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from conformance.core.errors import ConfigError
from conformance.drivers import profiles
from conformance_tools.validation import faultfile, report, runs, verdict

REPORTS = Path("reports") / "validate-suite"
EXIT_BAD_INPUT = 4


def register(subparsers) -> None:
    """Add the ``validate-suite`` subcommand."""
    p = subparsers.add_parser(
        "validate-suite",
        help="fault-detection matrix: each reference-driver fault must fail its tests, the healthy driver none",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--faults", default="", help="comma-separated faults to run (default: every fault of the file)")
    p.add_argument("--faults-file", type=Path, default=faultfile.DEFAULT_PATH, help="default fixtures/faults.yaml")
    p.add_argument("--k8s-version", dest="k8s_version", help="Kubernetes minor of the local clusters, e.g. 1.35")
    p.add_argument("--feature-gates", dest="feature_gates", default="all", help="defaults | all (default all)")
    p.add_argument(
        "--driver-deploy",
        dest="driver_deploy",
        help="how the child runs deploy the reference driver (default its profile's: bundled host processes; helm "
        "or manifests: a DaemonSet from its chart, the fault passed as the chart's faults value)",
    )
    p.add_argument("--timeout-scale", dest="timeout_scale", type=float, help="override every entry's timeout_scale")
    p.add_argument(
        "--workers",
        type=_workers,
        default=0,
        help="pytest-xdist workers of every child run (default 0: serial, as the file's expectations were recorded; "
        "N >= 2: device shards, so a fault must be caught whichever devices each test gets)",
    )
    p.add_argument("--report-dir", dest="report_dir", type=Path, help="default reports/validate-suite/<id>")
    p.add_argument("--run-timeout", type=float, default=runs.RUN_TIMEOUT_S, help="seconds per child run")
    p.add_argument("--no-healthy", action="store_true", help="skip the healthy run (the verdict then FAILS)")
    p.add_argument(
        "--healthy-of",
        dest="healthy_of",
        default="",
        help="comma-separated faults whose selections the healthy runs cover (default: --faults); a matrix run in "
        "batches proves every batch's catches with one healthy run over the union",
    )
    p.add_argument("--no-html", action="store_true", help="skip the Allure HTML report")
    p.add_argument(
        "--check", action="store_true", help="only validate the faults file and the driver profile (no cluster)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the child commands and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="show the child runs' output")
    p.set_defaults(func=main)


def _workers(text: str) -> int:
    """``--workers`` value: a whole number >= 0 (``dra-conformance run`` checks its upper bound). Raises
    argparse.ArgumentTypeError naming the value."""
    if not str(text).strip().isdigit():
        raise argparse.ArgumentTypeError(f"--workers {text!r}: give a whole number, 0 (serial) or e.g. 3")
    return int(text)


def _say(line: str) -> None:
    print(line, flush=True)


def _stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S")


def _fault_line(row: dict) -> str:
    text = {
        "caught": f"caught by {len(row['caughtBy'])} expected test(s)",
        "partial": f"PARTIAL: caught by {len(row['caughtBy'])}, "
        f"{len(row['missed'] + row['notRun'] + list(row['accidents']))} expected missed or caught by accident",
        "caught-by-accident": f"CAUGHT BY ACCIDENT: {len(row['accidents'])} expected test(s) failed without the "
        f"symptom /{row['symptom']}/ (not counted)",
        "missed": "MISSED: no expected test failed",
        "error": f"ERROR: no test results ({row['ended']})",
    }[row["status"]]
    extra = f", {len(row['unexpectedFail'])} more failing (not listed)" if row["unexpectedFail"] else ""
    return f"{text}{extra} in {row['durationS']:.0f}s"


def _common(args: argparse.Namespace) -> list[str]:
    out = ["--feature-gates", args.feature_gates]
    out += ["--workers", str(args.workers)] if getattr(args, "workers", 0) else []  # after runs.command's --workers 0
    out += ["--driver-deploy", args.driver_deploy] if getattr(args, "driver_deploy", None) else []
    return out + (["--k8s-version", args.k8s_version] if args.k8s_version else [])


def _load(
    args: argparse.Namespace,
) -> tuple[faultfile.FaultFile, dict[str, str], list[faultfile.FaultEntry], list[faultfile.FaultEntry]]:
    if args.timeout_scale is not None and not args.timeout_scale > 0:
        raise ConfigError(f"{args.timeout_scale!r}", source="--timeout-scale", fix="a number > 0")
    profiles.load(runs.DRIVER)  # every child run's --driver: a bad profile (e.g. its upgrade_from) is refused now
    described = faultfile.known_faults()
    loaded = faultfile.load(args.faults_file, described)
    entries = loaded.pick([n.strip() for n in args.faults.split(",")])
    if not getattr(args, "healthy_of", ""):
        return loaded, described, entries, entries
    if args.no_healthy:
        raise ConfigError("--healthy-of with --no-healthy", source="--healthy-of", fix="give one of them")
    return loaded, described, entries, loaded.pick([n.strip() for n in args.healthy_of.split(",")])


def main(args: argparse.Namespace) -> int:
    """Run the matrix; returns the exit code (module docstring)."""
    try:
        loaded, described, entries, healthy_entries = _load(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.check:
        _say(
            f"{loaded.source}: {len(loaded.entries)} fault(s), every fault of reference_driver/faults.py listed "
            f"with its symptom; driver profile {runs.DRIVER} valid: OK"
        )
        return 0
    report_id = "validate-" + datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    matrix_dir = (args.report_dir or REPORTS / report_id).resolve()
    runs_dir = matrix_dir / "runs"
    if not args.dry_run and runs_dir.is_dir() and any(runs_dir.iterdir()):  # an earlier matrix's child results
        print(
            f"error: --report-dir: {matrix_dir} holds an earlier matrix's runs ({runs_dir}); its results would be "
            "read as this matrix's (fix: give a new --report-dir, or leave it out for reports/validate-suite/<id>)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    faulty = [runs.fault_plan(e, runs_dir, args.timeout_scale) for e in entries]
    healthy = [] if args.no_healthy else runs.healthy_plans(healthy_entries, runs_dir, args.timeout_scale)
    if args.dry_run:
        for plan in healthy + faulty:
            _say(f"{runs.FAULTS_ENV}={plan.faults} " + " ".join(runs.command(plan, _common(args))))
        return 0
    started, clock = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), time.monotonic()
    _say(f"validate-suite: {len(entries)} fault(s) + {len(healthy)} healthy run(s); report {matrix_dir}")
    fault_runs: dict[str, verdict.RunResult] = {}
    healthy_runs: list[verdict.RunResult] = []
    interrupted = False
    try:
        for i, plan in enumerate(healthy, 1):
            _say(f"[{_stamp()}] healthy {i}/{len(healthy)}: {' '.join(plan.select)} ...")
            result = runs.execute(plan, _common(args), progress=_say, timeout_s=args.run_timeout, verbose=args.verbose)
            healthy_runs.append(result)
            row = verdict.healthy_row(result)
            counts = ", ".join(f"{n} {k}" for k, n in sorted(row["counts"].items())) or "no tests"
            _say(f"[{_stamp()}] healthy {i}/{len(healthy)}: {row['ended']}, {counts} in {row['durationS']:.0f}s")
            for nodeid, message in row["failures"].items():
                _say(f"  FAILED on the healthy driver: {nodeid}: {message}")
        for i, (entry, plan) in enumerate(zip(entries, faulty, strict=True), 1):
            _say(f"[{_stamp()}] fault {i}/{len(entries)} {entry.name}: {' '.join(plan.select)} ...")
            result = runs.execute(plan, _common(args), progress=_say, timeout_s=args.run_timeout, verbose=args.verbose)
            fault_runs[entry.name] = result
            row = verdict.fault_row(entry, result)
            _say(f"[{_stamp()}] fault {i}/{len(entries)} {entry.name}: {_fault_line(row)}")
            if row["status"] == "error":
                _say("  last lines of its log:\n    " + runs.log_tail(result).replace("\n", "\n    "))
    except KeyboardInterrupt as exc:
        interrupted = True
        if isinstance(exc, runs.Interrupted):
            _say(f"interrupted during {exc.result.label} ({exc.result.ended_text()}); writing the partial report")
    decided = verdict.decide(entries, fault_runs, healthy_runs, described)
    if interrupted:
        decided["verdict"] = "INTERRUPTED"
        decided["verdictReasons"].insert(0, "interrupted (Ctrl-C): the matrix is partial")
    report.child_summaries([r.report_dir for r in healthy_runs + list(fault_runs.values())])
    data = report.document(
        decided,
        report_id=matrix_dir.name,
        started=started,
        duration_s=time.monotonic() - clock,
        faults_file=str(loaded.source),
        kubernetesVersion=args.k8s_version or "default",
        featureGates=args.feature_gates,
        timeoutScale=args.timeout_scale,
        selectedFaults=[e.name for e in entries],
        healthyOf=[e.name for e in healthy_entries],
        interrupted=interrupted,
    )
    link = args.report_dir is None or matrix_dir.parent == REPORTS.resolve()
    html_report = not args.no_html and not interrupted  # after Ctrl-C: summary files only, no Allure CLI
    for problem in report.write(matrix_dir, data, html_report=html_report, link_latest=link):
        _say(f"warning: Allure report not built: {problem.splitlines()[0]}")
    return _finish(data, matrix_dir, interrupted)


def _finish(data: dict, matrix_dir: Path, interrupted: bool) -> int:
    det = data["detection"]
    for reason in data["verdictReasons"]:
        _say(f"  - {reason}")
    _say(
        f"\nVALIDATE-SUITE: {data['verdict']} - {det['caught']}/{det['faults']} fault(s) caught with their symptom "
        f"({det['rate']:.0%}), matrix {data['durationS']:.0f}s (report {matrix_dir / 'summary.md'})"
    )
    if interrupted:
        return runs.EXIT_INTERRUPTED
    return 0 if data["verdict"] == "PASS" else 1
