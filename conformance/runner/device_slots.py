"""Device slots: the shards of every node's devices that sharded tests take under xdist (issue 26 §1).

The run's shard plan (:func:`conformance.dra.shards.plan`) splits the devices into as many shards as the node
with the fewest devices has (:func:`conformance.dra.shards.slot_count`): each shard, a *slot*, holds at least one
device on every node. A test marked ``shard_devices(n)`` takes ``n`` slots for the whole of its run (a lock
file per slot in the report dir, ``fcntl.flock`` exclusive) and the CEL selector of those slots goes on every
request of the claims it builds. So the number of tests starting pods side by side follows the devices, not the
workers: on 8 GPUs per node, up to eight 1-device tests or four 2-device tests at once, as workers allow.

Deadlock: a test first tries every free slot without waiting (from a place that depends on its worker, so
workers spread); only when too few are free does it give them back and wait for a fixed set in ascending slot
order. Waiters always wait in ascending order and a holder of every slot it needs waits for nothing more here,
so no cycle of waiters can form.

A worker that dies mid-test (xdist starts a replacement) drops its flocks, but its pods may still hold the
slot's devices. So a holder marks each slot it takes (``.dra-slot-<i>.held``, its PID) and removes the mark
before giving the slot back: a slot locked with its mark still present was left by a dead holder and is
*poisoned*, never taken again in this run by a sharded test (every worker sees the mark). A test whose teardown
failed (a pod stuck terminating, a claim still allocated) gives its slots back poisoned too (breaker s17 F2).
The controller removes the files of an earlier run in the report dir when the run starts. A file that cannot be
created or written (a full report disk) leaves the test unsharded, never ends the run (breaker s17 F1).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

SLOT_LOCK = ".dra-slot-{}.lock"
SLOT_MARK = ".dra-slot-{}.held"


class DeviceSlots:
    """The slot locks of one run in ``folder`` (the report dir) for one process. ``usable``: the slot indices
    the plan offers (:attr:`conformance.dra.shards.ShardPlan.usable`). :attr:`held`: the slots this process
    holds now (sorted). :attr:`queued_s`: seconds spent waiting for slots (monotonic total)."""

    def __init__(self, folder: Path, usable) -> None:
        self.folder = Path(folder)
        self.usable = tuple(sorted(usable))
        self.poisoned: set[int] = set()
        self.queued_s = 0.0
        self._fds: dict[int, int] = {}

    @property
    def held(self) -> list[int]:
        return sorted(self._fds)

    def _lock(self, index: int, wait: bool) -> bool:
        fd = os.open(self.folder / SLOT_LOCK.format(index), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fds[index] = fd
        return True

    def take(self, need: int, start: int = 0) -> list[int] | None:
        """Take ``need`` (>= 1) slots, preferring those from the ``start``-th usable one on; blocks until they are
        free. Returns the sorted slot indices, or None when fewer than ``need`` usable slots are left (the test
        then holds the device lock alone). Marks each slot taken (module docstring, *poisoned*)."""
        try:
            return self._take(need, start)
        except OSError:  # ENOSPC, EROFS: the test holds the device lock alone instead
            self.give_back()
            return None

    def _take(self, need: int, start: int) -> list[int] | None:
        while True:
            live = [i for i in self.usable if i not in self.poisoned]
            if len(live) < need:
                return None
            k = start % len(live)
            order = live[k:] + live[:k]
            for index in order:
                if len(self._fds) < need:
                    self._lock(index, wait=False)
            if len(self._fds) < need:
                self.give_back()
                began = time.monotonic()
                try:
                    for index in sorted(order[:need]):
                        self._lock(index, wait=True)
                except BaseException:
                    self.give_back()
                    raise
                finally:
                    self.queued_s += time.monotonic() - began
            left = [i for i in self._fds if (self.folder / SLOT_MARK.format(i)).exists()]
            if not left:
                for index in self._fds:
                    (self.folder / SLOT_MARK.format(index)).write_text(str(os.getpid()))
                return self.held
            self.poisoned.update(left)
            for index in left:  # keep the marks: every process learns the slot is poisoned
                os.close(self._fds.pop(index))
            self.give_back()

    def give_back(self, poison: bool = False) -> None:
        """Release every slot this process holds, its marks removed first (``poison``: kept, so no sharded test
        takes those slots again: the test's devices may still be held); no-op when it holds none."""
        for index, fd in sorted(self._fds.items()):
            if poison:
                self.poisoned.add(index)
            else:
                try:
                    (self.folder / SLOT_MARK.format(index)).unlink(missing_ok=True)
                except OSError:
                    self.poisoned.add(index)
            os.close(fd)
        self._fds.clear()


def files(folder: Path) -> list[Path]:
    """The slot lock and mark files in ``folder`` (for removal when the run ends)."""
    folder = Path(folder)
    return sorted(folder.glob(".dra-slot-*.lock")) + sorted(folder.glob(".dra-slot-*.held"))
