"""Unit tests of the tracker's teardown order and leak reporting, against an in-memory fake client
(a fake only inside unit tests; the e2e tests run the tracker against a real API server)."""

import time

import pytest

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.k8s.tracker import Tracker


class FakeK8s:
    def __init__(self, stuck=(), refuse=()):
        self.objects, self.deleted, self.stuck, self.refuse = {}, [], set(stuck), set(refuse)

    def create(self, obj):
        raw = dict(obj.raw if isinstance(obj, Obj) else obj)
        raw["metadata"] = {**raw["metadata"], "uid": "u-" + raw["metadata"]["name"]}
        self.objects[(raw["kind"], raw["metadata"]["name"])] = raw
        return Obj(raw)

    def get(self, kind, name, namespace=None, version=None):
        if (kind, name) not in self.objects:
            raise errors.NotFound(404, "NotFound", name)
        return Obj(self.objects[(kind, name)])

    def delete(self, kind, name, namespace=None, **_):
        if name in self.refuse:
            raise errors.Forbidden(403, "Forbidden", f"cannot delete {name}", request=f"DELETE {name}")
        if (kind, name) not in self.objects:
            raise errors.NotFound(404, "NotFound", name)
        self.deleted.append((kind, name))
        if name not in self.stuck:
            del self.objects[(kind, name)]

    def list_with_version(self, kind, namespace=None, field_selector="", **_):
        name = field_selector.split("=", 1)[1] if field_selector else None
        return [Obj(v) for (k, n), v in self.objects.items() if k == kind and (name is None or n == name)], "1"

    def list(self, kind, namespace=None, **kw):
        return self.list_with_version(kind, namespace, **kw)[0]

    def watch(self, *a, **k):
        return iter(())


def _obj(kind, name, ns="ns"):
    meta = {"name": name, "namespace": ns} if kind != "Namespace" else {"name": name}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def test_cleanup_deletes_in_dra_order_then_lifo():
    k8s = FakeK8s()
    tracker = Tracker(k8s, phase_timeout=1)
    for kind, name in [
        ("Namespace", "ns"),
        ("DeviceClass", "cls"),
        ("ResourceClaimTemplate", "t"),
        ("ResourceClaim", "c1"),
        ("Pod", "p1"),
        ("ResourceClaim", "c2"),
        ("Pod", "p2"),
    ]:
        tracker.create(_obj(kind, name))
    tracker.cleanup()
    assert [n for _, n in k8s.deleted] == ["p2", "p1", "c2", "c1", "t", "cls", "ns"]
    assert tracker.items == []


def test_notfound_is_ignored_and_survivors_raise_one_leak_error():
    k8s = FakeK8s(stuck={"c1"})
    tracker = Tracker(k8s, phase_timeout=0.3)
    tracker.create(_obj("ResourceClaim", "c1"))
    tracker.create(_obj("Pod", "gone-already"))
    del k8s.objects[("Pod", "gone-already")]
    with pytest.raises(errors.LeakError) as info:
        tracker.cleanup()
    assert info.value.survivors == ["ResourceClaim ns/c1"]
    assert "c1 deleted" in str(info.value)


def test_a_refused_delete_is_reported_at_once_not_waited_for():
    k8s = FakeK8s(refuse={"c1", "c2"})
    tracker = Tracker(k8s, phase_timeout=60)
    tracker.create(_obj("ResourceClaim", "c1"))
    tracker.create(_obj("ResourceClaim", "c2"))
    del k8s.objects[("ResourceClaim", "c2")]  # refused, but gone anyway: not a survivor
    started = time.monotonic()
    with pytest.raises(errors.LeakError) as info:
        tracker.cleanup()
    assert time.monotonic() - started < 5  # not the 60 s phase deadline
    assert info.value.survivors == ["ResourceClaim ns/c1"]
    assert any("delete ResourceClaim ns/c1" in e and "Forbidden" in e for e in info.value.errors)


class Prepared:
    """A fake PreparedCheck: claims stay prepared on ``node`` for ``looks`` calls (forever when None)."""

    def __init__(self, k8s, looks=None, node="node-1"):
        self.k8s, self.looks, self.node, self.calls = k8s, looks, node, []

    def __call__(self, claims):
        self.calls.append([c.ref for c in claims])
        self.k8s.deleted.append(("check", "prepared"))
        if self.looks is not None and len(self.calls) > self.looks:
            return []
        return [(c, self.node, f"CDI spec x-{c.uid}.json names its UID") for c in claims]


def test_claims_phase_waits_until_no_node_has_the_claim_prepared():
    k8s = FakeK8s()
    prepared = Prepared(k8s, looks=2)
    tracker = Tracker(k8s, phase_timeout=10, prepared=prepared)
    for kind, name in [("ResourceClaimTemplate", "t"), ("ResourceClaim", "c1"), ("Pod", "p1")]:
        tracker.create(_obj(kind, name))
    tracker.cleanup()
    assert prepared.calls == [["ResourceClaim ns/c1"]] * 3
    assert [n for _, n in k8s.deleted] == ["p1", "c1", "prepared", "prepared", "prepared", "t"]


def test_a_claim_left_prepared_is_a_leak_naming_claim_and_node():
    k8s = FakeK8s()
    tracker = Tracker(k8s, phase_timeout=0.5, prepared=Prepared(k8s))
    tracker.create(_obj("ResourceClaim", "c1"))
    with pytest.raises(errors.LeakError) as info:
        tracker.cleanup()
    assert info.value.survivors == [
        "ResourceClaim ns/c1 still prepared on node node-1 (CDI spec x-u-c1.json names its UID)"
    ]


def test_claims_generated_for_a_pod_are_checked_after_the_pod_is_gone():
    k8s = FakeK8s()
    prepared = Prepared(k8s, looks=0)
    tracker = Tracker(k8s, phase_timeout=5, prepared=prepared)
    tracker.create(_obj("Pod", "p1"))
    generated = _obj("ResourceClaim", "p1-gpu")
    generated["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "p1"}]
    k8s.create(generated)  # made by the resourceclaim controller, not tracked
    tracker.cleanup()
    assert prepared.calls == [["ResourceClaim ns/p1-gpu"]]


def test_without_a_prepared_check_claims_phase_is_unchanged():
    k8s = FakeK8s()
    tracker = Tracker(k8s, phase_timeout=1)
    tracker.create(_obj("ResourceClaim", "c1"))
    tracker.cleanup()
    assert k8s.deleted == [("ResourceClaim", "c1")]
