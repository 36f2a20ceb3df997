"""The order of a parallel run's tests and the gate between its two kinds of pod-starting tests (issue 26 §1).

On every worker the collection is sorted the same way (xdist requires one collection; its ``loadgroup``
scheduler hands the work out in that order, a few tests ahead per worker):

1. the cluster-exclusive block (the ``dra-cluster-state`` xdist group: one work unit, it starts the run);
2. the tests outside device shards: those starting pods hold the device lock alone, one after another, and the
   API-only ones fill in beside them; their ``long_window`` tests last, so the tests xdist queues behind a
   long window on its worker are sharded ones, which may wait (s17: a test holding every device, queued behind
   the 60 s no-churn window, ran after it);
3. the sharded tests, ``long_window`` ones (the 60 s no-churn window, a consistently-pending window, the
   kubelet's restart back-off) spread among the first of them, one every :data:`SPREAD` tests, so they start
   early on different workers and no long test starts last or queued behind another (s17: two queued behind
   the 60 s window ended the run 40 s late).

The *gate*: a sharded test waits before its run lock until every test of rank 1 (:func:`rank`: outside device
shards, not ``long_window``) has finished (:class:`Gate`, a line per finished test in a file of the report
dir). Without it a sharded test that started in a pause between two tests holding every device kept the next
one waiting for its whole window (s17: 20 s). The gate only orders; the locks keep the outcomes right, so it
opens for good on this worker once no such test finished for :data:`GATE_IDLE_S` (a crashed worker's unfinished
test, ``-x`` on another worker, tests xdist never hands out), when this worker's session is stopping, or when
its file cannot be written or read (a full report disk: the run goes on, the gate never ends it): it costs that
much once at most.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

EXCLUSIVE_GROUP = "dra-cluster-state"
SHARD_MARK = "shard_devices"
WINDOW_MARK = "long_window"
GATE_FILE = ".dra-first-kind-done"  # a line per finished test of rank 1
GATE_IDLE_S = 60.0  # seconds without a finished test of rank 1 after which the gate stays open (timing only)
SPREAD = 3  # xdist's loadgroup keeps up to 3 tests pending per worker: one long window in every 3 sharded tests


def is_exclusive(item) -> bool:
    """Whether ``item`` is in the xdist group of tests that need the cluster to themselves."""
    return any(
        (m.args[0] if m.args else m.kwargs.get("name")) == EXCLUSIVE_GROUP for m in item.iter_markers("xdist_group")
    )


def rank(item) -> int:
    """``item``'s kind in the run (module docstring): 0 the block, 1 outside shards, 2 their long windows, 3
    sharded long windows, 4 the other sharded tests (:func:`ordered` spreads 3 among 4)."""
    if is_exclusive(item):
        return 0
    window = item.get_closest_marker(WINDOW_MARK) is not None
    if item.get_closest_marker(SHARD_MARK) is None:
        return 2 if window else 1
    return 3 if window else 4


def ordered(items) -> list:
    """``items`` in run order (module docstring): sorted by :func:`rank` (stable: as collected within a rank),
    then the sharded ``long_window`` tests spread among the others, one every :data:`SPREAD`."""
    items = sorted(items, key=rank)
    head = [i for i in items if rank(i) < 3]
    windows, rest = [i for i in items if rank(i) == 3], [i for i in items if rank(i) == 4]
    out = []
    for window in windows:
        out += [window] + rest[: SPREAD - 1]
        rest = rest[SPREAD - 1 :]
    return head + out + rest


class Gate:
    """The gate of one run in ``folder`` (the report dir) for one worker process."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / GATE_FILE
        self.before = 0  # how many tests of rank 1 the collection holds
        self.waited_s = 0.0
        self.open = False  # set once a wait ran out or the session stops: no further wait on this worker

    def count(self, items) -> None:
        """Count the tests of rank 1 in the (sorted, final) collection ``items``."""
        self.before = sum(1 for item in items if rank(item) == 1)

    def finished(self, item) -> None:
        """After ``item`` ran (passed, failed or skipped): one line when it is of rank 1 (an append of a few
        bytes: atomic between processes)."""
        if rank(item) != 1:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, b".\n")
            finally:
                os.close(fd)
        except OSError:  # ENOSPC: the gate is only an order, never a reason to end the run
            self.open = True

    def done(self) -> int:
        """Tests of rank 1 finished so far, all workers (-1 when the file cannot be read)."""
        try:
            return self.path.read_bytes().count(b"\n")
        except FileNotFoundError:
            return 0
        except OSError:
            return -1

    def wait(self, item) -> None:
        """Before a sharded ``item``'s run lock: wait (0.2 s polls) until every test of rank 1 has finished, or
        the gate opens (module docstring); no wait for other tests, nor once the gate is :attr:`open`."""
        if rank(item) < 3 or self.before == 0 or self.open:
            return
        start = last = time.monotonic()
        seen = self.done()
        session = getattr(item, "session", None)
        while 0 <= seen < self.before:
            stopping = getattr(session, "shouldstop", False) or getattr(session, "shouldfail", False)
            if stopping or time.monotonic() - last >= GATE_IDLE_S:
                break
            time.sleep(0.2)
            now = self.done()
            if now != seen:
                seen, last = now, time.monotonic()
        self.open = self.open or seen < self.before
        self.waited_s += time.monotonic() - start
