"""The deploy's wait for the driver's ResourceSlices (conformance/drivers/readiness.py ``await_slices``) is not a
test's wait: a run's ``--timeout-scale`` below 1 (the fault matrix's 0.2) does not shorten it, a larger one
lengthens it (s14: the reference plugin's start took more than the 12 s a 0.2 scale left on a loaded host)."""

from __future__ import annotations

import types

import pytest

from conformance.core import timeouts
from conformance.drivers import readiness


@pytest.mark.parametrize(("scale", "first", "grace"), [(0.2, 60.0, 60.0), (1.0, 60.0, 60.0), (2.0, 120.0, 120.0)])
def test_the_slices_wait_of_a_deploy_is_never_shorter_than_unscaled(monkeypatch, scale, first, grace):
    budgets = []

    def published(k8s, driver, *, timeout, **kw):
        budgets.append(timeouts.scaled(timeout))  # what poll() waits
        return []

    monkeypatch.setattr(readiness.waits, "slices_published", published)
    timeouts.set_scale(scale)
    try:
        readiness.await_slices(None, types.SimpleNamespace(driver="d"), ["n1"], timeout=timeouts.SLICES_PUBLISHED)
    finally:
        timeouts.set_scale(1.0)
    assert budgets == pytest.approx([first, grace])
