"""What the soak and the side-by-side runs do to clusters, through the CLI a user runs: ``dra-conformance install``
(a local cluster with the driver from its chart), ``run --cluster existing ... --driver-deploy preinstalled`` on it,
``run --cluster local --keep-cluster`` (a fresh cluster), ``cluster down``. Each run's outcome is its exit code and
its ``VERDICT:`` line with the timings taken out, so verdicts of different runs compare as text.

SIGTERM is turned into KeyboardInterrupt (:func:`interruptible`) so callers' ``finally`` blocks stop the child
run and take their clusters down. Children run in a session of their own (a terminal's Ctrl-C reaches only this
process) and are stopped with SIGINT, the Ctrl-C path every ``dra-conformance`` command cleans up on (SIGTERM
too, since conformance.core.commands.sigterm_as_interrupt), then SIGKILL after :data:`STOP_GRACE_S`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from conformance_lab.local.provider import cluster_name

from conformance.core import commands

RUN_TIMEOUT_S = 3600
STOP_GRACE_S = 300  # a run's tear-down under load (driver uninstall, namespace deletion, cluster down)
CLI = (sys.executable, "-m", "conformance.cli")
_VERDICT = re.compile(r"^VERDICT: .*$", re.M)
_TIMINGS = re.compile(r" in \d+(?:\.\d+)?s| \(run [^)]*\)|, report [^)]*")


@dataclasses.dataclass
class Outcome:
    """One run: ``code`` its exit status (124 past the timeout), ``verdict`` the VERDICT line without timings
    ('' when none was printed), ``wall_s`` seconds, ``report`` its report directory."""

    code: int
    verdict: str
    wall_s: float
    report: Path


def verdict_of(output: str) -> str:
    """The last ``VERDICT:`` line of ``output`` with the run time, run ID and report path removed ('' if none)."""
    found = _VERDICT.findall(output)
    return _TIMINGS.sub("", found[-1]).strip() if found else ""


@contextlib.contextmanager
def interruptible():
    """SIGTERM raises KeyboardInterrupt in the main thread while the block runs (then the old handler): the one
    mechanism of every command, conformance.core.commands.sigterm_as_interrupt."""
    with commands.sigterm_as_interrupt():
        yield


@dataclasses.dataclass
class Child:
    """A started ``dra-conformance`` command: its process, log file and start time (monotonic seconds)."""

    proc: subprocess.Popen
    log: Path
    started: float

    def result(self, code: int) -> tuple[int, str, float]:
        """``(exit code, output, seconds since start)``."""
        return code, self.log.read_text(errors="replace"), round(time.monotonic() - self.started, 1)


def spawn(argv: list[str], log: Path) -> Child:
    """Start ``dra-conformance argv`` with stdout and stderr to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*CLI, *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_default_sigint,  # noqa: PLW1509 - only a signal disposition, no locks taken
        )
    return Child(proc, log, time.monotonic())


def wait_all(children: list[Child], timeout_s: float = RUN_TIMEOUT_S) -> list[tuple[int, str, float]]:
    """Wait for every child (exit code 124 for one stopped past ``timeout_s``); on Ctrl-C/SIGTERM each child still
    running is stopped (:func:`_stop`) before KeyboardInterrupt goes on."""
    deadline = time.monotonic() + timeout_s
    codes: dict[int, int] = {}
    try:
        while len(codes) < len(children):
            for i, child in enumerate(children):
                if i not in codes and child.proc.poll() is not None:
                    codes[i] = child.proc.returncode
                elif i not in codes and time.monotonic() > deadline:
                    _stop(child.proc)
                    codes[i] = 124
            time.sleep(0.5)
    except KeyboardInterrupt:
        for child in children:
            if child.proc.poll() is None:
                _stop(child.proc)
        raise
    return [child.result(codes[i]) for i, child in enumerate(children)]


def _command(argv: list[str], log: Path, timeout_s: float = RUN_TIMEOUT_S) -> tuple[int, str, float]:
    """Run ``dra-conformance argv`` to the end (see :func:`wait_all`); ``(exit code, output, seconds)``."""
    return wait_all([spawn(argv, log)], timeout_s)[0]


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default (a job started in the background of a shell without
    job control inherits it ignored, and Python then never turns it into KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT (the child cleans up as on Ctrl-C), SIGKILL after :data:`STOP_GRACE_S`."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclasses.dataclass
class Installed:
    """A local cluster made by ``dra-conformance install``: its name and admin kubeconfig."""

    name: str
    kubeconfig: str


def install(driver: str, nodes: int, out: Path) -> Installed:
    """``dra-conformance install --driver D --nodes N`` (logs under ``out``). Raises RuntimeError with the log's
    tail when it fails (it removes what it started itself)."""
    code, text, took = _command(
        ["install", "--driver", driver, "--nodes", str(nodes), "--log-dir", str(out)], out / "install.log"
    )
    name = re.search(r"on local cluster (\S+)", text)
    kubeconfig = re.search(r"^kubeconfig: (\S+)", text, re.M)
    if code != 0 or not name or not kubeconfig:
        raise RuntimeError(f"`dra-conformance install` failed (exit {code}, {took}s): {text[-2000:]}")
    return Installed(name.group(1), kubeconfig.group(1))


def existing_argv(cluster: Installed, driver: str, profile: str, report: Path, extra: list[str]) -> list[str]:
    """The main job on ``cluster`` as an existing cluster (preinstalled driver, privileged helper pods)."""
    argv = ["run", "--cluster", "existing", "--kubeconfig", cluster.kubeconfig, "--driver", driver]
    argv += ["--driver-deploy", "preinstalled", "--node-access", "privileged-pod", "--profile", profile]
    return [*argv, "--report-dir", str(report), *extra]


def run_existing(cluster: Installed, driver: str, profile: str, report: Path, extra: list[str]) -> Outcome:
    """Run :func:`existing_argv` to the end (log next to the report directory)."""
    code, text, took = _command(existing_argv(cluster, driver, profile, report, extra), report.with_suffix(".log"))
    return Outcome(code, verdict_of(text), took, report)


def run_fresh(driver: str, profile: str, report: Path, extra: list[str]) -> tuple[Outcome, str]:
    """The main job on a cluster of its own, kept after the run (``--keep-cluster``); ``(outcome, cluster name)``
    ('' when the run made none)."""
    argv = ["run", "--cluster", "local", "--driver", driver, "--profile", profile, "--keep-cluster"]
    code, text, took = _command([*argv, "--report-dir", str(report), *extra], report.with_suffix(".log"))
    return Outcome(code, verdict_of(text), took, report), cluster_of_run(report)


def cluster_of_run(report: Path) -> str:
    """The local cluster a run made (provider.cluster_name of run.json's ``run_id``; '' when not recorded)."""
    try:
        run_id = json.loads((report / "run.json").read_text()).get("run_id", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return cluster_name(run_id) if run_id else ""


def down(name: str, log: Path) -> int:
    """``dra-conformance cluster down --name NAME``; its exit code (its output in ``log``)."""
    return _command(["cluster", "down", "--name", name], log, timeout_s=600)[0]
