"""A driver DaemonSet that never got Ready names its pods not Ready, their nodes and what each node's kubelet holds
as registered (session 13: the kubelet registered the reference driver, its NotifyRegistrationStatus hit the 5 s
deadline and was never resent, and the install only said "DaemonSet ... Ready on its nodes" after 300 s)."""

from __future__ import annotations

from conformance.core import errors
from conformance.core.objects import Obj
from conformance.drivers import readiness

DRIVER = "gpu.dra-conformance.test"


def _pod(name: str, node: str, ready: str) -> Obj:
    status = {"conditions": [{"type": "Ready", "status": ready}]}
    return Obj(
        {"kind": "Pod", "metadata": {"name": name, "namespace": "d"}, "spec": {"nodeName": node}, "status": status}
    )


class _Cluster:
    def __init__(self, pods: list[Obj], fail: bool = False) -> None:
        self.pods, self.fail, self.selectors = pods, fail, []

    def get(self, kind, name, namespace):
        if self.fail:
            raise errors.ApiError(403, "Forbidden", "no")
        return Obj({"kind": kind, "metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": "p"}}}})

    def list(self, kind, namespace, label_selector=""):
        self.selectors.append(label_selector)
        return self.pods


def test_unready_pods_name_their_nodes_and_what_each_kubelet_holds(monkeypatch):
    held = {"n1": {f"/var/lib/kubelet/plugins_registry/{DRIVER}-reg.sock"}, "n2": set(), "n3": None}
    monkeypatch.setattr(readiness, "registered_sockets", lambda k8s, nodes: {n: held[n] for n in nodes})
    k8s = _Cluster([_pod("ok", "n0", "True"), _pod("a", "n1", "False"), _pod("b", "n2", "False"), _pod("c", "n3", "")])
    text = readiness.unready_pods(k8s, DRIVER, "d", "plugin")
    assert k8s.selectors == ["app=p"], k8s.selectors
    assert text.splitlines() == [
        "pods not Ready:",
        f"  pod a on node n1 not Ready; its kubelet holds as registered: ['{next(iter(held['n1']))}']",
        "  pod b on node n2 not Ready; its kubelet holds no socket naming the driver",
        "  pod c on node n3 not Ready; its kubelet's metrics are unreadable",
    ], text
    assert readiness.unready_pods(_Cluster([_pod("ok", "n0", "True")]), DRIVER, "d", "plugin") == ""
    assert readiness.unready_pods(_Cluster([], fail=True), DRIVER, "d", "plugin") == ""  # unreadable: nothing said
