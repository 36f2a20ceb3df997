"""Unit tests: when the device taint eviction controller evicted a pod, against the rule's timeAdded +
tolerationSeconds (conformance.dra.device_taints.eviction_delay), and the wait for its DisruptionTarget condition
(waits.pod_evicted_by_taint)."""

import pytest

from conformance.core import timeouts
from conformance.core.objects import Obj
from conformance.dra import device_taints
from conformance.k8s.waits import taints

RULE = Obj(
    {"kind": "DeviceTaintRule", "metadata": {"name": "r"}, "spec": {"taint": {"timeAdded": "2026-01-01T00:00:10Z"}}}
)


def _pod(when=None, reason=device_taints.EVICTION_REASON, deleting=False):
    conds = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    if when:
        conds.append({"type": "DisruptionTarget", "status": "True", "reason": reason, "lastTransitionTime": when})
    meta = {"name": "p", "namespace": "ns", **({"deletionTimestamp": "2026-01-01T00:01:00Z"} if deleting else {})}
    return Obj({"kind": "Pod", "metadata": meta, "status": {"conditions": conds}})


@pytest.mark.parametrize(
    ("when", "late"),
    [
        ("2026-01-01T00:00:40Z", 0),
        ("2026-01-01T00:00:39Z", -1),
        ("2026-01-01T00:02:40Z", 120),
        ("2026-01-01T00:00:45.7Z", 5),
    ],
)
def test_delay_is_the_condition_time_minus_time_added_plus_toleration(when, late):
    got, evidence = device_taints.eviction_delay(RULE, _pod(when), 30)
    assert got == late
    assert "2026-01-01T00:00:10Z" in evidence and when in evidence and "2026-01-01T00:00:40+00:00" in evidence


def test_missing_time_added_or_condition_is_named():
    with pytest.raises(LookupError, match="timeAdded"):
        device_taints.eviction_delay(Obj({"metadata": {"name": "r"}, "spec": {"taint": {}}}), _pod("x"), 30)
    with pytest.raises(LookupError, match="DeletionByDeviceTaintManager"):
        device_taints.eviction_delay(RULE, _pod("2026-01-01T00:00:40Z", reason="DeletionByTaintManager"), 30)
    with pytest.raises(ValueError, match="unparsable"):
        device_taints.eviction_delay(RULE, _pod("soon"), 30)


def test_wait_ends_on_the_condition_and_fails_on_another_deletion(monkeypatch):
    seen = {}
    monkeypatch.setattr(taints, "until", lambda *a, **kw: seen.update(kw) or "pod")
    assert taints.pod_evicted_by_taint(None, _pod(), after=40, timeout=30) == "pod"
    done, failed = seen["done"], seen["failed"]
    assert seen["scale"] is False and seen["timeout"] == 40 + timeouts.scaled(30)
    assert not done(_pod()) and done(_pod("2026-01-01T00:00:40Z"))
    assert failed(_pod(), []) is None and failed(_pod("2026-01-01T00:00:40Z", deleting=True), []) is None
    assert "deleted without" in failed(None, []) and "being deleted without" in failed(_pod(deleting=True), [])
