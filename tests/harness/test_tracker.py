"""Unit tests of the tracker's teardown order and leak reporting, against an in-memory fake client
(a fake only inside unit tests; the e2e tests run the tracker against a real API server)."""
import pytest

from conformance.core import errors
from conformance.k8s.objects import Obj
from conformance.k8s.tracker import Tracker


class FakeK8s:
    def __init__(self, stuck=()):
        self.objects, self.deleted, self.stuck = {}, [], set(stuck)

    def create(self, obj):
        raw = dict(obj.raw if isinstance(obj, Obj) else obj)
        raw["metadata"] = {**raw["metadata"], "uid": "u-" + raw["metadata"]["name"]}
        self.objects[(raw["kind"], raw["metadata"]["name"])] = raw
        return Obj(raw)

    def delete(self, kind, name, namespace=None, **_):
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
    for kind, name in [("Namespace", "ns"), ("DeviceClass", "cls"), ("ResourceClaimTemplate", "t"),
                       ("ResourceClaim", "c1"), ("Pod", "p1"), ("ResourceClaim", "c2"), ("Pod", "p2")]:
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
