"""The many-object wait (:func:`conformance.k8s.waits.each_until`) and its users, the tracker's teardown and the
session sweep: a phase of N objects costs one LIST and one watch per kind and namespace, not a LIST and a watch
per object (issue 26 §4; the sweep of 100 pods took 110 s at 300 kwok nodes). Same guarantees: bounded, nothing
left, the stuck objects named. Against an in-memory fake API server that counts requests (a fake only inside
unit tests; tests/e2e/test_harness_k8s.py runs the tracker against a real one)."""

from __future__ import annotations

import collections
import time

import pytest

from conformance.core import errors, names, timeouts
from conformance.core.objects import Obj
from conformance.k8s import sweep, waits
from conformance.k8s.tracker import Tracker

PODS = 500


class FakeApi:
    """Objects by (kind, namespace, name). A delete marks the object terminating; it disappears (a DELETED watch
    event) at the next watch of its kind and namespace, unless its name is in ``stuck``. ``calls`` counts
    requests by verb and kind; ``deallocate`` empties the status of claims whose owning pod is gone."""

    def __init__(self, stuck=()):
        self.objects: dict[tuple, dict] = {}
        self.stuck, self.calls, self.rv = set(stuck), collections.Counter(), 1
        self.terminating: set[tuple] = set()
        self.gone_once = False  # answer the first watch with 410 Gone
        self.events: list[tuple] = []  # (type, kind, namespace, object) not yet delivered

    def put(self, raw: dict) -> Obj:
        meta = raw["metadata"]
        meta.setdefault("uid", "u-" + meta["name"])
        self.objects[(raw["kind"], meta.get("namespace", ""), meta["name"])] = raw
        return Obj(raw)

    def create(self, obj):
        self.calls["create"] += 1
        return self.put(dict(obj))

    def get(self, kind, name, namespace=None, version=None):
        self.calls[f"get {kind}"] += 1
        if (kind, namespace or "", name) not in self.objects:
            raise errors.NotFound(404, "NotFound", name)
        return Obj(self.objects[(kind, namespace or "", name)])

    def delete(self, kind, name, namespace=None, **_):
        self.calls[f"delete {kind}"] += 1
        key = (kind, namespace or "", name)
        if key not in self.objects:
            raise errors.NotFound(404, "NotFound", name)
        self.terminating.add(key)

    def list_with_version(self, kind, namespace=None, *, label_selector="", field_selector="", **_):
        self.calls[f"list {kind}"] += 1
        name = field_selector.split("=", 1)[1] if field_selector else None
        label = label_selector.split("=", 1) if "=" in label_selector else None
        found = [
            Obj(raw)
            for (k, ns, n), raw in self.objects.items()
            if k == kind
            and (namespace is None or ns == namespace)
            and (name is None or n == name)
            and (label is None or raw["metadata"].get("labels", {}).get(label[0]) == label[1])
        ]
        return found, str(self.rv)

    def list(self, kind, namespace=None, **kw):
        return self.list_with_version(kind, namespace, **kw)[0]

    def watch(self, kind, namespace=None, **_):
        self.calls[f"watch {kind}"] += 1
        if self.gone_once:
            self.gone_once = False
            raise errors.Gone(410, "Expired", "too old resource version")
        self._progress()
        mine = [e for e in self.events if e[1] == kind and (namespace is None or e[2] == namespace)]
        self.events = [e for e in self.events if e not in mine]
        if not mine:
            time.sleep(0.01)  # a real watch blocks until its timeoutSeconds
        for etype, _kind, _ns, raw in mine:
            yield etype, raw

    def _progress(self):
        """The controllers between two watches: terminating objects go (unless stuck); a generated claim whose
        pod is terminating or gone is deallocated (the resourceclaim controller)."""
        for key in sorted(self.terminating - {k for k in self.terminating if k[2] in self.stuck}):
            self.terminating.discard(key)
            self._event("DELETED", self.objects.pop(key))
        for key, raw in list(self.objects.items()):
            owners = {("Pod", key[1], o["name"]) for o in raw["metadata"].get("ownerReferences") or []}
            if key[0] == "ResourceClaim" and raw.get("status") and owners - (set(self.objects) - self.terminating):
                self.objects[key] = {**raw, "status": {}}
                self._event("MODIFIED", self.objects[key])

    def _event(self, etype, raw):
        self.rv += 1
        meta = {**raw["metadata"], "resourceVersion": str(self.rv)}
        self.events.append((etype, raw["kind"], meta.get("namespace", ""), {**raw, "metadata": meta}))


def _pods_with_claims(api: FakeApi, tracker: Tracker, count: int, ns: str = "ns") -> None:
    for i in range(count):
        tracker.adopt(api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": ns}}))
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": f"p-{i}", "uid": f"u-p-{i}"}]
        meta = {"name": f"p-{i}-gpu", "namespace": ns, "ownerReferences": owner}
        status = {"allocation": {"devices": {"results": [{"device": f"gpu-{i}"}]}}, "reservedFor": [{"name": f"p-{i}"}]}
        api.put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "status": status})


def test_a_teardown_of_n_pods_lists_and_watches_per_namespace_not_per_pod():
    api = FakeApi()
    tracker = Tracker(api, phase_timeout=30)
    _pods_with_claims(api, tracker, PODS)
    started = time.monotonic()
    tracker.cleanup()
    assert time.monotonic() - started < 20
    assert not [k for k in api.objects if k[0] == "Pod"]
    assert api.calls["delete Pod"] == PODS
    # one LIST of the namespace's claims (by owning pod), one LIST + watch for the claims' deallocation, one
    # LIST + watch for the pods: 4-6 requests, not ~4 x 500
    assert api.calls["list ResourceClaim"] == 2 and api.calls["list Pod"] == 1, api.calls
    assert api.calls["watch Pod"] <= 2 and api.calls["watch ResourceClaim"] <= 2, api.calls


def test_stuck_objects_are_named_with_their_last_state_and_the_rest_counted():
    api = FakeApi(stuck={f"p-{i}" for i in range(12)})
    tracker = Tracker(api, phase_timeout=0.5)
    for i in range(20):
        tracker.adopt(api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": "ns"}}))
    with pytest.raises(errors.LeakError) as info:
        tracker.cleanup()
    assert sorted(info.value.survivors) == sorted(f"Pod ns/p-{i}" for i in range(12))
    [problem] = info.value.errors
    assert "waiting for Pod ns/p-0 deleted; Pod ns/p-1 deleted" in problem
    assert "(and 2 more: p-8, p-9)" in problem  # sorted by name: p-0, p-1, p-10, p-11, p-2 ... shown first


def test_one_stuck_object_reads_as_the_single_object_wait():
    api = FakeApi(stuck={"c1"})
    tracker = Tracker(api, phase_timeout=0.3)
    meta = {"name": "c1", "namespace": "ns"}
    tracker.adopt(api.put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta}))
    with pytest.raises(errors.LeakError) as info:
        tracker.cleanup()
    assert info.value.survivors == ["ResourceClaim ns/c1"]
    shown = "s waiting for ResourceClaim ns/c1 deleted\nlast observed state:\nref: ResourceClaim ns/c1"
    assert shown in info.value.errors[0]
    assert api.calls["list ResourceClaim"] == 1  # one name: read with a metadata.name field selector


def test_an_object_replaced_by_another_uid_counts_as_gone_and_410_relists():
    api = FakeApi()
    api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns", "uid": "new"}})
    api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "ns"}})
    api.terminating.add(("Pod", "ns", "b"))
    api.gone_once = True
    uids = {"a": "old", "b": "u-b"}
    last = waits.each_until(
        api,
        "Pod",
        "ns",
        uids,
        done=lambda n, o: o is None or o.uid != uids[n],
        timeout=5,
        awaited=lambda n: f"Pod ns/{n} deleted",
    )
    assert last["a"].uid == "new" and last["b"] is None
    assert api.calls["list Pod"] == 2 and api.calls["watch Pod"] == 2  # 410 Gone: listed again


def test_the_sweep_waits_for_the_run_namespaces_with_one_labelled_list():
    api = FakeApi()
    api.unguarded = lambda: api
    label = {names.RUN_LABEL: names.label_value("r1")}
    for i in range(50):
        api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"t-{i}", "labels": label}})
    sweep.sweep_run(api, "r1")
    assert not api.objects
    assert api.calls["delete Namespace"] == 50
    assert api.calls["list Namespace"] == 2 and api.calls["watch Namespace"] == 1, api.calls  # labelled() + wait


def test_a_namespace_left_by_the_sweep_is_a_leak_naming_it(monkeypatch):
    api = FakeApi(stuck={"t-1"})
    api.unguarded = lambda: api
    monkeypatch.setattr(timeouts, "NAMESPACE_DELETE", 0.5)
    label = {names.RUN_LABEL: names.label_value("r1")}
    for i in range(3):
        api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"t-{i}", "labels": label}})
    with pytest.raises(errors.LeakError) as info:
        sweep.sweep_run(api, "r1")
    assert info.value.survivors == ["Namespace t-1"]
    assert "waiting for Namespace t-1 deleted" in info.value.errors[0]


def test_a_large_phase_sends_its_deletes_several_at_a_time_and_reports_in_order():
    """A DELETE is a round trip (~0.15 s each on the loaded 1,000-node fleet: 30 of the sweep's 52 s); a phase of
    more than DELETE_WORKERS objects has DELETE_WORKERS in flight. Refusals are still reported in LIFO order."""
    import threading  # noqa: PLC0415

    from conformance.k8s import tracker as tracker_mod  # noqa: PLC0415

    class SlowApi(FakeApi):
        in_flight, most, lock = 0, 0, threading.Lock()

        def delete(self, kind, name, namespace=None, **kw):
            with self.lock:
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
            time.sleep(0.02)
            with self.lock:
                self.in_flight -= 1
            if name in ("p-3", "p-30"):
                raise errors.Forbidden(403, "Forbidden", f"cannot delete {name}", request=f"DELETE {name}")
            return super().delete(kind, name, namespace, **kw)

    api = SlowApi()
    tracker = Tracker(api, phase_timeout=30)
    for i in range(64):
        tracker.adopt(api.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}", "namespace": "ns"}}))
    with pytest.raises(errors.LeakError) as info:
        tracker.cleanup()
    assert 1 < api.most <= tracker_mod.DELETE_WORKERS, api.most
    assert info.value.survivors == ["Pod ns/p-30", "Pod ns/p-3"]  # LIFO, whatever order the threads ran in
    assert [e.split(":")[0] for e in info.value.errors] == ["delete Pod ns/p-30", "delete Pod ns/p-3"]
    assert api.calls["delete Pod"] == 62 and not [k for k in api.objects if k[2] not in ("p-3", "p-30")]
