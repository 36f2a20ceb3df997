"""Unit test: waits.prepare_failed returns the newest FailedPrepareDynamicResources event of the pod, and ends
early (WaitFailed, not a timeout) when the pod runs instead (the claim was prepared although it must not be)."""

import pytest

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s.waits import pods

POD_DICT = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
POD = Obj(POD_DICT)


class FakeK8s:
    """``get`` answers the pod in ``phase``."""

    def __init__(self, phase: str) -> None:
        self.phase = phase

    def get(self, kind, name, namespace):
        return Obj({**POD_DICT, "status": {"phase": self.phase}})


def _event(message: str) -> Obj:
    return Obj({"kind": "Event", "reason": pods.PREPARE_FAILED, "message": message})


def test_returns_the_newest_prepare_failure(monkeypatch):
    events = [_event("old"), _event("NodePrepareResources failed for ResourceClaim c: bad config")]
    monkeypatch.setattr(pods, "events_for", lambda k8s, obj, reason: events)
    assert pods.prepare_failed(FakeK8s("Pending"), POD, timeout=1).get("message").endswith("bad config")


def test_a_running_pod_ends_the_wait_early(monkeypatch):
    monkeypatch.setattr(pods, "events_for", lambda k8s, obj, reason: [])
    monkeypatch.setattr(pods, "recent_events", lambda k8s, ns, name: [])
    with pytest.raises(errors.WaitFailed, match="the pod is Running: the driver prepared its claims"):
        pods.prepare_failed(FakeK8s("Running"), POD, timeout=5)
