"""Expected driver nodes (issue 24 §2): DaemonSet placement (nodeSelector, required node affinity, taints and
tolerations), the sources of :func:`conformance.drivers.driver_nodes.expected_nodes` (host processes,
DaemonSets, a fallback to the slices), the mismatch message naming the missing node, and ``multi_node``
requiring set equality."""

from __future__ import annotations

from conformance.core import capabilities, errors, selection
from conformance.core.objects import Obj
from conformance.dra.placement import daemonset_nodes, places_pod, runs_kubelet_plugin
from conformance.drivers.driver_nodes import ExpectedNodes, expected_nodes
from tests.harness.test_selection import PROFILE, _facts

REGISTRY = {"name": "reg", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}}


def node(name, labels=None, taints=()):
    return Obj({"kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": list(taints)}})


def daemonset(name="plugin", ns="drv", volumes=(REGISTRY,), desired=2, ready=None, **pod):
    spec = {"volumes": list(volumes), "containers": [{"name": "p", "args": ["--driver=gpu.example.com"]}], **pod}
    return Obj(
        {
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"template": {"spec": spec}},
            "status": {"desiredNumberScheduled": desired, "numberReady": desired if ready is None else ready},
        }
    )


NOSCHED = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}


def test_placement_follows_node_selector_affinity_and_taints():
    gpu, cpu, tainted = node("a", {"gpu": "yes"}), node("b"), node("c", {"gpu": "yes"}, [NOSCHED])
    assert daemonset_nodes([daemonset()], [gpu, cpu, tainted]) == ["a", "b"]
    assert daemonset_nodes([daemonset(nodeSelector={"gpu": "yes"})], [gpu, cpu, tainted]) == ["a"]
    tolerating = daemonset(tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert daemonset_nodes([tolerating], [gpu, cpu, tainted]) == ["a", "b", "c"]
    term = {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    assert daemonset_nodes([daemonset(affinity=affinity)], [gpu, cpu]) == ["a"]
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a"]}]}
    by_name_affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [by_name]}}
    }
    assert daemonset_nodes([daemonset(affinity=by_name_affinity)], [gpu, cpu]) == ["b"]
    not_ready = node("d", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])
    assert places_pod(daemonset(), not_ready), "the DaemonSet controller tolerates not-ready itself"
    assert not runs_kubelet_plugin(daemonset(volumes=())) and runs_kubelet_plugin(daemonset())


class FakeK8s:
    def __init__(self, daemonsets=(), nodes=(), slices=(), error=None):
        self.objects = {"DaemonSet": list(daemonsets), "Node": list(nodes), "ResourceSlice": list(slices)}
        self.error, self.calls = error, []

    def list(self, kind, namespace=None, **_):
        self.calls.append((kind, namespace))
        if self.error and kind == "DaemonSet":
            raise self.error
        return [o for o in self.objects[kind] if namespace is None or o.namespace == namespace]

    def get(self, kind, name, namespace=None, **_):
        self.calls.append((kind, name))
        return next(o for o in self.objects[kind] if o.name == name and o.namespace == namespace)


class Handle:
    name = "gpu.example.com"

    def __init__(self, processes=None, namespaces=()):
        self.processes, self.daemonset_namespaces = processes or {}, namespaces


def _slice(node_name):
    return Obj(
        {
            "kind": "ResourceSlice",
            "metadata": {"name": f"s-{node_name}"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
    )


def test_expected_nodes_come_from_the_deployment_not_the_slices():
    nodes = [node("n0"), node("n1")]
    hosted = expected_nodes(FakeK8s(), Handle(processes={"n1": None, "n0": None}))
    assert hosted.names == ("n0", "n1") and hosted.known
    k8s = FakeK8s([daemonset(), daemonset("other", volumes=())], nodes, [_slice("n0")])
    found = expected_nodes(k8s, Handle(namespaces=("drv",)))
    assert found.names == ("n0", "n1") and "drv/plugin" in found.source and "other" not in found.source
    other_driver = daemonset("net", ns="kube-system", nodeSelector={"nic": "yes"})
    other_driver.raw["spec"]["template"]["spec"]["containers"][0]["args"] = ["--driver=net.example.com"]
    k8s = FakeK8s(
        [daemonset(ns="kube-system", desired=1, nodeSelector={"gpu": "yes"}), other_driver],
        [*nodes, node("g", {"gpu": "yes"})],
    )
    preinstalled = expected_nodes(k8s, Handle())
    assert preinstalled.names == ("g",) and ("DaemonSet", None) in k8s.calls and "net" not in preinstalled.source
    forbidden = errors.ApiError(403, "Forbidden", "daemonsets.apps is forbidden")
    fallback = expected_nodes(FakeK8s(nodes=nodes, slices=[_slice("n0")], error=forbidden), Handle())
    assert fallback.names == ("n0",) and not fallback.known and "forbidden" in fallback.source


def test_mismatch_names_the_missing_and_the_unexpected_node():
    expected = ExpectedNodes(("n0", "n1"), "nodes DaemonSet drv/plugin places a pod on")
    assert expected.mismatch({"n0": 4, "n1": 4, "<all nodes>": 2}, "devices") is None
    missing = expected.mismatch({"n0": 4, "n1": 0}, "devices")
    assert "no devices on node(s) ['n1']" in missing and "drv/plugin" in missing
    assert "['n2'] it was not deployed to" in expected.mismatch(["n0", "n1", "n2"], "devices")
    assert expected.as_dict() == {"nodes": ["n0", "n1"], "source": expected.source, "known": True, "problems": []}


def test_multi_node_requires_the_expected_nodes_to_publish():
    facts = {**_facts(), "expected_nodes": {"nodes": ["a", "b", "c"], "source": "DaemonSet drv/plugin"}}
    caps = capabilities.evaluate(facts, PROFILE)
    assert caps.items["multi_node"].broken and "differing: ['c']" in caps.evidence("multi_node")
    decision = selection.decide(["standard"], ["multi_node"], "standard", caps)
    assert decision.action == "fail" and "['c']" in decision.reason
    equal = capabilities.evaluate({**facts, "expected_nodes": {"nodes": ["a", "b"], "source": "x"}}, PROFILE)
    assert equal.has("multi_node") and not equal.items["multi_node"].broken
    one = capabilities.evaluate({**facts, "expected_nodes": {"nodes": ["a"], "source": "x"}}, PROFILE)
    assert not one.has("multi_node") and not one.items["multi_node"].broken


def test_unknown_expected_nodes_fail_instead_of_comparing_the_slices_with_themselves():
    """Breaker finding 2: DaemonSets the run may not list (or none naming the driver) no longer pass
    KEP5970-1/-2, the smoke test and multi_node by comparing the slices' nodes with themselves; the profile's
    ``deploy.node_selector`` names them instead."""
    nodes, forbidden = [node("n0"), node("n1", {"gpu": "yes"})], errors.ApiError(403, "Forbidden", "forbidden")
    fallback = expected_nodes(FakeK8s(nodes=nodes, slices=[_slice("n0")], error=forbidden), Handle())
    message = fallback.mismatch({"n0": 4}, "devices")
    assert message.startswith("expected driver nodes unknown: DaemonSets unreadable"), message
    assert "list daemonsets" in message and "deploy.node_selector" in message, message
    named = Handle()
    named.profile = type("P", (), {"deploy": {"mode": "preinstalled", "node_selector": {"gpu": "yes"}}})()
    chosen = expected_nodes(FakeK8s(nodes=nodes, slices=[_slice("n0")], error=forbidden), named)
    assert chosen.known and chosen.names == ("n1",) and "node_selector" in chosen.source, chosen
    assert "no devices on node(s) ['n1']" in chosen.mismatch({"n0": 4}, "devices")
    every = expected_nodes(FakeK8s(nodes=nodes, error=forbidden), Handle(), named={})
    assert every.names == ("n0", "n1") and every.mismatch({"n0": 1, "n1": 1}, "devices") is None
    try:
        expected_nodes(FakeK8s(nodes=nodes, error=forbidden), Handle(), named={"gpu": True})
        raise AssertionError("a non-string label value was accepted")
    except errors.ConfigError as exc:
        assert "deploy.node_selector" in str(exc)
    facts = {**_facts(), "expected_nodes": {"nodes": ["a", "b"], "source": "slices", "known": False}}
    caps = capabilities.evaluate(facts, PROFILE)
    assert caps.items["multi_node"].broken and "unknown" in caps.evidence("multi_node")


def test_a_daemonset_not_ready_where_it_should_run_is_named(monkeypatch):
    """Breaker finding 2: a plugin pod crash-looping on one node (numberReady < desiredNumberScheduled), or a
    desiredNumberScheduled that differs from the computed placement, fails the comparison with the slices even
    when every node still shows devices; a DaemonSet that becomes ready within the wait passes."""
    from conformance.core import timeouts  # noqa: PLC0415

    monkeypatch.setattr(timeouts, "PLUGIN_REGISTRATION", 0.2)
    nodes = [node("n0"), node("n1")]
    k8s = FakeK8s([daemonset(ready=1)], nodes)
    crashing = expected_nodes(k8s, Handle(namespaces=("drv",)))
    message = crashing.mismatch({"n0": 4, "n1": 4}, "devices")
    assert message and "drv/plugin: status.numberReady 1, desiredNumberScheduled 2" in message, message
    assert ("DaemonSet", "plugin") in k8s.calls, "the status was re-read before it was reported"
    misplaced = expected_nodes(FakeK8s([daemonset(desired=3)], nodes), Handle(namespaces=("drv",)))
    assert "nodes its placement computes 2" in misplaced.mismatch({"n0": 4, "n1": 4}, "devices")
    settling = FakeK8s([daemonset(ready=1)], nodes)
    settling.get = lambda *a, **k: daemonset()  # ready on the next read
    assert expected_nodes(settling, Handle(namespaces=("drv",))).mismatch({"n0": 4, "n1": 4}, "devices") is None


def test_an_unrelated_csi_daemonset_in_the_namespace_is_not_the_drivers(monkeypatch):
    """Breaker s10 finding 5: a helm/manifests deploy into a namespace that also holds a CSI node plugin (it
    mounts the plugin registry too, runs on every node and is not ready): only the DaemonSet naming the driver
    gives the expected nodes and is checked for readiness; with no DaemonSet naming the driver, every plugin
    DaemonSet of the namespace still counts (a driver whose name is built into its image), and the source says so."""
    monkeypatch.setattr("conformance.drivers.driver_nodes.waits.poll", lambda *a, **k: False)
    nodes = [node("g0", {"gpu": "yes"}), node("g1", {"gpu": "yes"}), node("cpu")]
    gpu = daemonset(ns="kube-system", nodeSelector={"gpu": "yes"})
    csi = daemonset("ebs-csi-node", ns="kube-system", desired=3, ready=2)
    csi.raw["spec"]["template"]["spec"]["containers"][0]["args"] = ["--csi-address=/csi/csi.sock"]
    k8s = FakeK8s([gpu, csi], nodes, [_slice("g0"), _slice("g1")])
    found = expected_nodes(k8s, Handle(namespaces=("kube-system",)))
    assert found.names == ("g0", "g1") and found.problems == (), found
    assert "ebs-csi-node" not in found.source and "naming the driver" in found.source
    assert found.mismatch({"g0": 4, "g1": 4}, "devices") is None
    anonymous = daemonset(ns="kube-system", nodeSelector={"gpu": "yes"})
    anonymous.raw["spec"]["template"]["spec"]["containers"][0]["args"] = []
    k8s = FakeK8s([anonymous, csi], nodes, [_slice("g0"), _slice("g1")])
    both = expected_nodes(k8s, Handle(namespaces=("kube-system",)))
    assert both.names == ("cpu", "g0", "g1") and "none names the driver" in both.source
    assert any("ebs-csi-node" in p for p in both.problems), both.problems
