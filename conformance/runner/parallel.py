"""Running the suites on pytest-xdist workers with the outcomes of a serial run (``dra-conformance run
--workers N``; the runner adds ``--dist loadgroup``).

Tests share one cluster and one driver, so two kinds of conflict exist, and each has a lock in the report dir
(``fcntl.flock``, held by the worker process that runs the test, from its setup to the end of its teardown):

* **cluster-exclusive tests** -- those in the xdist group ``dra-cluster-state`` (the plugin puts disruptive
  tests and those requiring a capability of ``SERIAL_CAPS`` there: kubelet/plugin restarts, DeviceTaintRules,
  fault injection; suites put whole-node tests there) -- take the *run lock* exclusively; every other test
  takes it shared. So an exclusive test never overlaps any other test, as in a serial run; the group keeps
  them on one worker, one after another. (``flock`` lets new shared holders in while an exclusive one
  waits, so in practice the exclusive tests run once the others are done.)
* **tests that start pods** take the *device lock* (exclusive) right before their first Pod is created
  (:attr:`conformance.k8s.tracker.Tracker.before_create`) until their teardown ends: the driver's devices
  are few (4 per node on the reference driver) and a test's outcome may depend on which are free (a
  prioritized list falls back when its first choice does not fit, PodResources lists every pod of a node).
  Tests that only talk to the API server (most of api_v1) run beside them and beside each other.

Locks are taken in one order (run lock, then device lock) and an exclusive holder never asks for the
device lock, so they cannot deadlock. Outside xdist nothing is locked. Seconds spent waiting for a lock are
counted (:attr:`RunLocks.queued_s`) and shown apart from the test's own time in the run's timings.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

EXCLUSIVE_GROUP = "dra-cluster-state"
RUN_LOCK, DEVICE_LOCK = ".dra-run-tests.lock", ".dra-devices.lock"
DEVICE_KINDS = frozenset({"Pod"})  # creating one of these may take devices from another test


def is_exclusive(item) -> bool:
    """Whether ``item`` is in the xdist group of tests that need the cluster to themselves."""
    return any(
        (m.args[0] if m.args else m.kwargs.get("name")) == EXCLUSIVE_GROUP for m in item.iter_markers("xdist_group")
    )


class RunLocks:
    """The two locks of one run in ``folder`` (the report dir, shared by every worker). One per process.
    :attr:`queued_s`: seconds this process has waited for them (monotonic total)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.queued_s = 0.0
        self.queued_before_s = 0.0  # seconds the current test waited for the run lock (before its setup)
        self._run_fd: int | None = None
        self._device_fd: int | None = None
        self._exclusive = False
        self.kind = ""  # what the current test holds: "exclusive", "devices" or "shared" ("" outside a test)
        self.devices_at = 0.0  # epoch seconds when the current test got the device lock (0: it has not)

    def _take(self, name: str, mode: int) -> int:
        fd = os.open(self.folder / name, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        try:
            fcntl.flock(fd, mode)
        except BaseException:
            os.close(fd)
            raise
        self.queued_s += time.monotonic() - start
        return fd

    def begin(self, exclusive: bool) -> None:
        """Before a test's setup: take the run lock (exclusive or shared); blocks until granted."""
        self.end()
        self._exclusive = exclusive
        before = self.queued_s
        self._run_fd = self._take(RUN_LOCK, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        self.queued_before_s = self.queued_s - before
        self.kind, self.devices_at = ("exclusive" if exclusive else "shared"), 0.0

    def need_devices(self) -> None:
        """Before the test creates an object that may take devices: take the device lock once per test
        (no-op when the test holds the run lock exclusively, or outside :meth:`begin`/:meth:`end`)."""
        if self._run_fd is None or self._exclusive or self._device_fd is not None:
            return
        self._device_fd = self._take(DEVICE_LOCK, fcntl.LOCK_EX)
        self.kind, self.devices_at = "devices", time.time()

    def end(self) -> None:
        """After a test's teardown: release the device lock, then the run lock (closing drops the flock)."""
        for attr in ("_device_fd", "_run_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                setattr(self, attr, None)
                os.close(fd)
        self._exclusive = False


LOCKS = pytest.StashKey[RunLocks]()


class ParallelGuard:
    """The pytest glue on an xdist worker: each test runs inside :meth:`RunLocks.begin` / :meth:`RunLocks.end`."""

    def __init__(self, locks: RunLocks) -> None:
        self.locks = locks

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.locks.begin(is_exclusive(item))
        try:
            return (yield)
        finally:
            self.locks.end()


class LockFilesCleanup:
    """The pytest glue in the controller (or the only process): remove the lock files when the run ends."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def pytest_sessionfinish(self, session):
        for name in (RUN_LOCK, DEVICE_LOCK):
            (self.folder / name).unlink(missing_ok=True)


def register(config, report_dir: Path) -> None:
    """On an xdist worker, register the guard and keep the locks on ``config.stash`` (for :func:`guard`); in
    the controller, the removal of the lock files at the end."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(LockFilesCleanup(report_dir), "dra_conformance_parallel_cleanup")
        return
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    config.stash[LOCKS] = locks = RunLocks(report_dir)
    config.pluginmanager.register(ParallelGuard(locks), "dra_conformance_parallel")


def guard(config, tracker) -> None:
    """Make ``tracker`` take the device lock before it creates a Pod (only on an xdist worker)."""
    locks = config.stash.get(LOCKS, None)
    if locks is None:
        return

    def before(obj) -> None:
        if obj.get("kind") in DEVICE_KINDS:  # an Obj or a plain dict
            locks.need_devices()

    tracker.before_create.append(before)
