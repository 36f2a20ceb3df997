"""``dra-conformance run`` and ``dra-conformance list``: pytest over suites/ with the plugin's options.

``run`` prints one verdict line and exits 0 (all selected tests passed or were skipped with evidence),
1 (a test failed or something leaked), 2 (interrupted), 3 (cluster or driver not usable), 4 (bad input),
5 (nothing selected); a passing run narrowed by pytest arguments (``-- -k foo``, ``-m``, paths...) exits 0 but its
verdict says ``PASS (narrowed: ...) — not a qualification of profile P`` (conformance/reporting/narrowed.py); a PASS
names its waivers and the mission areas where no test executed: ``PASS (not qualified: admin_access)`` (exit 0,
conformance/reporting/scope.py, the same line a plain ``pytest suites --driver X`` prints at session finish).
``list`` prints the tests a --profile selects without touching a cluster; with ``--kubeconfig`` (and ``-o json``)
each test's run/skip decision on that cluster. ``run --plan`` prints what the run would do and creates nothing
(conformance/runner/plan.py: one read-only survey and the harness's own decisions for both).
"""

from __future__ import annotations

import argparse
import atexit
import errno
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from conformance import shipped
from conformance.core import names, options, output
from conformance.core.errors import ConfigError
from conformance.k8s import incluster, kubeconfig
from conformance.reporting import cli as report_cli
from conformance.runner import run_guard

SUITES = shipped.suites_dir()
# this CLI imported the package before pytest.main, so pytest cannot assert-rewrite it: a harmless warning
REWRITE_NOTE = "ignore::pytest.PytestAssertRewriteWarning"
EXIT_TEXT = {
    0: "PASS",
    1: "FAIL",
    2: "INTERRUPTED",
    3: "ERROR (cluster or driver not usable)",  # also ERROR (cluster) — <evidence>: a cluster fault mid-run
    4: "ERROR (bad input)",
    5: "NO TESTS SELECTED",
}
DEFAULT_WORKERS = 4  # xdist workers of `run` (measured on 2 cores: waits dominate; docs/running.md "Parallel runs")
MAX_WORKERS = 32
SERIAL_ONLY = ("--pdb", "--trace")  # pytest options that xdist cannot honour: the run stays serial


def _common(p: argparse.ArgumentParser) -> None:
    options.add_arguments(p, ("driver", "profile"))


def register(subparsers) -> None:
    """Add ``run`` and ``list``."""
    run = subparsers.add_parser("run", help="run the conformance suites against a driver")
    options.add_arguments(run)  # the one table shared with the pytest plugin (conformance/core/options.py)
    run.add_argument(
        "--in-cluster",
        dest="in_cluster",
        action="store_true",
        help="with --cluster existing: use the pod's service account (the suite runs as a pod; detected "
        "when no kubeconfig is found in a pod) (default: off)",
    )
    run.add_argument("--no-report", action="store_true", help="skip building summary/HTML after the run (default: off)")
    run.add_argument(
        "--plan",
        action="store_true",
        help="print what the run would do (cluster, nodes, driver, objects, each test's run/skip decision with "
        "its evidence) and exit 0; creates nothing on the cluster and writes no report (default: off)",
    )
    report_cli.add_history_option(run)
    output.add_output_option(run)
    run.add_argument(
        "--workers",
        "-n",
        type=parse_workers,
        default=DEFAULT_WORKERS,
        help=f"parallel pytest-xdist workers, 0 = serial, in this process (default: {DEFAULT_WORKERS})",
    )
    run.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        help="extra pytest arguments after -- (e.g. -- -k smoke; default: none)",
    )
    run.set_defaults(func=run_command)
    lst = subparsers.add_parser("list", help="print the tests a profile selects (no cluster needed)")
    _common(lst)
    lst.add_argument("--allow-disruptive", action="store_true", help="needed to list the disruptive profile")
    kubeconfig.add_options(lst)  # given: each test's run/skip decision on that cluster (read-only)
    output.add_output_option(lst)
    lst.set_defaults(func=list_command)


def parse_workers(text: str) -> int:
    """``--workers`` value: an integer from 0 (serial) to :data:`MAX_WORKERS`. Raises
    argparse.ArgumentTypeError (exit 2 with the message) naming the value and what is accepted."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"--workers {text!r}: give a whole number from 0 (serial) to {MAX_WORKERS}, e.g. --workers 4"
        )
    return value


def _is_path(arg: str) -> bool:
    """Whether a pytest argument names an existing file or directory (a long ``-k`` expression is not)."""
    try:
        return Path(arg.split("::")[0]).exists()
    except OSError:  # e.g. ENAMETOOLONG for a long -k expression
        return False


def suite_arg(arg: str) -> str:
    """``suites/<area>[/file.py[::test]]`` as the shipped suites' path when it names no file here (an installed
    plugin run from any directory); any other argument unchanged."""
    head, sep, tail = arg.partition("::")
    if not head.startswith("suites/") or _is_path(arg):
        return arg
    shipped_path = SUITES / head.removeprefix("suites/")
    return str(shipped_path) + sep + tail if shipped_path.exists() else arg


def build_pytest_args(args: argparse.Namespace, run_id: str, report_dir: Path) -> list[str]:
    """The pytest command line for ``run``: all of suites/, or only the suite paths given in the extra
    pytest arguments (e.g. ``suites/node`` or ``suites/api_v1/test_limits.py::test_x``), under the run's own
    pytest configuration only (:func:`conformance.runner.run_guard.ini_args`)."""
    extra = [suite_arg(a) for a in (args.pytest_args or []) if a != "--"]
    paths = [a for a in extra if not a.startswith("-") and _is_path(a)]
    out = [] if paths else [str(SUITES)]
    out += [*run_guard.ini_args(), "--run-id", run_id, "--report-dir", str(report_dir)]  # its own ini only
    out += ["-p", "no:cacheprovider", "-W", REWRITE_NOTE]
    out += options.to_pytest(args)
    if any(a == "-n" or a.startswith("--numprocesses") or re.fullmatch(r"-n(\d+|auto|logical)", a) for a in extra):
        out += ["--dist", "loadgroup"]  # the caller chose the workers in the pytest arguments
    elif (
        getattr(args, "workers", 0)
        and not any(a in SERIAL_ONLY for a in extra)
        and getattr(args, "profile", None) != "disruptive"
    ):
        # the disruptive lane runs serially in this process: its tests restart cluster processes (kubelet,
        # plugins, kube-controller-manager) and the process that restarts them must be the one tearing down
        out += ["-n", str(args.workers), "--dist", "loadgroup"]
    return out + extra


def _prepare(args: argparse.Namespace) -> int | None:
    """Checks and set-up before pytest starts: a malformed history file, the in-cluster kubeconfig, the gRPC
    stubs of a checkout. Returns 4 (bad input) after printing the error, else None."""
    if getattr(args, "history_from", None) is not None:  # a malformed history fails now, not after the run
        from conformance.reporting import history  # noqa: PLC0415

        try:
            history.saved_history(args.history_from)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 4
    try:
        if incluster.wanted(args.cluster, args.kubeconfig, getattr(args, "in_cluster", False)):
            # a kubeconfig of the pod's service account, for our client, helm and kubectl alike
            tmp = Path(tempfile.mkdtemp(prefix="dra-conformance-in-cluster-"))
            atexit.register(shutil.rmtree, tmp, True)
            args.kubeconfig = str(incluster.write_kubeconfig(tmp / "kubeconfig"))  # outside a pod: ConfigError
            print(f"in-cluster: service account kubeconfig {args.kubeconfig}")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    if shipped.in_checkout():  # stubs are gitignored: make sure a fresh checkout has them (a wheel ships them)
        try:
            from conformance import protos  # noqa: PLC0415

            protos.generate_all()
        except Exception as exc:  # noqa: BLE001 - the run reports the missing stubs where they are needed
            print(f"warning: could not generate gRPC stubs ({exc}); run `make setup`", file=sys.stderr)
    return None


def _judge(
    args: argparse.Namespace, code: int, passed: int, report_dir: Path, enospc: str = ""
) -> tuple[str, int, str]:
    """``(verdict text, exit code, report note)`` from pytest's exit code, the passed count and the run's
    summary (the qualification rules: a declared capability, a narrowed run); builds the report unless
    ``--no-report``. ``enospc``: the run's own write to ``report_dir`` that failed with ENOSPC (``""``: none).
    Fails closed: no summary, no PASS."""
    verdict = EXIT_TEXT.get(code, f"ERROR (exit {code})")
    if code == 0 and passed == 0:
        verdict, code = "NO TESTS PASSED (everything skipped)", 1
    report_note, reasons, cut, line = "", (), None, ""
    if (report_dir / "allure-results").is_dir() and (report_dir / "run.json").is_file():
        try:
            from conformance.reporting import scope  # noqa: PLC0415 - the report stack loads only after a run

            line, reasons, cut = scope.judge(report_dir)  # the one verdict line (also plain pytest's)
        except Exception as exc:  # noqa: BLE001 - fail closed: no summary, no PASS
            reasons = (f"the qualification summary could not be built: {_first_line(exc)}",)
            enospc = enospc or _enospc(exc)
        try:
            if not args.no_report:
                from conformance.reporting.build import generate  # noqa: PLC0415 - imports the report stack

                generate(report_dir, history_from=getattr(args, "history_from", None))
                report_note = "/summary.md"  # the verdict line names the summary, not the folder twice
        except Exception as exc:  # noqa: BLE001 - the test verdict stands without the report
            report_note = f", report not built: {_first_line(exc)}"
            enospc = enospc or _enospc(exc)
    elif code == 0:  # pytest passed but left nothing to judge: not a PASS
        reasons = (f"the run wrote no results to {report_dir} (allure-results, run.json)",)
    if code == 0 and reasons:  # pytest passed, the qualification rules did not (e.g. a declared capability)
        verdict, code = "FAIL (" + "; ".join(reasons)[:400] + ")", 1
    elif code == 0 and line:  # PASS, PASS (not qualified: ...), or a narrowed run's exit-0 line
        verdict = line
    return (*_cluster_fault(report_dir, line, verdict, code, enospc), report_note)


def _enospc(exc: BaseException) -> str:
    """``exc``'s text when it is ENOSPC (an OSError with errno 28), else ``""``."""
    return str(exc)[:300] if isinstance(exc, OSError) and exc.errno == errno.ENOSPC else ""


def _cluster_fault(report_dir: Path, line: str, verdict: str, code: int, enospc: str = "") -> tuple[str, int]:
    """``(verdict, code)``: ``ERROR (cluster) — <evidence>``, exit 3, when the summary attributed the run's
    failures to the cluster or a failed run's own write to the report directory hit ENOSPC (``enospc``;
    conformance/reporting/cluster_fault.py); a report disk that is only nearly full is a note on the verdict (a
    driver that fills a shared disk is judged, not excused). Else the given ones."""
    from conformance.reporting import cluster_fault  # noqa: PLC0415

    if enospc and code != 0:
        return f"{cluster_fault.HEAD} — no space left on device writing the report directory {report_dir}: {enospc}", 3
    if line.startswith(cluster_fault.HEAD):
        return line, 3
    full = cluster_fault.report_dir_full(report_dir) if code != 0 else ""
    return (f"{verdict} (report disk nearly full: {full})" if full else verdict), code


def run_command(args: argparse.Namespace) -> int:
    """Run pytest in-process, build the report, print the verdict; return the exit code (0 PASS, 1 FAIL,
    2 interrupted, 3 environment, 4 bad input)."""
    import pytest  # noqa: PLC0415 - the CLI imports pytest only when running

    if (refused := _prepare(args)) is not None:
        return refused
    if getattr(args, "plan", False):  # what the run would do, read-only (conformance/runner/plan.py)
        from conformance.runner import plan  # noqa: PLC0415

        return plan.command(args, "plan")
    run_id = names.new_run_id()
    report_dir = Path(args.report_dir or Path("reports") / run_id).resolve()
    # no reruns in a qualification (typed or in PYTEST_ADDOPTS), two runs' results never mix (breaker s15 C1, D4)
    if refusal := run_guard.refusal(list(args.pytest_args or []), report_dir, given=bool(args.report_dir)):
        print(f"error: {refusal}", file=sys.stderr)
        return 4
    existed = report_dir.is_dir()  # a directory the run did not create is never removed (a mount point: C4)
    from conformance.runner import terminal  # noqa: PLC0415 - imports pytest

    counter = terminal.Counter()
    started = time.monotonic()
    # SIGTERM (a pod deleted, a CI job cancelled) stops the run the way Ctrl-C does: tear-down, exit 2
    # (conformance/cli.py wraps every command in conformance.core.commands.sigterm_as_interrupt)
    from conformance.reporting import scope  # noqa: PLC0415 - this command prints the verdict line (_judge)

    scope.CALLER_PRINTS = True
    enospc = ""  # the run's own write to the report dir that hit ENOSPC (_cluster_fault)
    try:
        code = int(pytest.main(build_pytest_args(args, run_id, report_dir), plugins=[counter, terminal.ExitOnce()]))
    except OSError as exc:  # e.g. ENOSPC on the report dir in pytest's own junit.xml: judged below (exit 3)
        print(f"dra-conformance: the run ended with {type(exc).__name__}: {exc}", file=sys.stderr)
        code, enospc = 3, _enospc(exc)
    finally:
        scope.CALLER_PRINTS = False
    from conformance.runner import timings  # noqa: PLC0415 - imports pytest

    run_guard.drop_if_empty(report_dir, existed, default_parent=not args.report_dir)
    if report_dir.is_dir():
        try:
            timings.add_run_wall(report_dir, time.monotonic() - started)
        except OSError as exc:  # a full report disk is named by the verdict (_cluster_fault)
            enospc = enospc or _enospc(exc)
    verdict, code, report_note = _judge(args, code, counter.counts["passed"], report_dir, enospc)
    c = counter.counts
    seconds = time.monotonic() - started
    where = report_dir if report_dir.is_dir() else None
    if output.wants_json(args):  # the last line of stdout: one JSON object a script can parse
        print(json.dumps(verdict_record(args, verdict, code, c, run_id, where), separators=(",", ":")))
        return code
    print(
        f"\nVERDICT: {verdict} - driver {args.driver}, profile {args.profile}: {c['passed']} passed, "
        f"{c['failed']} failed, {c['error']} errors, {c['skipped']} skipped in {seconds:.0f}s "
        f"(run {run_id}, {where or 'no report'}{report_note})"
    )
    return code


def verdict_record(
    args: argparse.Namespace, verdict: str, code: int, counts: dict, run_id: str, report_dir: Path | None
) -> dict:
    """The verdict of ``run -o json``: ``{verdict, exitCode, driver, profile, counts: {passed, failed, error,
    skipped}, runId, reportDir}`` (reportDir: the run directory as given or under the cwd, None when the run
    left none), the same facts as the human VERDICT line."""
    shown = None
    if report_dir is not None:
        shown = str(report_dir.relative_to(Path.cwd()) if report_dir.is_relative_to(Path.cwd()) else report_dir)
    return {
        "verdict": verdict,
        "exitCode": code,
        "driver": args.driver,
        "profile": args.profile,
        "counts": dict(counts),
        "runId": run_id,
        "reportDir": shown,
    }


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def summary_reasons(report_dir: Path) -> tuple[str, ...]:
    """The reasons the qualification rules fail the run in ``report_dir`` (empty tuple: PASS); writes nothing.

    The rules are the summary's (``verdictRules`` in summary.json: failed tests, declared capabilities that did
    not pass, unexplained skips, nothing executed), so the exit code and the printed verdict never say PASS
    where summary.json says FAIL. Raises ``FileNotFoundError`` when the run left no results and
    ``jsonschema.ValidationError`` on a summary that breaks its schema.
    """
    return summary_verdict(report_dir)[0]


def summary_verdict(report_dir: Path) -> tuple[tuple[str, ...], dict | None]:
    """``(reasons, narrowed)`` of the run in ``report_dir`` from its summary (writes nothing): the reasons of
    :func:`summary_reasons` and summary.json's ``narrowed`` (None: the run selected the whole profile; else
    what narrowed it, conformance/reporting/narrowed.py). Raises as :func:`summary_reasons`."""
    from conformance.reporting import scope  # noqa: PLC0415 - the report stack loads only after a run

    return scope.judge(report_dir)[1:]


def list_command(args: argparse.Namespace) -> int:
    """Collect only; print the selected test IDs, the tests per area (mission areas first) and a count. With
    ``--kubeconfig`` or ``-o json``: each test's decision (conformance/runner/plan.py) on that cluster."""
    import pytest  # noqa: PLC0415

    if args.kubeconfig or args.output == "json":  # the decisions of run --plan (conformance/runner/plan.py)
        from conformance.runner import plan  # noqa: PLC0415

        args.cluster, args.pytest_args = ("existing" if args.kubeconfig else "local"), []
        return plan.command(args, "list" if args.output == "text" else "json")
    code = int(
        pytest.main(
            [
                str(SUITES),
                *run_guard.ini_args(),  # the run's own configuration only, as `run` (breaker s15 C3)
                "--collect-only",
                "-W",
                REWRITE_NOTE,
                "-q",
                "-p",
                "no:cacheprovider",
                "--driver",
                args.driver,
                "--profile",
                args.profile,
                "-p",
                "conformance.runner.listing",
                *(["--allow-disruptive"] if args.allow_disruptive else []),
            ]
        )
    )
    return 0 if code in (0, 5) else code


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="dra-conformance")
    register(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args()
    sys.exit(ns.func(ns))
