"""Running the suites on pytest-xdist workers with the outcomes of a serial run (``dra-conformance run
--workers N``; the runner adds ``--dist loadgroup``).

Tests share one cluster and one driver, so two kinds of conflict exist, and each has a lock in the report dir
(``fcntl.flock``, held by the worker process that runs the test, from its setup to the end of its teardown):

* **cluster-exclusive tests** -- those in the xdist group ``dra-cluster-state`` (the plugin puts disruptive
  tests and those requiring a capability of ``SERIAL_CAPS`` there: kubelet/plugin restarts, DeviceTaintRules,
  fault injection; suites put whole-node tests there) -- take the *run lock* exclusively; every other test
  takes it shared. So an exclusive test never overlaps any other test, as in a serial run; the group keeps
  them on one worker, one after another. Every test waits for the run lock through a *turnstile* (held
  exclusively by an exclusive waiter), so once an exclusive test waits no new test starts (``flock`` alone
  would let new shared holders in ahead of it), and a worker whose next test is exclusive too keeps the run
  lock: the group runs as one block, not one quiet moment per test.
* **tests that start pods** take the *device lock* (exclusive) right before their first Pod is created
  (:attr:`conformance.k8s.tracker.Tracker.before_create`) until their teardown ends: the driver's devices
  are few (8 per node on the reference driver) and a test's outcome may depend on which are free (a
  prioritized list falls back when its first choice does not fit, PodResources lists every pod of a node).
  Tests that only talk to the API server (most of api_v1) run beside them and beside each other. It too is
  taken through a turnstile: once a test waits for it exclusively, no test in a device shard takes it shared
  before that test had its turn (without it, sharded tests overlapping one another kept it from ever being
  free: s17, a test queued 117 s).

* **device shards** (issue 26 §1): a test marked ``shard_devices(n)`` (its outcome depends only on ``n``
  devices per node of its own) takes ``n`` device slots (:mod:`conformance.runner.device_slots`: one per
  device of the smallest node, :mod:`conformance.dra.shards`), their CEL selector goes on every request of its
  claims (the Builder adds it), and it takes the device lock *shared*: sharded tests run beside each other, on
  disjoint devices, and never beside a test holding it exclusively (which sees every device free, as in a
  serial run). A test needing more slots than are usable, or run where no shard plan exists, takes it
  exclusively as before. A sharded test that creates a claim without the shard selector, or a Pod asking for
  extended resources (KEP-5004: any device), fails with :class:`ShardError` instead of racing.

* **order** (issue 26 §1): :mod:`conformance.runner.run_order` (the block, the tests outside device shards,
  the sharded tests, and the gate between the last two). A ``long_window`` test also waits before its run lock
  until the block has begun (the file :data:`BLOCK_BEGUN`, at most :data:`BLOCK_WAIT_S`), so it never starts
  first and delays the block by its whole window.

Locks are taken in one order (run turnstile and run lock, then device slots, then device turnstile and device
lock; the gate before all of them holds nothing), slots are waited for in ascending order, and an exclusive
holder never asks for the device lock, so they cannot deadlock. Outside xdist nothing is locked. Seconds spent
waiting for a lock are counted (:attr:`RunLocks.queued_s`) and shown apart from the test's own time in the run's
timings.

pytest-xdist 3.8 under pytest 9 groups nothing by itself: its ``loadgroup`` suffixes ``item._nodeid``, which
pytest 9 no longer reads. :class:`GroupIds` sends the suffixed node IDs (``<id>@<group>``, what the
``loadgroup`` scheduler splits on) to the controller and restores the plain IDs right after, so reports,
evidence and fault expectations keep the test's own node ID.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.core.errors import ConformanceError
from conformance.dra import shards
from conformance.runner import device_slots
from conformance.runner.device_slots import DeviceSlots
from conformance.runner.run_order import (
    EXCLUSIVE_GROUP,
    GATE_FILE,
    SHARD_MARK,
    WINDOW_MARK,
    Gate,
    is_exclusive,
    ordered,
)

__all__ = ["EXCLUSIVE_GROUP", "SHARD_MARK", "WINDOW_MARK", "is_exclusive"]  # re-exported: callers read them here
RUN_LOCK, DEVICE_LOCK = ".dra-run-tests.lock", ".dra-devices.lock"
TURNSTILE = ".dra-run-turnstile.lock"  # held while waiting for the run lock: an exclusive waiter goes first
DEVICE_TURNSTILE = ".dra-device-turnstile.lock"  # the same for the device lock
DEVICE_KINDS = frozenset({"Pod"})  # creating one of these may take devices from another test
CLAIM_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
BLOCK_BEGUN = ".dra-exclusive-begun"  # created by the worker running the cluster-exclusive block once it holds it
BLOCK_WAIT_S = 120.0  # seconds a long_window test waits for the block to begin (then it goes on: timing only)
SHARD = pytest.StashKey[str]()  # the test's shard selector ("" when it holds the device lock exclusively)


class ShardError(ConformanceError):
    """A sharded test created an object that could take devices outside its shard."""


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
        self.kind = ""  # what the current test holds: "exclusive", "devices", "shard" or "shared" ("" outside)
        self.devices_at = 0.0  # epoch seconds when the current test got the device lock (0: it has not)
        self.devices_until = 0.0  # epoch seconds when it gave the device lock back mid-test (0: at its end)
        self.shard = ""  # the current test's shard selector ("": none, the device lock is taken exclusively)
        self.slots: list[int] = []  # the device slots the current test took (its shard; kept after release)
        self.released = False  # a sharded test gave its slots back mid-test (release_devices)
        self.device_slots: DeviceSlots | None = None  # set by the guard once the run's shard plan exists

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

    def begin(self, exclusive: bool, shard: str = "") -> None:
        """Before a test's setup: take the run lock (exclusive or shared); blocks until granted. ``shard``: the
        test's shard selector (its device lock will be shared; ignored for an exclusive test). The wait goes
        through the turnstile (exclusive for an exclusive test), so once an exclusive test waits, no other
        test starts: it waits only for the running ones. An exclusive test after one that kept the run lock
        (:meth:`end` with ``keep``) starts at once."""
        if not (exclusive and self._exclusive and self._run_fd is not None):
            self.end()
            before = self.queued_s
            turn = self._take(TURNSTILE, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                self._run_fd = self._take(RUN_LOCK, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            finally:
                os.close(turn)
            self.queued_before_s = self.queued_s - before
        else:
            self.queued_before_s = 0.0
        if exclusive:
            (self.folder / BLOCK_BEGUN).touch()
        self._exclusive = exclusive
        self.shard = "" if exclusive else shard
        self.kind, self.devices_at, self.devices_until = ("exclusive" if exclusive else "shared"), 0.0, 0.0

    def take_slots(self, plan: shards.ShardPlan, need: int, start: int) -> None:
        """After :meth:`begin` of a test needing ``need`` devices per node in a shard: take that many device
        slots of ``plan`` (:class:`~conformance.runner.device_slots.DeviceSlots`; blocks until free, counted in
        :attr:`queued_s`) and make their selector the test's shard. Left unsharded (the device lock taken
        exclusively) when too few slots are usable."""
        if self._exclusive or self.device_slots is None or need < 1:
            return
        before = self.device_slots.queued_s
        taken = self.device_slots.take(need, start)
        waited = self.device_slots.queued_s - before
        self.queued_s += waited
        self.queued_before_s += waited
        if taken:
            self.slots, self.shard = taken, plan.selector_of(taken)

    def _give_slots_back(self, poison: bool = False) -> None:
        if self.device_slots is not None:
            self.device_slots.give_back(poison)

    def need_devices(self) -> None:
        """Before the test creates an object that may take devices: take the device lock once per test, through
        the device turnstile (module docstring) (no-op when the test holds the run lock exclusively, or outside
        :meth:`begin`/:meth:`end`)."""
        if self._run_fd is None or self._exclusive or self._device_fd is not None:
            return
        mode = fcntl.LOCK_SH if self.shard else fcntl.LOCK_EX
        turn = self._take(DEVICE_TURNSTILE, mode)
        try:
            self._device_fd = self._take(DEVICE_LOCK, mode)
        finally:
            os.close(turn)
        self.kind, self.devices_at, self.devices_until = ("shard" if self.shard else "devices"), time.time(), 0.0

    def release_devices(self) -> None:
        """The current test holds no device any more (its pods and claims are deleted and unprepared:
        :meth:`conformance.k8s.tracker.Tracker.release_devices`): give the device lock back, keeping the run
        lock, so tests that need every device run beside the rest of it (a fixed observation window).
        :attr:`devices_until` records when (the overlap check ends this test's device time there). A Pod it
        creates after this takes the lock again; a sharded test gives its device slots back too and may create no
        further claim or Pod (:class:`ShardError`)."""
        if self._device_fd is None or self._exclusive:
            return
        fd, self._device_fd = self._device_fd, None
        self.devices_until = time.time()  # before the lock is free: the next holder's devices_at comes after
        os.close(fd)
        self.released = bool(self.slots)
        self._give_slots_back()

    def end(self, keep: bool = False, poison: bool = False) -> None:
        """After a test's teardown: release the device slots, the device lock, then the run lock (closing drops
        the flock). ``keep``: an exclusive test whose worker runs another exclusive test next keeps the run lock,
        so the ``dra-cluster-state`` group runs as one block instead of waiting for a quiet moment per test.
        ``poison``: the teardown failed, the slots may still hold the test's devices (never taken again)."""
        self._give_slots_back(poison)
        self.slots, self.released = [], False
        for attr in ("_device_fd",) if (keep and self._exclusive) else ("_device_fd", "_run_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                setattr(self, attr, None)
                os.close(fd)
        if not (keep and self._exclusive):
            self._exclusive = False
        self.shard = ""


LOCKS = pytest.StashKey[RunLocks]()


class ParallelGuard:
    """The pytest glue on an xdist worker: each test runs inside :meth:`RunLocks.begin` / :meth:`RunLocks.end`,
    sharded (:data:`SHARD` on the item) when it is marked ``shard_devices(n)`` and ``n`` device slots of the run's
    shard plan are usable (it then holds them: :meth:`RunLocks.take_slots`). ``devices``: a callable returning
    ``(driver name, the devices the run discovered)`` (``facts["devices"]``) or None before the session exists."""

    def __init__(self, locks: RunLocks, worker: int, workers: int, devices: Callable[[], tuple | None]) -> None:
        self.locks, self.worker, self.workers, self.devices = locks, worker, workers, devices
        self._plan: shards.ShardPlan | None | bool = False  # False: not made yet
        self.exclusive_ahead = False  # the collection holds cluster-exclusive tests (they run as the first block)
        self.gate = Gate(locks.folder)
        self.teardown_failed = False  # the current test's teardown failed (its slots are given back poisoned)

    def plan(self) -> shards.ShardPlan | None:
        """The run's shard plan (one slot per device of the node with the fewest: :func:`shards.slot_count`),
        made once from the discovered devices; the same on every worker."""
        if self._plan is False:
            found = self.devices()
            if found is None:
                return None
            devices = list(found[1])
            self._plan = shards.plan(found[0], devices, shards.slot_count(devices))
            if self._plan:
                self.locks.device_slots = DeviceSlots(self.locks.folder, self._plan.usable)
        return self._plan or None

    def need(self, item) -> int:
        """Device slots ``item`` takes (its ``shard_devices(n)``), 0 when it holds the device lock exclusively
        (unmarked, cluster-exclusive, no plan, or fewer usable slots than it needs)."""
        mark = item.get_closest_marker(SHARD_MARK)
        if mark is None or is_exclusive(item):
            return 0
        need = int(mark.args[0]) if mark.args else 1
        plan = self.plan()
        return need if plan is not None and len(plan.usable) >= need else 0

    @pytest.hookimpl(trylast=True)  # after the plugin's groups and every deselection
    def pytest_collection_modifyitems(self, items):
        """Order the items (module docstring, *order*): a stable sort, the same on every worker."""
        items[:] = ordered(items)
        self.gate.count(items)
        self.exclusive_ahead = any(is_exclusive(item) for item in items)

    def wait_for_block(self, item) -> None:
        """Before a ``long_window`` test's run lock: wait (0.2 s polls, at most :data:`BLOCK_WAIT_S`) until the
        cluster-exclusive block has begun, when the run has one."""
        if not self.exclusive_ahead or item.get_closest_marker(WINDOW_MARK) is None or is_exclusive(item):
            return
        deadline = time.monotonic() + BLOCK_WAIT_S
        while not (self.locks.folder / BLOCK_BEGUN).exists() and time.monotonic() < deadline:
            time.sleep(0.2)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        need = self.need(item)
        self.wait_for_block(item)
        before = self.gate.waited_s
        self.gate.wait(item)
        self.locks.begin(is_exclusive(item))
        self.locks.queued_s += self.gate.waited_s - before
        self.locks.queued_before_s += self.gate.waited_s - before
        self.teardown_failed = False
        try:
            if need:
                self.locks.take_slots(self.plan(), need, self.worker * need)
            item.stash[SHARD] = self.locks.shard
            return (yield)
        finally:
            self.locks.end(keep=nextitem is not None and is_exclusive(nextitem), poison=self.teardown_failed)
            self.gate.finished(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.when == "teardown" and report.failed:
            self.teardown_failed = True  # e.g. LeakError: a pod stuck terminating may hold the slots' devices
        return report


class GroupIds:
    """On an xdist worker with ``--dist loadgroup``: the node IDs sent to the controller carry the test's
    xdist group (``<id>@<group>``, names sorted and joined by ``_`` as xdist does), for the collection
    message only."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_finish(self, session):
        from _pytest.nodeid import coerce_node_id  # noqa: PLC0415 - pytest >= 9: the node ID object

        plain = {}
        for item in session.items:
            names = sorted(
                {
                    str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")
                }
            )
            if names and hasattr(item, "_id") and "@" not in item.nodeid:
                plain[item] = item._id
                item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")
        try:
            return (yield)
        finally:
            for item, node_id in plain.items():
                item._id = node_id


class LockFilesCleanup:
    """The pytest glue in the controller (or the only process): remove the lock files when the run starts (those
    of a run killed in this report dir: its slot marks would poison every slot, its gate file open the gate;
    breaker s17 F3) and when it ends."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def remove(self) -> None:
        for name in (RUN_LOCK, DEVICE_LOCK, TURNSTILE, DEVICE_TURNSTILE, BLOCK_BEGUN, GATE_FILE):
            (self.folder / name).unlink(missing_ok=True)
        for path in device_slots.files(self.folder):
            path.unlink(missing_ok=True)

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
    def pytest_sessionstart(self, session):
        self.remove()

    def pytest_sessionfinish(self, session):
        self.remove()


def register(config, report_dir: Path, devices: Callable[[], tuple | None] = lambda: None) -> None:
    """On an xdist worker, register the guard (``devices``: see :class:`ParallelGuard`), the group IDs under
    ``--dist loadgroup``, and keep the locks on ``config.stash`` (for :func:`guard`); in the controller, the
    removal of the lock files at the end."""
    worker = getattr(config, "workerinput", None)
    if worker is None:
        config.pluginmanager.register(LockFilesCleanup(report_dir), "dra_conformance_parallel_cleanup")
        return
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    config.stash[LOCKS] = locks = RunLocks(report_dir)
    index, count = int(str(worker.get("workerid", "gw0"))[2:] or 0), int(worker.get("workercount", 1))
    config.pluginmanager.register(ParallelGuard(locks, index, count, devices), "dra_conformance_parallel")
    if config.getvalue("loadgroup"):
        config.pluginmanager.register(GroupIds(), "dra_conformance_group_ids")


def shard_selector(item) -> str:
    """The CEL selector of ``item``'s device shard ("" when it is not sharded, or outside xdist)."""
    return item.stash.get(SHARD, "")


def guard(config, tracker) -> None:
    """Make ``tracker`` take the device lock before it creates a Pod, and give it back when the test releases its
    devices mid-test (``tracker.release_devices()``) (only on an xdist worker); in a sharded
    test, raise :class:`ShardError` before it creates a claim outside its shard or a Pod asking for extended
    resources (the test must then not be marked ``shard_devices``)."""
    locks = config.stash.get(LOCKS, None)
    if locks is None:
        return

    def before(obj) -> None:
        kind, shard = obj.get("kind"), locks.shard
        name = obj.get("metadata", {}).get("name")
        if locks.released and kind in CLAIM_KINDS | DEVICE_KINDS:
            raise ShardError(
                f"{kind} {name}: created after the test gave its device slots back (tracker.release_devices()); "
                "create every claim and Pod before that"
            )
        unscoped = shards.unscoped_requests(obj, shard) if shard and kind in CLAIM_KINDS else []
        if unscoped:
            raise ShardError(
                f"{kind} {name}: requests {unscoped} lack the test's device shard selector {shard!r}; build claims "
                f"with the `builder` fixture, or drop the test's {SHARD_MARK} mark so it holds the device lock alone"
            )
        extended = shards.extended_resources(obj) if shard and kind == "Pod" else []
        if extended:
            raise ShardError(
                f"Pod {name} asks for extended resources {extended}, which may take any device; drop the test's "
                f"{SHARD_MARK} mark so it holds the device lock alone"
            )
        if kind in DEVICE_KINDS:  # an Obj or a plain dict
            locks.need_devices()

    tracker.before_create.append(before)
    tracker.after_release.append(locks.release_devices)
