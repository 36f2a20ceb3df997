"""Restarting a DaemonSet-deployed driver's plugin on one node (issue 24 §3): the node's plugin pod is deleted
and the DaemonSet's replacement awaited Ready (conformance.drivers.daemonset_plugin)."""

from __future__ import annotations

import pytest

from conformance.core import errors
from conformance.core.handles import RemovesDriver, RestartsPlugin
from conformance.core.objects import Obj
from conformance.drivers.daemonset_plugin import DaemonSetDriver, restart_plugin_pods
from tests.harness.test_driver_nodes import PROFILE, daemonset


def pod(name, node, uid, ready=True, owner="plugin"):
    return Obj(
        {
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "drv",
                "uid": uid,
                "ownerReferences": [{"kind": "DaemonSet", "name": owner}],
            },
            "spec": {"nodeName": node},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
        }
    )


class FakeK8s:
    """A DaemonSet controller stand-in: a deleted plugin pod comes back with a new UID (Ready when ``heals``)."""

    def __init__(self, heals=True):
        self.pods = [pod("p-a", "a", "u1"), pod("p-b", "b", "u2"), pod("other", "a", "u3", owner="x")]
        self.heals, self.deleted = heals, []

    def unguarded(self):
        return self

    def list(self, kind, namespace=None, field_selector=""):
        if kind == "DaemonSet":
            return [daemonset(), daemonset("x", volumes=())]
        node = field_selector.split("=")[1]
        return [p for p in self.pods if p.get("spec.nodeName") == node]

    def delete(self, kind, name, namespace=None):
        self.deleted.append(name)
        old = next(p for p in self.pods if p.name == name)
        self.pods.remove(old)
        self.pods.append(pod(f"{name}-new", old.get("spec.nodeName"), f"{old.uid}-new", ready=self.heals))


def test_restart_replaces_only_the_nodes_plugin_pod_and_waits_for_the_new_one():
    k8s = FakeK8s()
    fresh = restart_plugin_pods(k8s, ["drv"], "a", timeout=5)
    assert k8s.deleted == ["p-a"] and [p.name for p in fresh] == ["p-a-new"]
    handle = DaemonSetDriver.of(PROFILE, "helm", daemonset_namespaces=("drv",), k8s=k8s)
    assert isinstance(handle, RestartsPlugin)
    handle.restart_plugin("b")
    assert k8s.deleted == ["p-a", "p-b"]
    with pytest.raises(KeyError, match="'c'"):
        handle.restart_plugin("c")


def test_a_replacement_that_never_gets_ready_names_the_node():
    with pytest.raises(errors.DriverNotReady, match="node a"):
        restart_plugin_pods(FakeK8s(heals=False), ["drv"], "a", timeout=1, driver="gpu.example.com")


class FakeCluster:
    """DaemonSets whose pods vanish with them and come back Ready when they are created again."""

    def __init__(self):
        self.sets = {"plugin": daemonset(), "x": daemonset("x", volumes=())}
        self.created = []

    def unguarded(self):
        return self

    def list(self, kind, namespace=None, field_selector=""):
        if kind == "DaemonSet":
            return list(self.sets.values())
        return [pod(f"{n}-a", "a", f"u-{n}", owner=n) for n in self.sets]

    def delete(self, kind, name, namespace=None):
        assert kind == "DaemonSet"
        self.sets.pop(name)

    def create(self, doc):
        self.created.append(doc)
        ready = {"desiredNumberScheduled": 1, "updatedNumberScheduled": 1, "numberReady": 1}
        self.sets[doc["metadata"]["name"]] = Obj({**doc, "status": {"observedGeneration": 1, **ready}})

    def get(self, kind, name, namespace=None):
        return self.sets[name]


def test_remove_deletes_only_the_plugin_daemonset_and_reinstall_creates_it_again(monkeypatch):
    from conformance.k8s import waits

    monkeypatch.setattr(waits, "object_matches", lambda k8s, ref, pred, **_: pred(k8s.get("DaemonSet", ref.name)))
    k8s = FakeCluster()
    handle = DaemonSetDriver.of(PROFILE, "manifests", daemonset_namespaces=("drv",), k8s=k8s)
    assert isinstance(handle, RemovesDriver)
    handle.remove_driver()
    assert sorted(k8s.sets) == ["x"] and [d["metadata"]["name"] for d in handle.removed] == ["plugin"]
    handle.reinstall_driver()
    assert sorted(k8s.sets) == ["plugin", "x"] and handle.removed == []
    assert set(k8s.created[0]["metadata"]) <= {"name", "namespace", "labels", "annotations"}
    handle.reinstall_driver()  # nothing removed: nothing to do
    assert len(k8s.created) == 1
