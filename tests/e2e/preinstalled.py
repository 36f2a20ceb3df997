"""Deploy the reference driver on the shared local cluster under a fresh driver name, as a "preinstalled"
driver that `dra-conformance run --cluster existing --driver-deploy preinstalled` can qualify.

Optionally with reference-driver faults (reference_driver/faults.py): the host processes inherit
``DRA_REFERENCE_FAULTS`` from this process while they start.

:class:`WatchedRun` follows a run's output line by line and sends Ctrl-C the way a terminal does (SIGINT to the
run's process group), for tests that interrupt a run in a phase they first observed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conformance_tools.preinstalled import reference_driver  # noqa: F401  (one copy: the tools' deployer)

REPO = Path(__file__).resolve().parents[2]


def start_run(
    local_cluster,
    profile: Path,
    report: Path,
    *extra: str,
    run_args: tuple[str, ...] = ("--no-report", "--workers", "0"),  # serial, as these tests were written
    test_profile: str = "core",
) -> subprocess.Popen:
    """Start `dra-conformance run` against the shared cluster; ``extra`` goes to pytest after ``--``."""
    return _popen(run_command(local_cluster, profile, report, *extra, run_args=run_args, test_profile=test_profile))


def run_command(
    local_cluster,
    profile: Path,
    report: Path,
    *extra: str,
    run_args: tuple[str, ...] = ("--no-report", "--workers", "0"),  # serial, as these tests were written
    test_profile: str = "core",
) -> list[str]:
    """The `dra-conformance run --cluster existing` command line of :func:`start_run`."""
    return [
        sys.executable,
        "-m",
        "conformance.cli",
        "run",
        "--cluster",
        "existing",
        "--kubeconfig",
        str(local_cluster.kubeconfig),
        "--driver",
        str(profile),
        "--profile",
        test_profile,
        "--report-dir",
        str(report),
        *run_args,
        "--",
        *extra,
    ]


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default. A job started in the background of a shell without
    job control inherits SIGINT ignored, and Python then never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _popen(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """The run in a process group of its own (as a shell starts a job), output unbuffered, SIGINT not ignored."""
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,  # noqa: PLW1509 - only a signal disposition, no locks taken
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )


class WatchedRun:
    """A `dra-conformance run` child whose output a thread collects line by line (:attr:`output`).

    Use as a context manager: on exit a run still going is killed (process group), so a failed test leaves no
    run behind."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = _popen(cmd, env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def __enter__(self) -> WatchedRun:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._reader.join(timeout=10)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def run_id(self) -> str:
        """The run ID from the verdict line ('' before the run printed it)."""
        found = re.search(r"\(run (r\d{8}-\d{4}-[0-9a-f]{4}),", self.output)
        return found.group(1) if found else ""

    def wait_until(self, what: str, probe, timeout: float = 300.0):
        """Poll ``probe()`` until it returns something true and return that; AssertionError (with the run's
        output) when the run ends first or after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            found = probe()
            if found:
                return found
            assert self.proc.poll() is None, (
                f"the run ended (exit {self.proc.returncode}) before {what}:\n{self.tail()}"
            )
            assert time.monotonic() < deadline, f"no {what} within {timeout:.0f}s:\n{self.tail()}"
            time.sleep(0.2)

    def ctrl_c(self, within: float | None = 60.0) -> tuple[int, float] | None:
        """Send SIGINT to the run's process group (Ctrl-C in a terminal); with ``within``, :meth:`exit_within`."""
        assert self.proc.poll() is None, f"the run ended (exit {self.proc.returncode}) before Ctrl-C:\n{self.tail()}"
        os.killpg(self.proc.pid, signal.SIGINT)
        return None if within is None else self.exit_within(within)

    def exit_within(self, seconds: float) -> tuple[int, float]:
        """(exit code, seconds waited) once the run ended; AssertionError if it still runs after ``seconds``."""
        start = time.monotonic()
        try:
            code = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run still runs after {seconds:.0f}s:\n{self.tail()}") from None
        took = time.monotonic() - start
        self._reader.join(timeout=10)
        return code, took

    def tail(self, chars: int = 6000) -> str:
        return self.output[-chars:]
