"""The cluster-provider contract the harness codes against (design.md §1, §2).

A provider (``local``, ``kind``, ``existing``) has ``up() -> ClusterHandle`` and an idempotent ``down()``.
The handle carries what the driver deployer and the suites need: the admin kubeconfig, the exact
Kubernetes version, the nodes with the host paths of their kubelet (plugin registry, plugins dir,
PodResources socket) and CDI directory, the feature gates and runtime-config that were set.
Pattern: kubernetes-sigs/e2e-framework ``support.E2EClusterProvider`` (Create/Destroy/KubeconfigFile).
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class NodeInfo(Protocol):
    """One real kubelet node as seen from the host (paths are host paths; None where not reachable)."""

    name: str
    ip: str
    kubelet_root_dir: Path
    plugin_registry_dir: Path
    plugins_dir: Path
    pod_resources_socket: Path
    cdi_dir: Path


@runtime_checkable
class ClusterHandle(Protocol):
    """A running cluster.

    kubeconfig: admin kubeconfig (system:masters); k8s_version: exact tag (``v1.34.4``);
    nodes: the real kubelet nodes; feature_gates: gate name -> value passed to every component
    (empty for clusters whose gates are unknown); runtime_config: the apiserver ``--runtime-config``;
    images: logical name (``busybox``, ``pause``) -> image reference present on every node.
    """

    kubeconfig: Path
    k8s_version: str
    nodes: list
    feature_gates: dict[str, bool]
    runtime_config: str
    images: dict[str, str]


@runtime_checkable
class ClusterProvider(Protocol):
    """Brings a cluster up and down. ``up()`` raises ClusterUnavailable (after cleaning up) on failure;
    ``down()`` is idempotent and leaves nothing behind that ``up()`` created."""

    def up(self) -> ClusterHandle: ...

    def down(self) -> None: ...
