"""Bounded "consistently" checks: call a function repeatedly for a duration and require the same answer.

Source: upstream test/e2e ``gomega.Consistently`` windows (20 s control plane, 60 s node; feature-catalog §7).
Belongs in: conformance/k8s/waits/core.py.
"""
from __future__ import annotations

import time
from typing import Callable, TypeVar

from conformance.core import timeouts

T = TypeVar("T")


def stays_equal(fetch: Callable[[], T], *, duration: float, interval: float = 2.0) -> T:
    """Call ``fetch`` every ``interval`` seconds for ``duration`` (scaled) seconds; return the first answer.

    Raises AssertionError showing the first and the differing answer as soon as one differs.
    """
    first = fetch()
    deadline = time.monotonic() + timeouts.scaled(duration)
    while time.monotonic() < deadline:
        time.sleep(interval)
        again = fetch()
        if again != first:
            raise AssertionError(f"answer changed within {duration:.0f}s:\nfirst: {first!r}\nlater: {again!r}")
    return first
