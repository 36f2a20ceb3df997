"""The ``local`` cluster provider of a conformance run: a fresh local cluster with a name and slot of its own
(ports, subnets), so runs coexist with each other and with the project's e2e cluster.

Slots: 0 is the e2e cluster, 1 its lifecycle tests, 2..9 conformance runs (each cluster's network, its
kube-proxies included, lives in namespaces of its own: netns.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.core import errors
from conformance.core.handles import NodeAccess, ProviderContext
from conformance_lab.local.cluster import LocalCluster
from conformance_lab.local.config import LocalClusterConfig
from conformance_lab.local.handle import LocalClusterHandle
from conformance_lab.local.node_access import LocalNodeAccess
from conformance_lab.local.state import SlotTaken, existing_clusters, slots_in_use

POD_DEPLOY_MODES = frozenset({"helm", "manifests"})  # drivers run as DaemonSet pods: nodes get daemonset_paths
FIRST_SLOT = 2  # first slot for conformance runs (0: the e2e cluster, 1: its lifecycle tests)
LAST_SLOT = 9


def cluster_name(run_id: str) -> str:
    """``c<last 4 hex of the run ID>``: unique per run and short, because kubelet plugin sockets live under
    the cluster directory and unix socket paths are limited (gRPC refuses paths over 105 bytes)."""
    return "c" + run_id.rsplit("-", 1)[-1][-4:]


def free_slot(first: int = FIRST_SLOT, exclude: str = "") -> int:
    """The lowest slot in ``first``..:data:`LAST_SLOT` no local cluster on this host uses (``first``: 2 for a
    conformance run, 0 for ``cluster up``; ``exclude``: a cluster name whose stale record does not count).
    Raises ClusterUnavailable naming the clusters and their slots when all are taken."""
    others = existing_clusters()
    used = set(slots_in_use(exclude=exclude))
    free = [s for s in range(first, LAST_SLOT + 1) if s not in used]
    if not free:
        raise errors.ClusterUnavailable(
            f"no free local cluster slot: clusters {others} use slots "
            f"{sorted(used)}; stop one with `dra-conformance cluster down`"
        )
    return free[0]


class LocalProvider:
    """Brings up a local cluster for one run (``--nodes``, ``--k8s-version``, ``--feature-gates``); logs go
    to ``<report dir>/cluster-logs``. Node access reads the nodes' host paths. Deploy modes that run the
    plugin as DaemonSet pods (:data:`POD_DEPLOY_MODES`) get nodes with ``daemonset_paths``."""

    def __init__(self, ctx: ProviderContext) -> None:
        self.ctx = ctx
        self.cluster: LocalCluster | None = None
        self.handle: LocalClusterHandle | None = None

    def up(self) -> LocalClusterHandle:
        """Allocate a slot, start the cluster. Raises ClusterUnavailable (after cleaning up) or ConfigError.
        Two runs starting at once may choose the same free slot; the cluster records its slot under the host
        lock, so the later one gets SlotTaken before starting anything and tries the next free slot."""
        for _attempt in range(LAST_SLOT - FIRST_SLOT + 1):
            try:
                return self._up_in(free_slot())
            except SlotTaken as exc:
                self.ctx.progress(f"{exc}: choosing another slot")
        raise errors.ClusterUnavailable("no free local cluster slot: every slot was taken while choosing one")

    def _up_in(self, slot: int) -> LocalClusterHandle:
        cfg = self.ctx.cfg
        self.cluster = LocalCluster(
            LocalClusterConfig(
                name=cluster_name(cfg.run_id),
                nodes=cfg.nodes,
                kwok_nodes=0,
                k8s_version=cfg.k8s_version,
                feature_gates=cfg.feature_gates,
                log_dir=self.ctx.report_dir / "cluster-logs",
                slot=slot,
                kube_proxy=None,
                daemonset_paths=self.ctx.deploy_mode in POD_DEPLOY_MODES,
                nri=self.ctx.nri,
            ),
            self.ctx.progress,
        )
        self.ctx.progress(f"starting local cluster ({cfg.nodes} node(s), gates {cfg.feature_gates})")
        self.handle = self.cluster.up()
        return self.handle

    def down(self) -> None:
        """Stop the cluster this provider started (idempotent; nothing when attached in a worker)."""
        if self.cluster is not None:
            self.cluster.down()
            self.cluster = None

    def node_access(self, choice: str, owner: bool = True) -> NodeAccess | None:
        """Host-path node access (every choice but ``none``)."""
        if choice == "none" or self.handle is None:
            return None
        return LocalNodeAccess(self.handle)

    def state(self) -> dict:
        """``{"name": cluster name}`` for :meth:`attach`."""
        assert self.handle is not None, "state() before up()"
        return {"name": self.handle.name}

    def attach(self, state: Mapping[str, Any]) -> LocalClusterHandle:
        """The running cluster ``state["name"]`` (another process of the same run). Raises ClusterUnavailable
        when it is not running."""
        handle = LocalCluster.load(state["name"]).handle
        if handle is None:
            raise errors.ClusterUnavailable(f"local cluster {state['name']} is not running")
        self.handle = handle
        return handle
