"""Fake nodes run by kwok beside the real kubelets (local-cluster.md §4.3).

Each fake node carries the annotation ``kwok.x-k8s.io/node=fake`` (kwok runs with
``--manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake``, so it never
takes over a real kubelet's Node) and the taint ``kwok.x-k8s.io/node=fake:NoSchedule`` (keeps DaemonSets,
e.g. a DRA driver, off them). Fake nodes run no kubelet plugin: tests publish their ResourceSlices.
"""

from __future__ import annotations

from conformance.core.errors import ClusterUnavailable
from conformance_lab.local.api import Api

FAKE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
FAKE_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}


def fake_node(name: str) -> dict:
    """The Node object of one fake node (4 CPUs, 16 GiB, 110 pods)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_ANNOTATION[0]: FAKE_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "dra-conformance.test/node": "kwok",
            },
        },
        "spec": {"taints": [FAKE_TAINT]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
            },
        },
    }


def create_fake_nodes(api: Api, cluster: str, count: int) -> list[str]:
    """Create ``count`` fake nodes ``<cluster>-kwok-<i>``; returns their names.
    Raises ClusterUnavailable with the server's answer when a create fails."""
    names = []
    for i in range(count):
        name = f"{cluster}-kwok-{i}"
        status, text = api.request("POST", "/api/v1/nodes", fake_node(name))
        if status not in (201, 409):
            raise ClusterUnavailable(f"creating kwok node {name} failed: {status} {text[:300]}")
        names.append(name)
    return names
