"""How long this process has spent waiting on the cluster: wall seconds inside :func:`~.core.until` and
:func:`~.core.poll` (and so inside every named wait built on them, and :func:`~.core.stays_equal`).

Only the outermost wait of a thread counts (a wait inside a wait, such as ``until``'s reconnect pause, is
not counted twice). Threads that wait at the same time each add their own seconds, so the total can exceed
the wall time. Read by the run's timings (:mod:`conformance.runner.timings`): the seconds a test waited are
the difference of :func:`total` before and after it, in the process that ran it.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

_lock = threading.Lock()
_local = threading.local()
_done = [0.0]  # seconds of the outermost waits that have ended (every thread of this process)
_running: dict[int, float] = {}  # thread id -> monotonic start of its outermost wait in progress


def total() -> float:
    """Seconds this process has waited on the cluster so far (outermost waits ended or still running)."""
    with _lock:
        now = time.monotonic()
        return _done[0] + sum(now - s for s in _running.values())


def timed(fn: F) -> F:
    """Decorate a wait function so that its wall time counts in :func:`total` (outermost call only)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        depth = getattr(_local, "depth", 0)
        _local.depth = depth + 1
        if depth == 0:
            with _lock:
                _running[threading.get_ident()] = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            _local.depth = depth
            if depth == 0:
                with _lock:
                    _done[0] += time.monotonic() - _running.pop(threading.get_ident())

    return wrapper  # type: ignore[return-value]
