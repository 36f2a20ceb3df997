"""Unit test: waits.device_health_stays (HLTH-02's neighbour check, s10 breaker finding 8) names the pod, the
reason and the devices when one of the pod's devices leaves the awaited health; passes while all keep it."""

import pytest

from conformance.core.objects import Obj
from conformance.k8s.waits import health

POD = Obj({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}})


def _pod(*healths, phase="Running"):
    resources = [{"resourceID": f"vendor/gpu=d{i}", "health": h} for i, h in enumerate(healths)]
    status = {"name": "ctr", "allocatedResourcesStatus": [{"name": "claim:c", "resources": resources}]}
    return Obj({**POD.raw, "status": {"phase": phase, "containerStatuses": [status]}})


def _stays_over(states):
    """A stand-in for waits.core.stays that shows ``failed`` each state in turn (AssertionError on the first
    failure, the last state when none fails)."""

    def stays(k8s, kind, name, namespace, *, failed, duration, awaited):
        for obj in states:
            if why := failed(obj, []):
                raise AssertionError(why)
        return states[-1]

    return stays


def test_a_neighbour_device_turning_unhealthy_is_named(monkeypatch):
    monkeypatch.setattr(health, "stays", _stays_over([_pod("Healthy"), _pod("Unhealthy")]))
    with pytest.raises(AssertionError) as info:
        health.device_health_stays(None, POD, "Healthy", duration=5, why=" while only device gpu-0 was turned")
    assert str(info.value) == (
        "pod ns/p: device(s) no longer Healthy while only device gpu-0 was turned: {'vendor/gpu=d0': 'Unhealthy'}"
    )


def test_devices_keeping_their_health_pass_and_an_ended_pod_fails(monkeypatch):
    monkeypatch.setattr(health, "stays", _stays_over([_pod("Healthy", "Healthy")] * 3))
    statuses = health.device_health_stays(None, POD, "Healthy", duration=5)
    assert [r["health"] for s in statuses for r in s["resources"]] == ["Healthy", "Healthy"]
    monkeypatch.setattr(health, "stays", _stays_over([_pod("Healthy", phase="Failed")]))
    with pytest.raises(AssertionError, match=r"the pod ended \(Failed\)"):
        health.device_health_stays(None, POD, "Healthy", duration=5)
