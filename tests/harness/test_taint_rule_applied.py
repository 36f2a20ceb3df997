"""Unit tests: waits.taint_rule_applied retries its canary until the scheduler refuses it, and times out when
every canary gets scheduled (a rule the scheduler ignores)."""

import pytest

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.dra.device_taints import TaintTarget
from conformance.k8s.waits import taints

TARGET = TaintTarget("n1", "n1", "gpu-0", "device.attributes['x'].index == 0", ("gpu-1",), ())


class _Fake:
    def __init__(self):
        self.created, self.deleted = [], []

    def claim(self, selectors):
        return {"kind": "ResourceClaim", "metadata": {"name": f"c{len(self.created)}", "namespace": "ns"}}

    def pod(self, uses, node_name):
        return {"kind": "Pod", "metadata": {"name": f"p{len(self.created)}", "namespace": "ns"}}

    def create(self, obj):
        self.created.append(obj["kind"])
        return Obj(obj)

    def delete(self, kind, name, namespace):
        self.deleted.append((kind, name))


def _patch(monkeypatch, outcomes):
    def unschedulable(k8s, pod, text, *, timeout):
        outcome = outcomes.pop(0) if outcomes else "scheduled"
        if outcome == "scheduled":
            raise errors.WaitFailed("canary", timeout, failed="the pod was scheduled to n1")
        return pod

    monkeypatch.setattr(taints, "pod_unschedulable_with", unschedulable)
    monkeypatch.setattr(taints, "pod_gone", lambda *a, **k: None)
    monkeypatch.setattr(taints, "object_gone", lambda *a, **k: None)


def test_a_canary_scheduled_before_the_rule_is_deleted_and_tried_again(monkeypatch):
    fake = _Fake()
    _patch(monkeypatch, ["scheduled", "refused"])
    pod = taints.taint_rule_applied(fake, fake, fake, TARGET, "cannot allocate all claims", timeout=30)
    assert pod.name == "p3" and fake.created == ["ResourceClaim", "Pod"] * 2
    assert fake.deleted == [("Pod", "p1"), ("ResourceClaim", "c0")]


def test_a_rule_the_scheduler_ignores_times_out(monkeypatch):
    fake = _Fake()
    _patch(monkeypatch, [])
    with pytest.raises(errors.WaitTimeout, match="gpu-0"):
        taints.taint_rule_applied(fake, fake, fake, TARGET, "cannot allocate all claims", timeout=0.05)
