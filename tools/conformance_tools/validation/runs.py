"""The child runs of the matrix: one ``dra-conformance run --cluster local --driver reference`` per fault (with
``DRA_REFERENCE_FAULTS=<fault>``) and per healthy selection (no fault), each with its own report directory.

A child runs in a process group of its own (as a shell starts a job), so a Ctrl-C meant for the matrix never
hits it half-way: :func:`execute` forwards SIGINT to the child's group once, waits (bounded) while the child
tears its cluster down, and only then re-raises. The child's output goes to ``<report dir>/run.log``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from conformance.reporting import results
from conformance_tools.validation.faultfile import REPO_ROOT, SETUP_RESULT, FaultEntry
from conformance_tools.validation.verdict import RunResult

FAULTS_ENV = "DRA_REFERENCE_FAULTS"
RUN_TIMEOUT_S = 1800.0  # one child run, cluster up and down included
STOP_GRACE_S = 300.0  # after SIGINT, how long the child may take to tear down its cluster
KILL_GRACE_S = 30.0
EXIT_INTERRUPTED = 2
DETAIL_LINES, DETAIL_CHARS = 40, 3000  # of a failure message, where a fault's symptom is searched
DRIVER = "reference"  # the driver profile every child run qualifies (its faults are reference_driver/faults.py)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C reached the matrix while ``result`` (the interrupted child run, already stopped) was running."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(f"interrupted during {result.label}")
        self.result = result


@dataclasses.dataclass(frozen=True)
class Plan:
    """One child run: ``label`` (fault name or ``healthy``), ``faults`` (the DRA_REFERENCE_FAULTS value, ''
    for the healthy driver), ``select`` (pytest path arguments), the run options of a :class:`FaultEntry`
    and its ``report_dir``; ``min_k8s``: the oldest Kubernetes minor it may run on (``""``: any)."""

    label: str
    faults: str
    select: tuple[str, ...]
    profile: str
    timeout_scale: float
    run_args: tuple[str, ...]
    pytest_args: tuple[str, ...]
    report_dir: Path
    min_k8s: str = ""


def fault_plan(entry: FaultEntry, runs_dir: Path, timeout_scale: float | None = None) -> Plan:
    """The plan of ``entry``'s faulty run under ``runs_dir/<fault>``; ``timeout_scale`` overrides the file's."""
    return Plan(
        entry.name,
        entry.name,
        entry.select,
        entry.profile,
        timeout_scale or entry.timeout_scale,
        entry.run_args,
        entry.pytest_args,
        runs_dir / entry.name,
        entry.min_k8s,
    )


def union(selects: Iterable[Iterable[str]]) -> tuple[str, ...]:
    """The smallest list of pytest path arguments running everything in ``selects`` once (an item inside a
    directory or file already listed is dropped)."""
    items = sorted({s.rstrip("/") for sel in selects for s in sel})

    def inside(item: str, other: str) -> bool:
        return item != other and (item.startswith(other + "/") or item.startswith(other + "::"))

    return tuple(i for i in items if not any(inside(i, o) for o in items))


def healthy_plans(entries: Iterable[FaultEntry], runs_dir: Path, timeout_scale: float | None = None) -> list[Plan]:
    """One healthy run per distinct run configuration (profile, run and pytest arguments) over the union of
    those entries' selections, at the smallest timeout scale among them (the healthy run proves the expected
    tests pass with waits that short): ``runs_dir/healthy`` (``healthy-2``... for more)."""
    groups: dict[tuple, list[FaultEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.run_key, []).append(entry)
    plans = []
    for i, group in enumerate(groups.values()):
        label = "healthy" if i == 0 else f"healthy-{i + 1}"
        first = group[0]
        plans.append(
            Plan(
                label,
                "",
                union(e.select for e in group),
                first.profile,
                timeout_scale or min(e.timeout_scale for e in group),
                first.run_args,
                first.pytest_args,
                runs_dir / label,
                first.min_k8s,
            )
        )
    return plans


def version_floor(plan: Plan, common: Iterable[str] = ()) -> list[str]:
    """``["--k8s-version", plan.min_k8s]`` when the run would otherwise use an older minor (``common``'s
    ``--k8s-version``, else the lab's default), else ``[]``: a fault whose test the older release cannot run (a
    release gap: the test skips there) is still proven (s16: toleration-seconds-refused on v1.34.4)."""
    if not plan.min_k8s:
        return []
    args = list(common)
    asked = args[args.index("--k8s-version") + 1] if "--k8s-version" in args[:-1] else ""
    if not asked:
        from conformance_lab.toolchain import versions  # noqa: PLC0415 - the lab pins the default minor

        asked = versions.load().k8s_default

    def minor(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.lstrip("v").split(".")[:2])

    return ["--k8s-version", plan.min_k8s] if minor(asked) < minor(plan.min_k8s) else []


def command(plan: Plan, common: Iterable[str] = (), python: str = sys.executable) -> list[str]:
    """The ``dra-conformance run`` command line of ``plan``; ``common``: options every run gets (e.g.
    ``--k8s-version 1.35``). A disruptive profile gets ``--allow-disruptive``. Runs are serial (``--workers 0``:
    each selects a few tests, and what a fault breaks was recorded serially); ``common`` (validate-suite
    ``--workers N``) and then a plan's run_args may override."""
    cmd = [python, "-m", "conformance.cli", "run", "--cluster", "local", "--driver", DRIVER, "--workers", "0"]
    cmd += ["--profile", plan.profile, "--timeout-scale", f"{plan.timeout_scale:g}"]
    cmd += ["--report-dir", str(plan.report_dir), "--no-report", *common, *version_floor(plan, common)]
    if plan.profile == "disruptive" and "--allow-disruptive" not in plan.run_args:
        cmd.append("--allow-disruptive")
    return [*cmd, *plan.run_args, "--", *plan.select, *plan.pytest_args]


def environment(plan: Plan, base: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ``base`` (default os.environ) with DRA_REFERENCE_FAULTS set to the plan's
    faults, or removed for the healthy driver (an inherited value never turns a healthy run faulty)."""
    env = dict(os.environ if base is None else base)
    env.pop(FAULTS_ENV, None)
    if plan.faults:
        env[FAULTS_ENV] = plan.faults
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def read_result(plan: Plan, exit_code: int | None, duration_s: float, note: str, cmd: list[str]) -> RunResult:
    """The child's outcome from its ``allure-results`` (node ID label); no results directory -> no tests.
    ``details`` keep the first :data:`DETAIL_LINES` lines of each failure message (a symptom is searched there).
    A run the harness ended before any test (exit 3 or 4) gets one broken result ``run::setup`` carrying the
    refusal line of its log."""
    tests, messages, details, classes = {}, {}, {}, {}
    folder = plan.report_dir / "allure-results"
    for rec in results.load(folder) if folder.is_dir() else []:
        nodeid = rec.label("nodeid") or rec.full_name
        tests[nodeid] = rec.status
        if rec.message:
            messages[nodeid] = rec.message.strip().splitlines()[0][:300]
            details[nodeid] = "\n".join(rec.message.strip().splitlines()[:DETAIL_LINES])[:DETAIL_CHARS]
        if rec.failure_class:
            classes[nodeid] = rec.failure_class
    if not tests and exit_code in (3, 4):  # the harness refused the cluster or driver before any test
        tests[SETUP_RESULT] = "broken"
        messages[SETUP_RESULT] = _refusal(plan.report_dir / "run.log") or f"exit {exit_code} before any test"
    cmdline = shlex.join(cmd)
    return RunResult(
        plan.label, exit_code, tests, duration_s, messages, note, str(plan.report_dir), cmdline, details, classes
    )


def _refusal(log: Path) -> str:
    """The harness's one-line refusal (``dra-conformance: DriverNotReady: ...``) from a child's log, or ''."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    found = [line for line in text.splitlines() if "dra-conformance: " in line and "Exit" in line]
    return found[-1].split("dra-conformance: ", 1)[1].strip(" !")[:300] if found else ""


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def stop(proc: subprocess.Popen, progress: Callable[[str], None], grace_s: float = STOP_GRACE_S) -> int:
    """Ctrl-C the child's process group and wait up to ``grace_s`` for its teardown (a further Ctrl-C is
    forwarded too); then SIGTERM, then SIGKILL. Returns the child's exit code."""
    _signal_group(proc, signal.SIGINT)
    deadline = time.monotonic() + grace_s
    while True:
        try:
            return proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except KeyboardInterrupt:
            progress("  another Ctrl-C: passed on to the run (it stops waiting for deletions)")
            _signal_group(proc, signal.SIGINT)
        except subprocess.TimeoutExpired:
            break
    progress(f"  the run did not stop within {grace_s:.0f}s of Ctrl-C: terminating it")
    for sig, wait_s in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        _signal_group(proc, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            return proc.wait(timeout=wait_s)
    return -9


def execute(
    plan: Plan,
    common: Iterable[str] = (),
    *,
    progress: Callable[[str], None] = print,
    timeout_s: float = RUN_TIMEOUT_S,
    verbose: bool = False,
) -> RunResult:
    """Run ``plan`` to the end and read its results. Over ``timeout_s`` the child is stopped like a Ctrl-C
    and its result noted ``timed out``. Raises :class:`Interrupted` (carrying the stopped run's result) on
    Ctrl-C, after the child has finished its teardown."""
    cmd = command(plan, common)
    plan.report_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    note, interrupted = "", False
    with open(plan.report_dir / "run.log", "w", encoding="utf-8") as log:
        log.write(f"$ {FAULTS_ENV}={plan.faults} {shlex.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=environment(plan),
            stdout=None if verbose else log,
            stderr=subprocess.STDOUT if not verbose else None,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            progress(f"  {plan.label}: over {timeout_s:.0f}s, stopping it")
            note, code = f"timed out after {timeout_s:.0f}s", stop(proc, progress)
        except KeyboardInterrupt:
            progress(f"  Ctrl-C: stopping the run of {plan.label} (it tears its cluster down first)")
            note, code, interrupted = "interrupted", stop(proc, progress), True
    result = read_result(plan, code, time.monotonic() - start, note, cmd)
    if interrupted:
        raise Interrupted(result)
    return result


def log_tail(result: RunResult, lines: int = 15) -> str:
    """The last ``lines`` lines of the child's run.log ('' when there is none)."""
    path = Path(result.report_dir) / "run.log"
    if not path.is_file():
        return ""
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
