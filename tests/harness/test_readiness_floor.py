"""The deploy's wait for the driver's ResourceSlices (conformance/drivers/readiness.py ``await_slices``) is not a
test's wait: a run's ``--timeout-scale`` below 1 (the fault matrix's 0.2) does not shorten it, a larger one
lengthens it (s14: the reference plugin's start took more than the 12 s a 0.2 scale left on a loaded host)."""

from __future__ import annotations

import types

import pytest

from conformance.core import errors, timeouts
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


class _Slices:
    """A K8s double that lists ResourceSlices: one per node, pool = node, ``resourceSliceCount`` ``count``."""

    def __init__(self, nodes, count):
        from conformance.core.objects import Obj

        self.items = [
            Obj(
                {
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{n}-slice", "uid": n},
                    "spec": {
                        "driver": "d",
                        "nodeName": n,
                        "pool": {"name": n, "generation": 1, "resourceSliceCount": count},
                        "devices": [{"name": "gpu-0"}],
                    },
                }
            )
            for n in nodes
        ]

    def list(self, kind, **kw):
        return list(self.items)


def test_a_pool_that_never_looks_complete_is_not_a_publication(monkeypatch):
    """Fault wrong-slice-count: every node has a slice, but each pool says resourceSliceCount 2. The deploy must
    refuse the driver naming the incomplete pools, never hand the suites a driver with no complete pool (s14: the
    deploy went through and KEP5970 tests crashed with KeyError)."""
    monkeypatch.setattr(timeouts, "SLICES_PUBLISHED", 0.6)
    with pytest.raises(errors.DriverNotReady) as exc:
        readiness.await_slices(_Slices(["n1", "n2"], 2), types.SimpleNamespace(driver="d"), ["n1", "n2"], timeout=0.6)
    text = str(exc.value)
    assert "pool n1: incomplete, 1 slice(s) of generation 1 but resourceSliceCount 2" in text, text
    assert "pool n2: incomplete" in text, text


def test_complete_pools_on_some_nodes_deploy_and_the_suites_name_the_others(monkeypatch):
    """A complete pool on n1 and none on n2: deployed (KEP5970-1/-2 then fail naming n2, issue 24 §2)."""
    monkeypatch.setattr(timeouts, "SLICES_PUBLISHED", 0.6)
    got = readiness.await_slices(_Slices(["n1"], 1), types.SimpleNamespace(driver="d"), ["n1", "n2"], timeout=0.6)
    assert [s.name for s in got] == ["n1-slice"]


@pytest.mark.parametrize(("scale", "waited"), [(0.2, 60.0), (0.5, 60.0), (1.0, 120.0), (2.0, 240.0)])
def test_the_wait_for_the_kubelets_slice_wipe_is_never_shorter_than_its_fixed_delay(monkeypatch, scale, waited):
    """The kubelet wipes an uninstalled driver's slices 30 s after it unregistered (defaultWipingDelay, not
    scaled): the uninstall test's wait keeps that plus 30 s at the matrix's 0.2 scale (s15: 24 s, a healthy
    uninstall failed), a larger scale lengthens it; the timeout names the seconds waited."""
    from conformance.k8s.waits import slices

    budgets = []

    def poll(check, *, timeout, interval, scale=True):
        budgets.append(timeouts.scaled(timeout) if scale else timeout)
        return check()

    monkeypatch.setattr(slices, "poll", poll)
    timeouts.set_scale(scale)
    try:
        with pytest.raises(errors.WaitTimeout, match=f"timed out after {waited:.0f}s .*no ResourceSlice of driver d"):
            slices.slices_gone(_Slices(["n1"], 1), "d", timeout=timeouts.SLICES_WIPED)
    finally:
        timeouts.set_scale(1.0)
    assert budgets == pytest.approx([waited])
