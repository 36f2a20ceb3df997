"""The ``existing`` cluster provider: a cluster the harness did not create, reached through ``--kubeconfig``
(and ``--context``). ``down()`` removes nothing; node access only with the explicit
``--node-access privileged-pod`` opt-in (privileged helper pods, conformance/node/helper_pod.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.core.handles import NodeAccess, ProviderContext
from conformance.k8s import discovery
from conformance.k8s.client import K8s
from conformance.node.helper_pod import HelperPodNodeAccess

DEFAULT_IMAGES = {"busybox": "busybox:1.36"}


@dataclasses.dataclass(frozen=True)
class ExistingNode:
    """A node of a cluster the harness did not create (no host paths)."""

    name: str


@dataclasses.dataclass
class ExistingCluster:
    """Handle of ``--cluster existing``: kubeconfig, version and node names from the API; gates and
    runtime-config unknown (empty); ``images``: what test pods use (busybox from the node's registry)."""

    kubeconfig: Path
    k8s_version: str
    nodes: list[ExistingNode]
    feature_gates: dict[str, bool] = dataclasses.field(default_factory=dict)
    runtime_config: str = ""
    images: dict[str, str] = dataclasses.field(default_factory=lambda: dict(DEFAULT_IMAGES))


class ExistingProvider:
    """Connects to the cluster of ``--kubeconfig``/``--context`` (ClusterHandle Protocol of core/handles.py)."""

    def __init__(self, ctx: ProviderContext) -> None:
        self.ctx = ctx
        self.handle: ExistingCluster | None = None

    def _kubeconfig(self) -> Path:
        return Path(self.ctx.cfg.kubeconfig) if self.ctx.cfg.kubeconfig else Path.home() / ".kube" / "config"

    def up(self) -> ExistingCluster:
        """Read version and nodes. Raises ClusterUnavailable naming the kubeconfig or the server."""
        k8s = K8s.from_kubeconfig(self.ctx.cfg.kubeconfig, self.ctx.cfg.context)
        version = discovery.server_version(k8s)
        self.handle = ExistingCluster(self._kubeconfig(), version, [ExistingNode(n.name) for n in discovery.nodes(k8s)])
        return self.handle

    def down(self) -> None:
        """Nothing: the harness did not create this cluster."""

    def node_access(self, choice: str, owner: bool = True) -> NodeAccess | None:
        """Privileged helper pods for ``privileged-pod`` (started by the owner only); None otherwise."""
        if choice != "privileged-pod" or not owner or self.handle is None:
            return None
        k8s = K8s.from_kubeconfig(self.handle.kubeconfig, self.ctx.cfg.context)
        access = HelperPodNodeAccess(
            k8s,
            [n.name for n in self.handle.nodes],
            self.ctx.cfg.run_id,
            image=self.handle.images.get("busybox", DEFAULT_IMAGES["busybox"]),
        )
        access.start()
        return access

    def state(self) -> dict:
        """``{kubeconfig, k8s_version, nodes}`` for :meth:`attach`."""
        assert self.handle is not None, "state() before up()"
        return {
            "kubeconfig": str(self.handle.kubeconfig),
            "k8s_version": self.handle.k8s_version,
            "nodes": [n.name for n in self.handle.nodes],
        }

    def attach(self, state: Mapping[str, Any]) -> ExistingCluster:
        """The handle of another process of the same run, from :meth:`state`."""
        self.handle = ExistingCluster(
            Path(state["kubeconfig"]),
            str(state.get("k8s_version", "")),
            [ExistingNode(n) for n in state.get("nodes", [])],
        )
        return self.handle
